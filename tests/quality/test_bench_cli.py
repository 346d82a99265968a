"""`hermes-cmms bench` on tiny fixtures whose figures are known.

The fixtures are built so keyword search (CMMS_EMBEDDER=none) must find some evidence and
cannot find the rest (no word in common with the question), so every expected figure below
follows from the scoring rules alone; a scoring mistake changes at least one of them.

Every run ingests into a fresh embedded home of its own (whatever store the environment
names), so the tests that run one are `store` but not for the server pass.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import SHARED, embedded_only
from db import sql
from hermes_cmms.bench import locomo
from inprocess import cli

CLI = str(Path(sys.executable).with_name("hermes-cmms"))
DATA = Path(__file__).parents[1] / "data"
REFERENCE = SHARED / "bench" / "locomo_recall.py"


def ingests(test):
    """A test that runs the bench: it stores, in an embedded home of the run's own."""
    return embedded_only(pytest.mark.store(test))


def bench(tmp_path, *args, embedder="none"):
    """`hermes-cmms bench ARGS` without the user's CMMS_* settings (CMMS_EMBEDDER=`embedder`)."""
    env = {name: None for name in os.environ if name.startswith("CMMS_")}
    env.update({"CMMS_EMBEDDER": embedder} if embedder else {})
    return cli(tmp_path / "unused_home", "bench", *args, env=env)


def run_json(tmp_path, *args, **kwargs) -> dict:
    out = tmp_path / "result.json"
    done = bench(tmp_path, *args, "--json", str(out), **kwargs)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def levels(figures: dict, level: str) -> dict:
    return {k: v for k, v in figures[level].items() if k != "questions"}


def at(any_by_k, all_by_k):
    return {f"recall_{kind}@{k}": float(v) for k, a, b in zip((1, 3, 5, 10), any_by_k, all_by_k)
            for kind, v in (("any", a), ("all", b))}


# Per question (keyword-only): q1 finds its one gold turn first; q2 has two gold sessions and
# finds one at rank 1 and both by rank 2; q3's gold shares no word with the question; q4's
# gold session is found through another turn, its gold turn is not.
EXPECTED_SESSION = {"lme_q1": at([1] * 4, [1] * 4), "lme_q2": at([1] * 4, [0, 1, 1, 1]),
                    "lme_q3": at([0] * 4, [0] * 4), "lme_q4": at([1] * 4, [1] * 4)}
EXPECTED_TURN = {"lme_q1": at([1] * 4, [1] * 4), "lme_q2": at([1] * 4, [0, 1, 1, 1]),
                 "lme_q3": at([0] * 4, [0] * 4), "lme_q4": at([0] * 4, [0] * 4)}
EXPECTED_IN_CONTEXT = {"lme_q1": (1, 1), "lme_q2": (2, 2), "lme_q3": (1, 0), "lme_q4": (1, 0)}


@ingests
def test_longmemeval_scores_the_fixture_exactly(tmp_path):
    result = run_json(tmp_path, "longmemeval", str(DATA / "longmemeval_tiny.json"))

    assert (result["skipped_abstention"], result["k"], result["budget"]) == (1, [1, 3, 5, 10], 600)
    assert result["embedder"] == "none (keyword-only)"
    rows = {r["question_id"]: r for r in result["rows"]}
    assert list(rows) == ["lme_q1", "lme_q2", "lme_q3", "lme_q4"]  # lme_q5_abs skipped
    assert {q: r["session"] for q, r in rows.items()} == EXPECTED_SESSION
    assert {q: r["turn"] for q, r in rows.items()} == EXPECTED_TURN
    assert {q: (r["evidence"], r["evidence_found"]) for q, r in rows.items()} == EXPECTED_IN_CONTEXT
    assert rows["lme_q2"]["retrieved_sessions"] == ["answer_q2_a", "answer_q2_b"]
    assert rows["lme_q3"]["retrieved_sessions"] == ["q3_noise"]

    total = result["total"]
    assert total["questions"] == total["session"]["questions"] == total["turn"]["questions"] == 4
    assert levels(total, "session") == at([0.75] * 4, [0.5, 0.75, 0.75, 0.75])
    assert levels(total, "turn") == at([0.5] * 4, [0.25, 0.5, 0.5, 0.5])
    assert (total["evidence"], total["ev_recall"], total["all_hit"]) == (5, 0.6, 0.5)
    assert total["tokens"] == pytest.approx(sum(r["tokens"] for r in rows.values()) / 4)
    assert 0 < total["p50_ms"] <= total["p95_ms"] and total["ingest_s"] > 0
    by_type = result["by_type"]
    assert {t: v["questions"] for t, v in by_type.items()} == {"multi-session": 1, "single-session-user": 3}
    assert by_type["single-session-user"]["session"]["recall_any@1"] == pytest.approx(2 / 3)


