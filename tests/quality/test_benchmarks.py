"""Smoke runs of the benchmarks at tiny sizes, so the scripts cannot rot. No speed asserts.

Each benchmark's main(argv) runs in this process, as `python benchmarks/<script>` would run it.
They fill stores of their own on the embedded default (a fresh home each, given no server URL),
so the tests that store are `store` but not for the server pass."""
from __future__ import annotations

import importlib
import io
import json
import os
import sys
from contextlib import chdir, contextmanager, redirect_stdout
from pathlib import Path
from typing import Iterator

import pytest

from conftest import embedded_only
from db import sql
from inprocess import cli

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))


def stores(test):
    """A benchmark that fills a store: an embedded one of its own."""
    return embedded_only(pytest.mark.store(test))


def _home_db(tmp_path: Path) -> str:
    """The benchmark's store: the embedded default of its --home (it is given no server URL)."""
    return f"sqlite:///{tmp_path / 'home' / 'cmms' / 'cmms.db'}"


@contextmanager
def kept_environment() -> Iterator[None]:
    """os.environ as it was afterwards (a benchmark sets HERMES_HOME and CMMS_* for its run)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main_of(script: str, *args: str, cwd: Path = REPO) -> str:
    """benchmarks/<script>'s main(args) run in this process from `cwd`; what it printed."""
    printed = io.StringIO()
    with kept_environment(), chdir(cwd), redirect_stdout(printed):
        code = importlib.import_module(Path(script).stem).main(list(args))
    assert code in (0, None), printed.getvalue()[-3000:]
    return printed.getvalue()


def run_benchmark(tmp_path: Path, script: str, *args: str, cwd: Path = REPO) -> tuple[str, dict]:
    """Run benchmarks/<script> with `args`; its stdout and the figures it wrote with --json."""
    out = tmp_path / f"{Path(script).stem}.json"
    printed = main_of(script, *args, "--json", str(out), cwd=cwd)
    return printed, json.loads(out.read_text(encoding="utf-8"))


def run_script(tmp_path: Path) -> tuple[str, dict]:
    return run_benchmark(tmp_path, "latency.py", "--sizes", "40,20", "--turns", "4", "--queries", "5",
                         "--home", str(tmp_path / "home"))


@stores
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

    db = _home_db(tmp_path)
    # filled up to 40, plus two bursts of 4 turns (2 messages each); session flushes add
    # what they learn from the user's turns (semantic memories) besides
    assert sql(db, "SELECT count(*) FROM memories WHERE kind = 'message'") == [(48,)]
    assert sql(db, "SELECT count(*) FROM outbox") == [(0,)]


@stores
def test_bulk_fill_writes_what_the_real_path_writes_and_vectors_for_every_row(tmp_path):
    _, result = run_benchmark(tmp_path, "latency.py", "--sizes", "20,300", "--bulk-from", "300", "--bulk-pool",
                              "16", "--turns", "2", "--queries", "3", "--home", str(tmp_path / "home"))
    bulk = result["sizes"][1]
    assert bulk["memories"] >= 300 and bulk["fill"]["method"].startswith("bulk")
    assert bulk["prefetch_ms"]["nonempty"] >= 1
    db = _home_db(tmp_path)
    rows = sql(db, "SELECT session_id, turn, role, context FROM memories WHERE source = 'bench:bulk' ORDER BY seq")
    assert len(rows) == bulk["memories"] - 24 and sql(db, "SELECT count(*) FROM outbox") == [(0,)]
    assert sql(db, "SELECT count(*) FROM memories_fts") == sql(db, "SELECT count(*) FROM memories")
    # (24 = the 20 written by retain_turn and the first burst of 2 turns)
    # turn numbers restart per session and every message but a session's first has context
    assert rows[0][1] == 1 and rows[0][3] is None and all(r[3] for r in rows[1:20])
    assert {r[1] for r in rows} == set(range(1, 21))
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    client = chromadb.PersistentClient(path=str(tmp_path / "home" / "cmms" / "chroma"),
                                       settings=ChromaSettings(anonymized_telemetry=False))
    from hermes_cmms.vectors.chroma import VIEWS
    counts = {view: sum(c.count() for c in client.list_collections() if c.name.startswith(prefix))
              for view, prefix in VIEWS.items()}
    [(messages, learned)] = sql(db, "SELECT sum(kind = 'message'), sum(kind <> 'message') FROM memories")
    assert messages == bulk["memories"] + 4  # every row, plus the burst
    assert counts["content"] == counts["context"] == messages + learned  # the messages and what was learned
    assert counts["sentences"] > messages + learned  # at least one vector a memory, one a sentence


