"""The CMMS 0.11 contracts of the recall tools (ping, remember, search, get_context,
semantic_search) through one MCP client session with the default embedder, plus one keyword-only
session (in memory, against the real server object): every case's input is valid under its
contract, every answer validates against the contract's output (our extra keys tolerated), shows
no stored (hex) id, and says what the case asked for."""
from __future__ import annotations

import pytest

from contract_harness import errors, first_case_of_each_tool, hex_ids, indexed, module_home, sampled
from inprocess import memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}

REMEMBER = {  # written first, in this order; their answers are cases too
    "remember-minimal": {"subject": "Server Alpha", "predicate": "runs", "object": "Postgres"},
    "remember-confidence-source": {"subject": "Server Alpha", "predicate": "located in", "object": "Lisbon",
                                   "confidence": 0.8, "source": "slack"},
    "remember-confidence-0": {"subject": "Mallory", "predicate": "claims", "object": "the moon is cheese",
                              "confidence": 0},
    "remember-unicode": {"subject": "Zoë", "predicate": "vit à", "object": "Zürich ☃"},
    "remember-repeat": {"subject": "Server Alpha", "predicate": "runs", "object": "Postgres"},
}
SEEDED = [("Lisbon", "is in", "Portugal"), *((f"Host {n}", "runs", "Nginx") for n in range(1, 7))]
NOTE = "Server Alpha was rebooted on Monday after the Postgres upgrade."
DECISION = "We decided to use Postgres because it is reliable."
CASES = {
    "ping": ("ping", {}),
    **{case: ("remember", args) for case, args in REMEMBER.items()},
    "search-defaults": ("search", {}),
    "search-query": ("search", {"query": "where is Server Alpha located"}),
    "search-subject": ("search", {"subject": "server alpha"}),
    "search-predicate-limit": ("search", {"predicate": "runs", "limit": 5}),
    "search-limit-1000": ("search", {"limit": 1000}),
    "search-empty-query-subject": ("search", {"query": "", "subject": "Lisbon"}),
    "search-query-subject": ("search", {"query": "Postgres", "subject": "Server Alpha"}),
    "search-limit-1": ("search", {"query": "Nginx", "limit": 1}),
    "get_context-task": ("get_context", {"task": "Should we use Postgres?"}),
    "get_context-subject": ("get_context", {"task": "Postgres in Lisbon", "subject": "Server Alpha"}),
    "get_context-max-1": ("get_context", {"task": "Which hosts run Nginx?", "max_results": 1}),
    "get_context-max-100": ("get_context", {"task": "Which hosts run Nginx?", "max_results": 100}),
    "semantic_search-query": ("semantic_search", {"query": "which database engine does the server use"}),
    "semantic_search-top_k-threshold": ("semantic_search", {"query": "web server software on a host",
                                                            "top_k": 3, "score_threshold": 0.2}),
    "semantic_search-threshold-1": ("semantic_search", {"query": "which database engine does the server use",
                                                        "score_threshold": 1.0}),
    "semantic_search-defaults": ("semantic_search", {}),
}
EXTENDED = {  # our extra filters beside the contract's (not contract inputs: answers still the contract's)
    "search-source-no-query": ("search", {"source": "sla"}),
    "search-object": ("search", {"object": "NGINX", "limit": 4}),
    "search-query-source": ("search", {"query": "Server Alpha", "source": "slack"}),
}
KEYWORD_CASES = {"semantic_search-keyword-only": ("semantic_search", {"query": "database"})}
REFUSED = {  # outside the contracts' inputs: one sentence each, nothing written
    "remember-confidence-above-1": ("remember", {"subject": "a", "predicate": "is", "object": "b", "confidence": 1.5},
                                    "Confidence must be a number from 0 to 1, not 1.5."),
    "search-limit-1001": ("search", {"limit": 1001}, "Argument 'limit' must be between 1 and 1000, not 1001."),
    "search-limit-0": ("search", {"query": "x", "limit": 0}, "Argument 'limit' must be between 1 and 1000, not 0."),
    "get_context-max-101": ("get_context", {"task": "x", "max_results": 101},
                            "Argument 'max_results' must be between 1 and 100, not 101."),
    "semantic_search-threshold-above-1": ("semantic_search", {"query": "x", "score_threshold": 1.5},
                                          "Argument 'score_threshold' must be between 0 and 1, not 1.5."),
    "semantic_search-threshold-negative": ("semantic_search", {"query": "x", "score_threshold": -0.5},
                                           "Argument 'score_threshold' must be between 0 and 1, not -0.5."),
}