@ingests
def test_longmemeval_k_and_budget_options(tmp_path):
    result = run_json(tmp_path, "longmemeval", str(DATA / "longmemeval_tiny.json"),
                      "--k", "2,1", "--budget", "30", "--limit", "2")
    assert (result["k"], result["budget"]) == ([1, 2], 30)
    assert [r["question_id"] for r in result["rows"]] == ["lme_q1", "lme_q2"]
    assert result["rows"][1]["session"] == {"recall_any@1": 1.0, "recall_all@1": 0.0,
                                            "recall_any@2": 1.0, "recall_all@2": 1.0}
    assert all(r["tokens"] <= 30 for r in result["rows"])


@ingests
def test_longmemeval_with_the_default_embedder(tmp_path):
    started = time.monotonic()
    result = run_json(tmp_path, "longmemeval", str(DATA / "longmemeval_tiny.json"), embedder=None)
    assert time.monotonic() - started < 60
    assert "keyword-only" not in result["embedder"]
    rows = {r["question_id"]: r for r in result["rows"]}
    # Vectors only add candidates, so the deepest cut-off finds at least what keywords found.
    for qid, expected in EXPECTED_SESSION.items():
        assert rows[qid]["session"]["recall_all@10"] >= expected["recall_all@10"]
        assert rows[qid]["turn"]["recall_any@10"] >= EXPECTED_TURN[qid]["recall_any@10"]
    assert rows["lme_q1"]["session"]["recall_all@1"] == 1.0


FIGURES = ("ev_key", "ev_words", "ev_cover", "ev_recall", "all_key", "all_words", "all_hit")


def figures(*values) -> dict:
    return dict(zip(FIGURES, values, strict=True))


@pytest.mark.quick
@ingests
def test_locomo_scores_the_fixture_exactly(tmp_path):
    result = run_json(tmp_path, "locomo", str(DATA / "locomo_tiny.json"))

    total = result["total"]
    # Keyword search finds whole messages, each one short line (about 70 tokens of 600 in all).
    # chew (cat 4): found / half marathon (cat 2): found / ceramics (cat 3): no word in common,
    # not found / Biscuit (cat 1): the park turn found, the sneakers turn not, no line shares
    # its words / best view (cat 4): only Bob's "From your balcony facing the river you get the
    # best view in town." matches. Alice's evidence turn is not found, but its answer-bearing
    # sentence "It has a balcony facing the river." is on that line (key 3/3), the whole turn is
    # not (cover 3/7: moved porto last month balcony facing river); Bob's evidence turn "What a
    # balcony, facing the river!" has all its content words on it (cover 1, words and key
    # pass) though its opening is not there (lenient fails).
    assert (result["dated"], total["questions"], total["evidence"]) == (True, 5, 7)
    # ev_key ev_words ev_cover ev_recall (of 7 turns), all_key all_words all_hit (of 5 questions)
    assert {k: total[k] for k in FIGURES} == pytest.approx(
        figures(5 / 7, 4 / 7, (4 + 3 / 7) / 7, 3 / 7, 3 / 5, 2 / 5, 2 / 5))
    cats = {c: {k: v[k] for k in ("questions", "evidence", *FIGURES)}
            for c, v in total["by_category"].items()}
    assert cats == {
        "1": {"questions": 1, "evidence": 2, **figures(0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0)},
        "2": {"questions": 1, "evidence": 1, **figures(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)},
        "3": {"questions": 1, "evidence": 1, **figures(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)},
        "4": {"questions": 2, "evidence": 3, **figures(1.0, pytest.approx(2 / 3), pytest.approx((2 + 3 / 7) / 3),
                                                       pytest.approx(1 / 3), 1.0, 0.5, 0.5)}}
    assert [r["conv"] for r in result["rows"]] == ["tiny-1"] and 0 < total["tokens"] < 300


@ingests
def test_locomo_imported_as_a_chatgpt_export_scores_the_fixture_as_fed_turn_by_turn(tmp_path):
    fed = run_json(tmp_path, "locomo", str(DATA / "locomo_tiny.json"))
    imported = run_json(tmp_path, "locomo", str(DATA / "locomo_tiny.json"), "--imported")
    assert imported["imported"] is True and fed["imported"] is False
    assert {k: imported["total"][k] for k in FIGURES} == {k: fed["total"][k] for k in FIGURES}
    assert imported["total"]["by_category"] == fed["total"]["by_category"]


