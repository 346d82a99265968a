"""The CMMS 0.11 contracts of the knowledge tools (learn, graph_search, route, audit) through one
MCP client session (in memory, against the real server object) with the default embedder: every
case's input is valid under its contract, every answer validates against the contract's output
(our extra keys tolerated), shows no stored (hex) id, and says what the case asked for."""
from __future__ import annotations

import uuid

import pytest

from contract_harness import errors, first_case_of_each_tool, hex_ids, indexed, module_home, sampled
from db import sql
from inprocess import memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

FACTS = [("Server Alpha", "runs", "Postgres"), ("Server Alpha", "located in", "Lisbon"), ("Lisbon", "is in", "Portugal")]
NOTE = "The boiler was serviced in March by the plumber."  # learned: kept as an observation, indexed
PARAPHRASE = "heater maintenance by a plumber"  # cosine about 0.57 to NOTE with MiniLM
ORPHAN = "%032x" % 0xDEAD  # a facts row whose memory does not exist, written before the audits

LEARN = {
    "learn-mixed": {"text": "We decided to use Postgres because it scales. Ana works at Acme. "
                            "I think the staging API is stable."},
    "learn-beliefs": {"text": "I am sure the cache is warm. I think the queue is slow. Maybe the disk is full.",
                      "extract_beliefs": True},
    "learn-min-confidence": {"text": "I am certain the backups run nightly. I think the lift is broken.",
                             "extract_beliefs": True, "min_belief_confidence": 0.9},
    "learn-skill": {"text": "To deploy the site: build the image, push it, then restart the pods."},
    "learn-source": {"text": "Bruno lives in Porto. I prefer green tea.", "source": "slack"},
}
GRAPH = {  # "<id:NAME>" / "<hex:NAME>": the entity's id (dashed / stored form), from an answer before
    "graph-query": {"query": "What runs on Server Alpha?"},
    "graph-entity-hex": {"entity_id": "<hex:Server Alpha>"},
    "graph-entity-name": {"entity_id": "serveralpha"},
    "graph-paths-names": {"source_id": "serveralpha", "target_id": "portugal"},
    "graph-paths-ids": {"source_id": "<id:Portugal>", "target_id": "<id:Server Alpha>"},
    "graph-all-empty": {"query": "", "entity_id": "", "source_id": "", "target_id": ""},
    "graph-precedence": {"query": "Where is Lisbon?", "entity_id": "Server Alpha"},
}
ROUTE = {
    "route-rules": {"query": "Which tea do I prefer?"},
    "route-semantic": {"query": PARAPHRASE},
    "route-graph": {"query": "Tell me about Server Alpha", "score_threshold": 1.0},
    "route-fallback": {"query": "zebra crossing paint", "score_threshold": 1.0},
    "route-top_k-threshold": {"query": PARAPHRASE, "top_k": 1, "score_threshold": 0.5},
    "route-defaults": {},
    "route-whole-words": {"query": "Is the unlikely report on footsteps ready?", "score_threshold": 1.0},
}
AUDIT = {
    "audit-defaults": {},
    "audit-full": {"audit_type": "full"},
    "audit-consistency": {"audit_type": "consistency"},
    "audit-orphans": {"audit_type": "orphans"},
    "audit-confidence": {"audit_type": "confidence"},
}
CASES = {**{c: ("learn", a) for c, a in LEARN.items()}, **{c: ("graph_search", a) for c, a in GRAPH.items()},
         **{c: ("route", a) for c, a in ROUTE.items()}, **{c: ("audit", a) for c, a in AUDIT.items()}}
EXTENDED = {  # our extensions beside the contract's inputs
    "route-limit-alias": ("route", {"query": "Which tea do I prefer?", "limit": 1}),
    "audit-receipts": ("audit", {"audit_type": "receipts"}),
    "audit-all": ("audit", {"audit_type": "all"}),
    "graph-one-end": ("graph_search", {"source_id": "serveralpha"}),
    "route-top_k-and-limit": ("route", {"query": "tea", "top_k": 2, "limit": 2}),
    "audit-unknown": ("audit", {"audit_type": "everything"}),
}