@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """{case: (args, Result)} of every case, and what the seeding wrote (ids in writing order)."""
    with module_home(tmp_path_factory, "contracts_recall") as home:
        async def main():
            out, seeded = {}, {"facts": []}
            async with memory_bridge(home) as bridge:
                seeded["tools"] = await bridge.tools()
                for case, args in REMEMBER.items():
                    out[case] = (args, await bridge.call("remember", **args))
                    if case != "remember-repeat":
                        seeded["facts"].append(out[case][1].data["id"])
                for subject, predicate, obj in SEEDED:
                    seeded["facts"].append((await bridge.ok("remember", subject=subject, predicate=predicate,
                                                            object=obj))["id"])
                scope = (await bridge.ok("ping"))["scope"]
                seeded["note"] = (await bridge.ok("store_memory", content=NOTE, scope=scope))["id"]
                seeded["learned"] = (await bridge.ok("learn", text=DECISION))["learned"]
                await indexed(bridge, seeded["learned"][-1]["text"])
                calls = {**CASES, **EXTENDED, **{case: (tool, args) for case, (tool, args, _) in REFUSED.items()}}
                for case, (tool, args) in calls.items():
                    if case not in out:
                        out[case] = (args, await bridge.call(tool, **args))
                seeded["memories"] = (await bridge.ok("ping"))["memories"]
            async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
                for case, (tool, args) in KEYWORD_CASES.items():
                    out[case] = (args, await bridge.call(tool, **args))
            return out, seeded

        return run(main())


def _tool(case: str) -> str:
    return {**CASES, **KEYWORD_CASES, **EXTENDED}[case][0]


SDK_SAMPLES = first_case_of_each_tool({case: tool for case, (tool, _) in CASES.items()})


@pytest.mark.parametrize("case", sampled([*CASES, *KEYWORD_CASES], SDK_SAMPLES))
def test_the_case_is_valid_and_its_answer_is_the_contracts(session, case):
    out, _ = session
    args, result = out[case]
    tool = _tool(case)
    assert errors(tool, args, part="input", strict=True) == []
    assert not result.error, result.text
    assert errors(tool, result.data) == []
    assert hex_ids(result.data) == []


def _ids(items: list[dict]) -> list[str]:
    return [item["id"] for item in items]


def _data(session, case: str) -> dict:
    return session[0][case][1].data


def test_ping_says_ok(session):
    assert _data(session, "ping")["status"] == "ok"


@pytest.mark.quick
def test_remember_answers_the_receipt_and_the_fact_as_stored(session):
    minimal = _data(session, "remember-minimal")
    receipt, fact = minimal["receipt"], minimal["fact"]
    assert (fact["subject"], fact["predicate"], fact["object"]) == ("Server Alpha", "runs", "Postgres")
    assert fact["id"] == minimal["id"] == receipt["memory_id"] != receipt["id"]  # a receipt names the write
    assert (fact["confidence"], fact["source"]) == (1.0, "user")  # the contract's defaults
    assert (receipt["memory_type"], receipt["source"], receipt["created_by"], receipt["confidence"],
            receipt["verification_status"]) == ("fact", "user", "mcp:remember", 1.0, "trusted")
    assert receipt["timestamp"] == fact["updated_at"] and fact["created_at"]
    given = _data(session, "remember-confidence-source")
    assert (given["fact"]["confidence"], given["fact"]["source"], given["receipt"]["source"]) == (0.8, "slack", "slack")
    doubted = _data(session, "remember-confidence-0")
    assert (doubted["fact"]["confidence"], doubted["receipt"]["verification_status"]) == (0.0, "candidate")
    unicode = _data(session, "remember-unicode")["fact"]
    assert (unicode["subject"], unicode["predicate"], unicode["object"]) == ("Zoë", "vit à", "Zürich ☃")
    repeat = _data(session, "remember-repeat")
    assert repeat["fact"]["id"] == minimal["id"] and repeat["receipt"]["id"] != receipt["id"]  # reinforced


def test_search_without_a_query_lists_the_newest_facts(session):
    _, seeded = session
    found = _data(session, "search-defaults")
    assert _ids(found["results"]) == seeded["facts"][::-1] and found["total"] == len(seeded["facts"])
    assert _ids(found["memories"]) == _ids(found["results"])  # the note and the decision are not facts
    everything = _data(session, "search-limit-1000")
    assert _ids(everything["results"]) == _ids(found["results"]) and everything["total"] == len(seeded["facts"])


@pytest.mark.quick
def test_search_finds_a_remembered_fact_by_its_id_and_answers_only_facts_as_results(session):
    _, seeded = session
    found = _data(session, "search-query")
    located = _data(session, "remember-confidence-source")["id"]
    assert located in _ids(found["results"]) and all(r["score"] > 0 for r in found["results"])
    assert found["total"] == len(found["results"]) and all(r["kind"] == "fact" for r in found["results"])
    both = _data(session, "search-query-subject")
    assert {r["subject"] for r in both["results"]} == {"Server Alpha"}
    assert _data(session, "remember-minimal")["id"] in _ids(both["results"])
    assert seeded["note"] not in _ids(both["results"])


def test_search_memories_holds_every_kind_of_hit(session):
    _, seeded = session
    both = _data(session, "search-query")
    kinds = {m["kind"] for m in _data(session, "get_context-task")["memories"]}
    assert "decision" in kinds and "fact" in kinds
    assert set(_ids(both["results"])) <= set(_ids(both["memories"]))
    assert seeded["note"] in _ids(_data(session, "get_context-subject")["memories"])