def test_the_chatgpt_export_of_a_locomo_sample_is_read_back_as_its_sessions(tmp_path):
    from hermes_cmms.bench import _chatgpt
    from hermes_cmms.ops.formats import chatgpt

    [sample] = locomo.load(str(DATA / "locomo_tiny.json"))[:1]
    path = _chatgpt.write(tmp_path / "conversations.json", locomo.chatgpt_export(sample))
    records = [r for r in chatgpt.records(path, scope="s") if isinstance(r, dict)]
    said = [(r["role"], r["content"]) for r in records if r["type"] == "memory"]
    speaker_a = sample["conversation"]["speaker_a"]
    assert said == [("user" if t["speaker"] == speaker_a else "assistant", locomo.line(t))
                    for _, turns in locomo._session_items(sample["conversation"]) for t in turns]
    starts = [r["started_at"] for r in records if r["type"] == "session"]
    assert starts == [when.timestamp() for when in locomo.session_times(sample)]
    before = time.time()
    undated = [c["create_time"] for c in locomo.chatgpt_export(sample, dated=False)]
    assert len(undated) == len(starts) and all(before - 1 <= at <= time.time() for at in undated)


@ingests
@pytest.mark.skipif(not REFERENCE.exists(), reason="the shared reference harness is not here")
def test_locomo_matches_the_reference_harness(tmp_path):
    ours = run_json(tmp_path, "locomo", str(DATA / "locomo_tiny.json"))["total"]  # dated by default
    install = f'{CLI} install-hermes-plugin --hermes-home "$HERMES_HOME"'
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMMS_")}
    env.update(CMMS_EMBEDDER="none", PATH=f"{Path(CLI).parent}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run([sys.executable, str(REFERENCE), "--provider", "cmms", "--install", install,
                           "--data", str(DATA / "locomo_tiny.json"), "--dated"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.splitlines()[-1])
    keys = ("questions", "tokens", *FIGURES)
    assert {k: theirs[k] for k in keys} == {k: ours[k] for k in keys}
    for figure in ("ev_key", "ev_words", "ev_cover", "ev_recall"):
        assert theirs[f"{figure}_by_cat"] == {c: round(v[figure], 3) for c, v in ours["by_category"].items()}
    assert len({theirs[k] for k in FIGURES[:4]}) == 4  # the fixture tells the four checks apart


def test_locomo_totals_weight_each_conversation_by_its_questions():
    """As the reference harness does: a conversation's per-turn share counts once per question,
    so one question with three found turns and three questions with one missed turn each make
    0.25, not the pooled 3/6."""
    rows = [{"questions": q, "evidence": q_ev, "tokens": 10.0, "ingest_s": 1.0, "p50_ms": 5.0,
             "p95_ms": p95, **figures(*[share] * len(FIGURES))}
            for q, q_ev, share, p95 in ((1, 3, 1.0, 9.0), (3, 3, 0.0, 7.0))]
    total = locomo.total(rows, [])
    assert {k: total[k] for k in FIGURES} == figures(*[0.25] * len(FIGURES))
    assert (total["questions"], total["evidence"], total["p50_ms"], total["p95_ms"]) == (4, 6, 5.0, 9.0)