def _filled(args: dict, entities: dict[str, str]) -> dict:
    """The case's arguments with the entity placeholders filled in."""
    def one(value):
        if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
            form, name = value[1:-1].split(":", 1)
            return entities[name] if form == "id" else uuid.UUID(entities[name]).hex
        return value
    return {key: one(value) for key, value in args.items()}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """{case: (args, Result)} of every case, and what the seeding wrote."""
    with module_home(tmp_path_factory, "contracts_knowledge") as home:
        async def main():
            out, seeded = {}, {}
            async with memory_bridge(home) as bridge:
                seeded["tools"] = await bridge.tools()
                seeded["scope"] = (await bridge.ok("ping"))["scope"]
                for subject, predicate, obj in FACTS:
                    await bridge.ok("remember", subject=subject, predicate=predicate, object=obj)
                for case, args in LEARN.items():
                    out[case] = (args, await bridge.call("learn", **args))
                await bridge.ok("learn", text=NOTE)
                await indexed(bridge, NOTE)
                entities: dict[str, str] = {}
                for case, (tool, args) in {**CASES, **EXTENDED}.items():
                    if case == "audit-defaults":  # an orphan for the audits to find
                        sql(home, "INSERT INTO facts (memory_id, scope, subject, predicate, object) "
                                  "VALUES (?, ?, 'x', 'y', 'z')", ORPHAN, seeded["scope"])
                    if case not in out:
                        args = _filled(args, entities)
                        out[case] = (args, await bridge.call(tool, **args))
                    if tool == "graph_search" and not out[case][1].error:  # the entities seen so far
                        entities.update((n["name"], n["id"]) for n in out[case][1].data["nodes"])
                seeded["memories"] = sql(home, "SELECT count(*) FROM memories WHERE scope = ?", seeded["scope"])[0][0]
                seeded["low"] = [m for (m,) in sql(home, "SELECT id FROM memories WHERE scope = ? AND confidence < 0.3 "
                                                         "AND superseded_by IS NULL", seeded["scope"])]
            return out, seeded

        return run(main())


SDK_SAMPLES = first_case_of_each_tool({case: tool for case, (tool, _) in CASES.items()})


@pytest.mark.parametrize("case", sampled(CASES, SDK_SAMPLES))
def test_the_case_is_valid_and_its_answer_is_the_contracts(session, case):
    out, _ = session
    args, result = out[case]
    tool = CASES[case][0]
    assert errors(tool, args, part="input", strict=True) == []
    assert not result.error, result.text
    assert errors(tool, result.data) == []
    assert hex_ids(result.data) == []


def _data(session, case: str) -> dict:
    args, result = session[0][case]
    assert not result.error, result.text
    return result.data


@pytest.mark.quick
def test_learn_answers_each_bucket_with_receipts_and_no_beliefs_by_default(session):
    mixed = _data(session, "learn-mixed")
    [fact] = mixed["facts"]
    assert (fact["item"]["subject"], fact["item"]["predicate"], fact["item"]["object"]) == ("Ana", "works at", "Acme")
    [decision] = mixed["decisions"]
    assert (decision["item"]["choice"], decision["item"]["reason"]) == ("use Postgres", "it scales")
    assert decision["item"]["context"] == LEARN["learn-mixed"]["text"]
    assert mixed["beliefs"] == [] and "belief" not in {i["kind"] for i in mixed["learned"]}  # the contract's default
    assert sorted(r["memory_id"] for r in mixed["receipts"]) == sorted([fact["item"]["id"], decision["item"]["id"]])
    assert {r["created_by"] for r in mixed["receipts"]} == {"mcp:learn"}
    assert {r["source"] for r in mixed["receipts"]} == {"learn:user"}  # the contract's default source