def test_search_filters_by_subject_or_predicate_in_any_case_and_keeps_the_limit(session):
    subject = _data(session, "search-subject")
    assert {r["subject"] for r in subject["results"]} == {"Server Alpha"} and subject["total"] == 2
    lisbon = _data(session, "search-empty-query-subject")
    assert [(r["subject"], r["object"]) for r in lisbon["results"]] == [("Lisbon", "Portugal")]
    runs = _data(session, "search-predicate-limit")
    assert runs["total"] == len(runs["results"]) == 5 and {r["predicate"] for r in runs["results"]} == {"runs"}
    one = _data(session, "search-limit-1")
    assert one["total"] == len(one["results"]) == len(one["memories"]) == 1
    assert one["results"][0]["object"] == "Nginx"


@pytest.mark.parametrize("case", EXTENDED)
def test_our_extra_filters_answer_the_contracts_shape(session, case):
    args, result = session[0][case]
    assert errors("search", args, part="input", strict=True)  # an extension, not the contract's
    assert not result.error, result.text
    assert errors("search", result.data) == [] and hex_ids(result.data) == []


def test_search_filters_by_source_prefix_and_by_object(session):
    slack = _data(session, "remember-confidence-source")["id"]
    assert _ids(_data(session, "search-source-no-query")["results"]) == [slack]  # no query: the newest facts
    assert _ids(_data(session, "search-query-source")["results"]) == [slack]
    hosts = _data(session, "search-object")
    assert hosts["total"] == 4 and [r["subject"] for r in hosts["results"]] == ["Host 6", "Host 5", "Host 4", "Host 3"]


def test_get_context_answers_the_facts_and_decisions_of_a_task(session):
    _, seeded = session
    task = _data(session, "get_context-task")
    [decision] = task["decisions"]
    assert decision["id"] == seeded["learned"][0]["id"]
    assert (decision["choice"], decision["reason"]) == ("use Postgres", "it is reliable")
    assert decision["content"] == seeded["learned"][0]["text"] and decision["created_at"]
    assert _data(session, "remember-minimal")["id"] in _ids(task["facts"])
    assert task["total"] == len(task["facts"]) and "Postgres" in task["context"]
    about = _data(session, "get_context-subject")
    assert about["facts"] and {f["subject"] for f in about["facts"]} == {"Server Alpha"}
    assert about["decisions"][0]["id"] == decision["id"]


def test_get_context_keeps_max_results(session):
    one = _data(session, "get_context-max-1")
    assert one["total"] == len(one["facts"]) == 1 and len(one["memories"]) == 1
    many = _data(session, "get_context-max-100")
    hosts = {f["subject"] for f in many["facts"]}
    assert {f"Host {n}" for n in range(1, 7)} <= hosts and many["total"] == len(many["facts"]) > 6


def test_semantic_search_answers_the_semantic_results_branch(session):
    found = _data(session, "semantic_search-query")
    assert "rule_match" not in found and "error" not in found
    top = found["semantic_results"]
    assert found["total"] == len(top) == len(found["results"]) > 0
    scores = [r["score"] for r in top]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    [postgres] = [r for r in top if r["id"] == _data(session, "remember-minimal")["id"]]
    assert postgres["payload"] == {"subject": "Server Alpha", "predicate": "runs", "object": "Postgres",
                                   "source": "user", "memory_type": "fact", "content": "Server Alpha runs Postgres"}
    raw = {r["id"]: r["similarity"] for r in found["results"]}
    assert all(abs(raw[r["id"]] - r["score"]) < 1e-4 for r in top)  # the cosine similarity itself


def test_semantic_search_keeps_top_k_and_the_threshold(session):
    some = _data(session, "semantic_search-top_k-threshold")
    assert 0 < some["total"] <= 3 and all(r["score"] >= 0.2 for r in some["semantic_results"])
    none = _data(session, "semantic_search-threshold-1")
    assert (none["semantic_results"], none["total"]) == ([], 0)
    empty = _data(session, "semantic_search-defaults")
    assert (empty["semantic_results"], empty["total"]) == ([], 0)


def test_semantic_search_without_an_embedder_answers_the_error_branch(session):
    answer = _data(session, "semantic_search-keyword-only")
    assert set(answer) == {"error"} and answer["error"].startswith("Semantic search is unavailable")
    assert errors("semantic_search", answer, strict=True) == []  # the Error variant, exactly


@pytest.mark.parametrize("case", REFUSED)
def test_arguments_outside_the_contract_are_refused_in_one_sentence(session, case):
    out, seeded = session
    tool, args, sentence = REFUSED[case]
    _, result = out[case]
    assert errors(tool, args, part="input", strict=True)  # the contract refuses it too
    assert result.error and sentence in result.text and "\n" not in result.text


def test_nothing_refused_was_written(session):
    _, seeded = session
    assert seeded["memories"] == len(seeded["facts"]) + 3  # the facts, the note, the learned text and decision