def stored_times(monkeypatch, dated: bool) -> tuple[dict, float]:
    """A real dated or undated run of the fixture: each session's (earliest, latest) memory
    created_at, read from the store just before the questions, and the clock then."""
    for name in [n for n in os.environ if n.startswith("CMMS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    seen, ask_all = {}, locomo.ask_all

    def read_store_then_ask(home, *args):
        rows = sql(home, "SELECT session_id, min(created_at), max(created_at) FROM memories GROUP BY session_id")
        seen.update(sessions={sid: (first, last) for sid, first, last in rows}, now=time.time())
        return ask_all(home, *args)

    monkeypatch.setattr(locomo, "ask_all", read_store_then_ask)
    locomo.run(str(DATA / "locomo_tiny.json"), dated=dated)
    return seen["sessions"], seen["now"]


def utc(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc).timestamp()


@ingests
def test_dated_ingest_stores_each_session_at_its_own_date(monkeypatch):
    sessions, now = stored_times(monkeypatch, dated=True)
    starts = {"tiny-1-session_1": "2023-05-08 13:00", "tiny-1-session_2": "2023-06-20 19:30",
              "tiny-1-session_3": "2023-08-02 10:15"}
    assert set(sessions) == set(starts)
    for sid, start in starts.items():  # the clock runs on from each session's date
        assert utc(start) <= sessions[sid][0] <= sessions[sid][1] < utc(start) + 120, sid
    assert utc("2023-08-03 10:15") <= now < utc("2023-08-03 10:15") + 120  # a day after the last
    assert time.time() > utc("2026-01-01 00:00")  # and the real clock is back


@ingests
def test_undated_ingest_stores_every_session_now(monkeypatch):
    started = time.time()
    sessions, now = stored_times(monkeypatch, dated=False)
    assert len(sessions) == 3
    assert all(started <= first <= last <= now <= time.time() for first, last in sessions.values())


@ingests
def test_dated_run_without_time_machine_is_one_sentence(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked" / "time_machine"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("time_machine is blocked here")\n')
    monkeypatch.syspath_prepend(str(blocked.parent))
    monkeypatch.delitem(sys.modules, "time_machine", raising=False)
    done = bench(tmp_path, "locomo", str(DATA / "locomo_tiny.json"))
    assert (done.returncode, done.stderr.strip()) == (
        1, "error: A dated run moves the clock with time-machine, which cannot be imported "
           "(time_machine is blocked here); reinstall hermes-cmms or pass --undated.")
    out = tmp_path / "undated.json"
    undated = bench(tmp_path, "locomo", str(DATA / "locomo_tiny.json"), "--undated", "--json", str(out))
    assert undated.returncode == 0, undated.stderr[-2000:]
    assert json.loads(out.read_text(encoding="utf-8"))["dated"] is False


@ingests
def test_locomo_prints_a_table_and_picks_conversations(tmp_path):
    done = bench(tmp_path, "locomo", str(DATA / "locomo_tiny.json"), "--convs", "tiny-1")
    assert done.returncode == 0, done.stderr
    assert "tiny-1" in done.stdout and "3 open-domain" in done.stdout and "(dated)" in done.stdout
    convs, cats = [header_of(table) for table in done.stdout.split("By category")]
    assert convs == ["conv", "questions", "ev_key", "ev_words", "ev_recall", "all_key", "tokens",
                     "ingest_s", "p50_ms", "p95_ms"]
    assert cats == ["category", "questions", "evidence", "ev_key", "ev_words", "ev_recall", "all_key"]
    unknown = bench(tmp_path, "locomo", str(DATA / "locomo_tiny.json"), "--convs", "conv-99")
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "error: No conversation 'conv-99' in the file; it has tiny-1."


def header_of(table: str) -> list[str]:
    line = next(line for line in table.splitlines() if "ev_key" in line)
    return line.replace("┃", " ").split()


@pytest.mark.parametrize("suite, content, message", [
    ("longmemeval", None, "Cannot read '{path}': No such file or directory."),
    ("longmemeval", "{not json", "'{path}' is not valid JSON"),
    ("longmemeval", '{"a": 1}', "'{path}' is not a LongMemEval file: expected a non-empty list of questions."),
    ("longmemeval", '[{"question_id": "x"}]', "'{path}' is not a LongMemEval file: item 0 has no 'question_type'."),
    ("locomo", '[{"sample_id": "s"}]', "'{path}' is not a LoCoMo file: sample 0 lacks sample_id"),
    ("locomo", "LONGMEMEVAL", "'{path}' is not a LoCoMo file: sample 0 lacks sample_id"),
])
def test_bad_file_is_one_sentence_and_exit_1(tmp_path, suite, content, message):
    path = tmp_path / "data.json"
    if content == "LONGMEMEVAL":
        content = (DATA / "longmemeval_tiny.json").read_text(encoding="utf-8")
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = bench(tmp_path, suite, str(path))
    assert done.returncode == 1
    assert done.stderr.startswith("error: " + message.format(path=path))
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("args, message", [
    (("--k", "1,x"), "error: --k must be comma-separated positive whole numbers, not '1,x'."),
    (("--budget", "0"), "error: The token budget must be a positive whole number, not 0."),
    (("--json", "/no/such/dir/out.json"), "error: Cannot write '/no/such/dir/out.json': its directory does not exist."),
])
def test_bad_options_are_one_sentence(tmp_path, args, message):
    done = bench(tmp_path, "longmemeval", str(DATA / "longmemeval_tiny.json"), *args)
    assert (done.returncode, done.stderr.strip()) == (1, message)