@stores
def test_bridge_benchmark_times_recall_memory_over_stdio(tmp_path):
    result = run_benchmark(tmp_path, "bridge.py", "--memories", "40", "--calls", "5")[1]["recall_memory_ms"]
    assert result["n"] == 5 and result["nonempty"] >= 1
    assert 0 < result["p50"] <= result["p95"] <= result["max"]


@stores
def test_lifecycle_benchmark_reports_consolidation_decay_and_sync(tmp_path):
    _, result = run_benchmark(tmp_path, "lifecycle.py", "--consolidate", "200", "--decay", "3000", "--turns", "20")
    consolidation, decay = result["consolidation"], result["decay"]
    assert consolidation["drained"] and consolidation["examined"] == 200 and consolidation["clusters"] >= 1
    assert decay["unchanged"]["updated"] == 0 and decay["confidence_moves"]["updated"] == 3000
    assert decay["state_moves"]["transitions"] == 3000
    for case in ("sync_idle_ms", "sync_busy_ms"):
        assert result[case]["n"] == 20 and 0 < result[case]["p50"] <= result[case]["p99"] <= result[case]["max"]


@stores
def test_knowledge_benchmark_reports_every_part(tmp_path):
    _, result = run_benchmark(tmp_path, "knowledge.py", "--turns", "20", "--facts", "100", cwd=tmp_path)
    assert result["flush"]["items_learned"] > 0 and result["flush"]["flush_ms_per_10_turns"]["n"] == 2
    assert result["health"]["memories"] > 20 and result["health"]["audit_all_ms"]["n"] == 3
    assert result["graph"]["facts"] == 100 and result["graph"]["entities"] > 10
    assert 0 < result["graph"]["paths_depth4_ms"]["p50"] <= result["graph"]["paths_depth4_ms"]["max"]


def test_redaction_benchmark_reports_every_figure(tmp_path):
    _, figures = run_benchmark(tmp_path, "redaction.py", "--hostile", "20000")
    hostile = figures.pop("hostile_s")
    assert set(figures) == {"turn_500_chars_us", "turn_10kb_us", "short_word_us", "corpus_entry_us", "corpus_entries"}
    assert figures["corpus_entries"] >= 60 and all(v > 0 for v in figures.values())
    assert "pin:" in hostile and all(0 <= seconds < 10 for seconds in hostile.values())


@stores
def test_forget_script_times_the_sql_and_the_vector_side(tmp_path):
    _, results = run_benchmark(tmp_path, "forget.py", "--memories", "300", "--vectors", "--repeats", "2")

    (result,) = results
    assert result["memories"] == 300 and result["fts_merge_steps_median"] >= 1
    assert 0 < result["forget_s_median"] <= result["forget_s_max"] and result["longest_lock_hold_s"] > 0
    assert result["vector_delete_s_median"] > 0 and result["chroma_vacuum_s_median"] > 0


