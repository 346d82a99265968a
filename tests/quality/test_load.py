"""Load through both doors at once (benchmarks/load.py, shorter): 8 writers and 8 readers, half
through the Hermes provider in a worker process, half through real MCP sessions to an HTTP
bridge subprocess, all on one store; then the store is read in SQL. Runs on whichever backend
the pass uses (CMMS_LOAD_SECONDS sets the duration, default 8 s: over a hundred writes and as
many reads, each operation dozens of times)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("CMMS_LOAD_SECONDS", "8"))
pytestmark = [pytest.mark.store, pytest.mark.slow]


def _harness():
    spec = importlib.util.spec_from_file_location("cmms_load_benchmark", REPO / "benchmarks" / "load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_acknowledged_write_is_lost_doubled_or_seen_from_another_scope(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")  # keyword-only: the load is on SQL, not on the model
    summary = _harness().run_load(home, SECONDS)

    assert summary["errors"] == {}, summary["errors"]
    assert summary["attempted"] >= 40 and summary["acknowledged"] == summary["attempted"], summary
    assert summary["found"] == summary["acknowledged"] and summary["lost"] == 0, summary["lost_tokens"]
    assert summary["duplicates"] == 0 and summary["misplaced"] == 0
    assert summary["unknown_tokens_stored"] == 0 and summary["unacknowledged_but_stored"] == 0
    assert summary["foreign_reads"] == 0
    assert summary["reads"] >= 40 and summary["nonempty_reads"] >= summary["reads"] // 2
    ops = summary["latency_ms"]
    assert set(ops) == {"provider.sync_turn", "provider.cmms_remember", "provider.prefetch",
                        "provider.cmms_recall", "mcp.store_memory", "mcp.recall_memory"}
    for name, figures in ops.items():
        assert figures["n"] >= 3 and 0 < figures["p50"] <= figures["p95"] <= figures["max"], (name, figures)
