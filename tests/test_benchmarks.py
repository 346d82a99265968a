"""Smoke run of benchmarks/latency.py at tiny sizes, so the script cannot rot. No speed asserts."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "latency.py"


def run_script(tmp_path: Path) -> tuple[str, dict]:
    out = tmp_path / "latency.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "40,20", "--turns", "4", "--queries", "5",
         "--home", str(tmp_path / "home"), "--json", str(out)],
        capture_output=True, text=True, timeout=240, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def test_latency_script_reports_every_figure(tmp_path):
    stdout, result = run_script(tmp_path)

    assert "memories" in stdout and "total wall time" in stdout
    assert "keyword-only" not in result["embedder"]
    assert result["machine"]["cpus"] >= 1 and result["versions"]["chromadb"]
    assert [size["memories"] for size in result["sizes"]] == [20, 40]
    for size in result["sizes"]:
        fill, prefetch, sync = size["fill"], size["prefetch_ms"], size["sync_turn_ms"]
        assert fill["drained"] and fill["indexed_per_s"] > 0 and fill["embed_s"] > 0
        assert prefetch["n"] == 5 and prefetch["nonempty"] >= 1
        assert 0 < prefetch["p50"] <= prefetch["p95"] <= prefetch["max"]
        assert sync["n"] == 4 and 0 < sync["p50"] <= sync["p99"] <= sync["max"]
        assert size["disk"]["db_mib"] > 0 and size["disk"]["chroma_mib"] > 0
        assert size["peak_rss_mib"] > 0
    assert result["total_wall_s"] > 0

    with closing(sqlite3.connect(tmp_path / "home" / "cmms" / "cmms.db")) as db:
        # filled up to 40, plus two bursts of 4 turns (2 memories each)
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 48
        assert db.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0