@stores
def test_recall_ablation_scores_as_the_bench_command_does(tmp_path, monkeypatch):
    """benchmarks/recall_ablation.py (one ingest, many evals) gives the figures `hermes-cmms
    bench locomo` (dated) gives on the same fixture, and a changed constant changes them."""
    if not (REPO.parent / "shared" / "bench" / "locomo_recall.py").exists():
        pytest.skip("the shared reference harness is not here")
    data = str(REPO / "tests" / "data" / "locomo_tiny.json")
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    homes = ["--homes", str(tmp_path / "homes"), "--data", data]
    main_of("recall_ablation.py", "ingest", *homes)

    def ablation(*extra: str) -> dict:
        return json.loads(main_of("recall_ablation.py", "eval", *homes, *extra).splitlines()[-1].split(" ", 1)[1])

    ours = ablation()
    out = tmp_path / "bench.json"
    done = cli(None, "bench", "locomo", data, "--json", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    bench = json.loads(out.read_text(encoding="utf-8"))["total"]
    assert {k: ours[k] for k in ("ev_key", "ev_words", "ev_recall")} == \
        {k: round(bench[k], 3) for k in ("ev_key", "ev_words", "ev_recall")}
    starved = ablation("--budget", "40")
    assert starved["ev_key"] < ours["ev_key"] and starved["tokens"] <= 40


@pytest.mark.quick
def test_recall_ablation_stitches_each_cue_as_a_session_of_its_own():
    """The LoCoMo-Plus family: every cue is a session of its own at its gap before the question
    time (7 days after the conversation's last session), in time order with LoCoMo's, and a cue
    counts as recalled when its A line is on one line of the block (the shared harness' rule)."""
    if not (REPO.parent / "shared" / "bench" / "locomo-plus-dev.json").exists():
        pytest.skip("the shared dev split is not here")
    ablation = importlib.import_module("recall_ablation")
    plus = ablation.samples("plus", None)
    items = sum(len(sample["plus"]) for sample in plus)
    assert items == len(json.loads((REPO.parent / "shared" / "bench" / "locomo-plus-dev.json").read_text()))
    for sample in plus:
        times = [at for at, _, _ in sample["events"]]
        cues = [sid for _, sid, _ in sample["events"] if "-plus-" in sid]
        assert times == sorted(times) and len(cues) == len(sample["plus"])
        assert sample["ask_at"] == ablation.sessions(sample)[-1][0] + ablation.PLUS.QUERY_AFTER
        assert max(times) <= sample["ask_at"]
    question, relation, [(cue, found)] = ablation.questions(plus[0])[0]
    assert relation in {"causal", "goal", "state", "value"} and question and cue
    assert found(cue, f"- user: {cue}")["key"] and not found(cue, f"- user: {question}")["key"]


@stores
def test_precision_benchmark_counts_injected_lines_and_finds_facts(tmp_path):
    """benchmarks/precision.py at three prompts of each kind: the hand-written chat stored (every
    answer line a user message of the store), a row per prompt with the memory lines it got, and
    related prompts that ask in other words find their fact (by meaning: the default embedder)."""
    if not (REPO.parent / "shared" / "bench" / "locomo_recall.py").exists():
        pytest.skip("the shared reference harness is not here")
    stdout, result = run_benchmark(tmp_path, "precision.py", "--limit", "3", "--home", str(tmp_path / "home"))

    assert set(result) == {"summary", "settings", "unrelated", "related", "about_me"}
    assert set(result["summary"]["unrelated"]) == {"prompts", "mean_lines", "share_none", "mean_tokens", "max_lines"}
    assert set(result["summary"]["related"]) == {"prompts", "found", "mean_lines", "mean_tokens"}
    assert set(result["summary"]["about_me"]) == {"prompts", "mean_lines", "share_3_lines"}
    assert len(result["unrelated"]) == len(result["related"]) == len(result["about_me"]) == 3
    assert "unrelated prompts: 3" in stdout and "about the user: 3" in stdout
    for row in result["unrelated"] + result["related"]:
        assert row["lines"] == len(row["injected"]) and row["tokens"] >= 0
    assert result["summary"]["related"]["found"] > 0 and any(row["found"] for row in result["related"])
    precision = importlib.import_module("precision")
    stored = {text for (text,) in sql(_home_db(tmp_path), "SELECT content FROM memories WHERE role = 'user'")}
    assert {r["answer_line"] for r in precision.load(precision.DATA)["related"]} <= stored
    answer = result["related"][0]["answer_line"]
    assert precision.found(answer, "q", f"- user: {answer}")
    assert not precision.found(answer, "q", f"- user: q\n- user: {answer[:20]}")


def test_first_reply_runs_another_commits_package_from_its_own_tree(tmp_path):
    """`first_reply.py --against COMMIT`: the commit's package, hooks/ and mcp_bridge/ inside it,
    goes before the editable install of this checkout on PYTHONPATH."""
    import subprocess

    first_reply = importlib.import_module("first_reply")
    tree = first_reply.tree_at("HEAD", tmp_path)
    found = subprocess.run([sys.executable, "-c", "import hermes_cmms.hooks.specs as s, hermes_cmms.provider as p; "
                            "print(s.__file__); print(p.__file__)"], env=dict(os.environ, PYTHONPATH=str(tree)),
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(path).is_relative_to(tree / "hermes_cmms") for path in found), found