def test_learn_keeps_beliefs_at_or_above_min_belief_confidence(session):
    kept = _data(session, "learn-beliefs")["beliefs"]  # 0.9, 0.7 kept; 0.4 ("Maybe") below the default 0.6
    assert sorted(b["extracted"]["proposition"] for b in kept) == ["the cache is warm", "the queue is slow"]
    assert all(b["reinforced"] is False and b["belief"]["proposition"] for b in kept)
    assert {b["belief"]["id"] for b in kept} <= {r["memory_id"] for r in _data(session, "learn-beliefs")["receipts"]}
    sure = _data(session, "learn-min-confidence")["beliefs"]
    assert [(b["extracted"]["proposition"], b["extracted"]["confidence"]) for b in sure] == [
        ("the backups run nightly", 0.9)]


def test_learn_answers_a_skill_and_the_source_given(session):
    [skill] = _data(session, "learn-skill")["skills"]
    assert skill["item"]["purpose"] == "deploy the site"
    assert skill["item"]["steps"] == ["build the image", "push it", "restart the pods"]
    given = _data(session, "learn-source")
    assert {r["source"] for r in given["receipts"]} == {"learn:slack"} and len(given["facts"]) == 1
    [preference] = given["preferences"]  # our extra bucket, not among the contract's receipts
    assert preference["item"]["object"] == "green tea" and preference["receipt"] not in given["receipts"]


# -- graph_search -----------------------------------------------------------------------------

def _names(nodes: list[dict]) -> set[str]:
    return {n["name"] for n in nodes}


def test_graph_search_by_query_answers_nodes_and_directed_edges(session):
    found = _data(session, "graph-query")
    ids = {n["name"]: n["id"] for n in found["nodes"]}
    assert {"Server Alpha", "Postgres", "Lisbon"} <= _names(found["nodes"]) and found["paths"] == []
    assert {"source_id": ids["Server Alpha"], "target_id": ids["Postgres"], "relation": "runs"} in [
        {k: e[k] for k in ("source_id", "target_id", "relation")} for e in found["edges"]]
    assert found["mode"] == "query" and found["entities"][0]["name"] == "Server Alpha"


def test_graph_search_finds_an_entity_by_hex_id_or_by_name(session):
    by_hex = _data(session, "graph-entity-hex")
    by_name = _data(session, "graph-entity-name")
    assert by_hex["entity"]["name"] == by_name["entity"]["name"] == "Server Alpha"
    assert by_hex["entity"]["id"] == by_name["entity"]["id"] == str(uuid.UUID(session[0]["graph-entity-hex"][0]
                                                                              ["entity_id"]))
    assert "resolved" not in by_hex and by_name["resolved"][0]["given"] == "serveralpha"
    assert _names(by_name["nodes"]) == {"Server Alpha", "Postgres", "Lisbon"} and len(by_name["edges"]) == 2


def test_a_path_found_by_names_ends_at_the_right_entities(session):
    found = _data(session, "graph-paths-names")
    assert [[n["name"] for n in path] for path in found["paths"]] == [["Server Alpha", "Lisbon", "Portugal"]]
    assert found["path_steps"][0]["length"] == 2  # our steps, renamed from paths
    by_ids = _data(session, "graph-paths-ids")
    assert [[n["name"] for n in path] for path in by_ids["paths"]] == [["Portugal", "Lisbon", "Server Alpha"]]
    assert by_ids["paths"][0][-1]["id"] == session[0]["graph-paths-ids"][0]["target_id"]
    lisbon = next(n["id"] for n in by_ids["nodes"] if n["name"] == "Lisbon")
    assert {(e["source_id"], e["relation"]) for e in by_ids["edges"]} == {
        (lisbon, "is in"), (by_ids["paths"][0][-1]["id"], "located in")}  # the facts' own direction


def test_graph_search_with_nothing_given_or_two_modes(session):
    empty = _data(session, "graph-all-empty")
    assert (empty["nodes"], empty["edges"], empty["paths"], empty["mode"]) == ([], [], [], "none") and empty["note"]
    both = _data(session, "graph-precedence")
    assert both["mode"] == "entity" and both["entity"]["name"] == "Server Alpha" and both["ignored"] == ["query"]


# -- route ------------------------------------------------------------------------------------

def test_route_stage_1_names_the_rule_and_the_whole_word_it_matched(session):
    hit = _data(session, "route-rules")
    assert (hit["stage"], hit["route"], hit["stage_name"], hit["retriever"]) == (1, "rules", "rules", "preferences")
    assert hit["rule_match"] == {"route": "preferences", "rule_name": "preferences", "matched_keyword": "prefer"}
    assert "green tea" in hit["results"][0]["content"]
    words = _data(session, "route-whole-words")  # "unlikely" holds "like", "footsteps" "steps", "report" "port"
    assert words["stage"] != 1 and words["trace"][0] == {"stage": "rules", "outcome": "no rule matched"}


def test_route_stage_2_answers_semantic_results_within_top_k_and_threshold(session):
    close = _data(session, "route-semantic")
    assert (close["stage"], close["route"], close["retriever"]) == (2, "semantic", "semantic")
    assert close["total"] == len(close["semantic_results"]) >= 1
    best = close["semantic_results"][0]
    assert best["payload"]["content"] == NOTE and 0.45 <= best["score"] <= 1
    one = _data(session, "route-top_k-threshold")
    assert one["stage"] == 2 and one["total"] == 1 and one["semantic_results"][0]["score"] >= 0.5


def test_route_stage_3_and_4(session):
    named = _data(session, "route-graph")
    assert (named["stage"], named["route"], named["stage_name"]) == (3, "graph", "graph")
    assert "Server Alpha" in _names(named["graph_result"]["entities"])
    assert {r["relation"] for r in named["graph_result"]["relations"]} >= {"runs", "located in"}
    for case in ("route-fallback", "route-defaults"):
        nothing = _data(session, case)
        assert (nothing["stage"], nothing["route"], nothing["answered"]) == (4, "llm_fallback", False)
        assert nothing["message"] == nothing["reason"]
    assert "empty" in _data(session, "route-defaults")["message"]


def test_route_takes_limit_as_the_earlier_name_of_top_k(session):
    aliased = _data(session, "route-limit-alias")
    assert aliased["stage"] == 1 and len(aliased["results"]) == 1
    both = session[0]["route-top_k-and-limit"][1]
    assert both.error and "top_k" in both.text and "limit" in both.text


# -- audit ------------------------------------------------------------------------------------

def test_audit_defaults_to_full_and_a_seeded_orphan_is_an_error(session):
    for case in ("audit-defaults", "audit-full"):
        answer = _data(session, case)
        assert answer["audit_type"] == "full" and answer["counts"]["orphans"] == 1
        assert [e for e in answer["errors"] if "fact_without_memory" in e] == [
            f"1 fact_without_memory (orphans), memory_id {uuid.UUID(hex=ORPHAN)}."]
    orphans = _data(session, "audit-orphans")
    assert orphans["errors"] == [f"1 fact_without_memory (orphans), memory_id {uuid.UUID(hex=ORPHAN)}."]
    assert set(orphans["counts"]) == {"orphans"}


def test_audit_consistency_runs_the_other_checks_and_finds_no_orphan(session):
    answer = _data(session, "audit-consistency")
    assert set(answer["counts"]) == {"receipts", "lifecycle", "graph_drift", "vector_drift"}
    assert answer["errors"] == [] and answer["ok"], answer["findings"]


def test_audit_confidence_stats_count_the_scopes_memories(session):
    _, seeded = session
    stats = _data(session, "audit-confidence")["stats"]["confidence"]
    assert stats["total"] == seeded["memories"] == sum(stats["buckets"].values())
    assert sorted(stats["low_confidence"]) == sorted(str(uuid.UUID(hex=m)) for m in seeded["low"])


def test_audit_accepts_our_finer_types_and_refuses_an_unknown_one(session):
    assert set(_data(session, "audit-receipts")["counts"]) == {"receipts"}
    assert _data(session, "audit-all")["counts"] == _data(session, "audit-full")["counts"]
    unknown = session[0]["audit-unknown"][1]
    assert unknown.error and "choose one of full, consistency, orphans" in unknown.text
    one_end = session[0]["graph-one-end"][1]
    assert one_end.error and "needs both source_id and target_id" in one_end.text
