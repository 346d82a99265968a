"""The CMMS 0.11 contracts of the belief tools (set_belief, get_belief, resolve_conflict, reflect)
through one MCP client session (in memory, against the real server object) with the default
embedder: every case's input is valid under its contract, every answer validates against the
contract's output (reflect's also against its mode's output_definitions; our extra keys
tolerated), shows no stored (hex) id, and says what the case asked for."""
from __future__ import annotations

import pytest

from contract_harness import DOCS, errors, first_case_of_each_tool, hex_ids, module_home, sampled
from inprocess import memory_bridge
from mcp_client import input_schema, run

pytestmark = pytest.mark.store

PAIRS = {  # seeded conflicts, one per resolution case: (a, confidence), (b, confidence)
    "resolve-keep_b": (("Redis is fast", 0.7), ("Redis is not fast", 0.6)),
    "resolve-merge": (("Alice likes tea", 0.9), ("Alice doesn't like tea", 0.6)),
    "resolve-discard_both": (("Carol works at Acme", 0.7), ("Carol no longer works at Acme", 0.7)),
    "resolve-auto_resolve": (("Kafka is simple", 0.6), ("Kafka is complicated", 0.5)),
    "resolve-merge-longest": (("Zed is fast", 0.7), ("Zed is not fast", 0.6)),
}
MD5 = "d41d8cd98f00b204e9800998ecf8427e"  # an outside reference that looks like a stored id
SET = {  # "<id:KEY>": an id answered before (a seeded fact or belief, or a case's belief), dashed
    "set-minimal": {"proposition": "The staging API is stable"},
    "set-sources": {"proposition": "Postgres suits Server Alpha", "confidence": 0.8, "tags": ["infra"],
                    "source": "slack", "sources": [{"source_type": "fact", "source_id": "<id:fact>", "weight": 0.9},
                                                   {"source_type": "observation", "source_id": "ticket-12"}]},
    "set-replace": {"proposition": "Deploys are daily", "replace_belief_id": "<id:weekly>"},
    "set-reinforce": {"proposition": "I think the staging API is stable", "confidence": 0.9},
    "set-negation": {"proposition": "The staging API is not stable", "confidence": 0.3},
}
GET = {
    "get-defaults": {},
    "get-full": {"proposition": "Postgres database for Server Alpha", "lifecycle_state": "active",
                 "min_confidence": 0.5, "limit": 5},
    "get-creator": {"creator": "mcp", "lifecycle_state": "superseded"},
    "get-source_id": {"source_id": "ticket-12"},
    "get-tags": {"tags": ["infra"], "source": "slack"},
    "get-contradicted": {"lifecycle_state": "contradicted", "limit": 100},
}
RESOLVE = {
    "resolve-keep_a": {"belief_a_id": "<id:set-minimal>", "belief_b_id": "<id:set-negation>", "resolution": "keep_a"},
    "resolve-keep_b": {"belief_a_id": "<id:resolve-keep_b:a>", "belief_b_id": "<id:resolve-keep_b:b>",
                       "resolution": "keep_b"},
    "resolve-merge": {"belief_a_id": "<id:resolve-merge:a>", "belief_b_id": "<id:resolve-merge:b>",
                      "resolution": "merge", "new_proposition": "Alice likes green tea only"},
    "resolve-discard_both": {"belief_a_id": "<id:resolve-discard_both:a>",
                             "belief_b_id": "<id:resolve-discard_both:b>", "resolution": "discard_both"},
    "resolve-auto_resolve": {"belief_a_id": "<id:resolve-auto_resolve:a>",
                             "belief_b_id": "<id:resolve-auto_resolve:b>", "resolution": "keep_a", "auto_resolve": True},
}
REFLECT = {f"reflect-{mode}": {"mode": mode} for mode in DOCS["reflect"]["input"]["properties"]["mode"]["enum"]}
REFLECT["reflect-defaults"] = {}
REFLECT["reflect-relations-filtered"] = {"mode": "relations", "topic": "api", "min_confidence": 0.1, "limit": 0,
                                         "context": "prod", "strict_same_context": False}
LATE = {  # run after the others (and EXTENDED): they would change what those find
    "set-longest": ("set_belief", {"proposition": "x" * 2048}),
    "set-outside-ids": ("set_belief", {"proposition": "The checksum names Server Alpha's image", "sources": [
        {"source_type": "observation", "source_id": MD5}, {"source_type": "fact", "source_id": "<id:fact>"},
        {"source_type": "fact", "source_id": "<id:fact:hex>"}]}),
    "resolve-merge-longest": ("resolve_conflict", {"belief_a_id": "<id:resolve-merge-longest:a>",
                                                   "belief_b_id": "<id:resolve-merge-longest:b>",
                                                   "resolution": "merge", "new_proposition": "y" * 2048}),
    "get-paged": ("get_belief", {"limit": 1}),
    "set-staging": ("set_belief", {"proposition": "The API is not stable in production",
                                   "tags": ["context:staging", "api"]}),
    "reflect-relations-loose": ("reflect", {"mode": "relations", "strict_same_context": False}),
    "reflect-contradictions-late": ("reflect", {"mode": "contradictions"}),
}
CASES = {**{c: ("set_belief", a) for c, a in SET.items()}, **{c: ("get_belief", a) for c, a in GET.items()},
         **{c: ("resolve_conflict", a) for c, a in RESOLVE.items()}, **{c: ("reflect", a) for c, a in REFLECT.items()}}
EXTENDED = {  # our earlier names (aliases) and extensions beside the contract's inputs
    "set-alias-text": ("set_belief", {"text": "Bob likes coffee", "supersedes": "<id:coffee>", "confidence": 0.7}),
    "resolve-alias-auto": ("resolve_conflict", {"belief_a": "<id:resolve-keep_a-again:a>",
                                                "belief_b": "<id:resolve-keep_a-again:b>", "strategy": "auto"}),
    "get-state": ("get_belief", {"state": "superseded", "limit": 100}),
    "merge-without-text": ("resolve_conflict", {"belief_a_id": "<id:resolve-keep_a-again:a>",
                                                "belief_b_id": "<id:resolve-keep_a-again:b>", "resolution": "merge"}),
    "merge-again": ("resolve_conflict", {"belief_a_id": "<id:resolve-merge:a>", "belief_b_id": "<id:resolve-merge:b>",
                                         "resolution": "merge", "new_proposition": "Alice likes black tea"}),
    "resolve-empty-ids": ("resolve_conflict", {"belief_a_id": "", "belief_b_id": "", "resolution": "keep_a"}),
}


def _filled(args: dict, ids: dict[str, str]) -> dict:
    """The case's arguments with the id placeholders filled in."""
    def one(value):
        if isinstance(value, str) and value.startswith("<id:") and value.endswith(">"):
            return ids[value[4:-1]]
        if isinstance(value, list):
            return [one(v) for v in value]
        if isinstance(value, dict):
            return {k: one(v) for k, v in value.items()}
        return value
    return {key: one(value) for key, value in args.items()}


async def _seed(bridge) -> dict[str, str]:
    """The facts and beliefs the cases name, by key; their ids as answered (dashed)."""
    ids = {"fact": (await bridge.ok("remember", subject="Server Alpha", predicate="runs", object="Postgres"))["id"]}
    ids["fact:hex"] = ids["fact"].replace("-", "")
    ids["weekly"] = (await bridge.ok("set_belief", proposition="Deploys are weekly", confidence=0.6))["belief"]["id"]
    ids["coffee"] = (await bridge.ok("set_belief", proposition="Bob likes tea"))["belief"]["id"]
    await bridge.ok("set_belief", proposition="The API is stable in production", tags=["context:prod", "api"])
    for case, pair in {**PAIRS, "resolve-keep_a-again": (("Vim is great", 0.6), ("Vim is not great", 0.5))}.items():
        for side, (text, confidence) in zip("ab", pair):
            ids[f"{case}:{side}"] = (await bridge.ok("set_belief", proposition=text, confidence=confidence))["belief"]["id"]
    return ids


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """{case: (args, Result)} of every case, and what the seeding wrote."""
    with module_home(tmp_path_factory, "contracts_beliefs") as home:
        async def main():
            out = {}
            async with memory_bridge(home) as bridge:
                tools = await bridge.tools()
                ids = await _seed(bridge)
                for case, (tool, args) in {**CASES, **EXTENDED, **LATE}.items():
                    args = _filled(args, ids)
                    out[case] = (args, await bridge.call(tool, **args))
                    if tool == "set_belief" and not out[case][1].error:
                        ids[case] = out[case][1].data["belief"]["id"]
            return out, {"tools": tools, "ids": ids}

        return run(main())


SDK_SAMPLES = first_case_of_each_tool({case: tool for case, (tool, _) in CASES.items()})


@pytest.mark.parametrize("case", sampled([*CASES, *LATE], SDK_SAMPLES))
def test_the_case_is_valid_and_its_answer_is_the_contracts(session, case):
    out, _ = session
    args, result = out[case]
    tool = {**CASES, **LATE}[case][0]
    assert errors(tool, args, part="input", strict=True) == []
    assert not result.error, result.text
    assert errors(tool, result.data) == []
    if tool == "reflect":
        assert errors("reflect", result.data, mode=args.get("mode", "overview")) == []
    assert hex_ids(result.data, given=frozenset({MD5})) == []


def _data(session, case: str) -> dict:
    args, result = session[0][case]
    assert not result.error, result.text
    return result.data


@pytest.mark.quick
def test_set_belief_advertises_the_contracts_source_types(session):
    tools = session[1]["tools"]
    items = input_schema(tools["set_belief"])["properties"]["sources"]["items"]
    assert items["properties"]["source_type"]["enum"] == ["fact", "decision", "observation", "user_statement"]


# -- set_belief -------------------------------------------------------------------------------

def test_set_belief_applies_the_contracts_defaults(session):
    made = _data(session, "set-minimal")
    belief = made["belief"]
    assert (made["action"], belief["confidence"], belief["source"], belief["creator"], belief["lifecycle_state"]) == \
        ("created", 0.5, "system", "mcp:set_belief", "active")
    assert (belief["proposition"], belief["proposition_key"], belief["version"]) == \
        ("The staging API is stable", "staging api is stable", 1)
    assert (made["receipt"]["memory_type"], made["receipt"]["memory_id"], made["receipt"]["created_by"]) == \
        ("belief", belief["id"], "mcp:set_belief")
    assert "superseded" not in made and made["superseded_ids"] == []  # nothing replaced: no key, never null


def test_set_belief_stores_its_sources_a_memory_cited_and_a_reference_kept(session):
    belief = _data(session, "set-sources")["belief"]
    fact = session[1]["ids"]["fact"]
    assert belief["source_ids"] == [fact, "ticket-12"] and (belief["source"], belief["tags"]) == ("slack", ["infra"])
    cited = {e["source_type"]: e for e in belief["evidence"]}
    assert (cited["fact"]["memory_id"], cited["fact"]["weight"]) == (fact, 0.9)
    assert (cited["observation"]["memory_id"], cited["observation"]["source_ref"], cited["observation"]["weight"]) == \
        (None, "ticket-12", 0.5)


def test_replace_belief_id_supersedes_and_answers_the_old_belief(session):
    replaced = _data(session, "set-replace")
    weekly = session[1]["ids"]["weekly"]
    assert replaced["action"] == "superseded" and replaced["superseded_ids"] == [weekly]
    assert (replaced["superseded"]["id"], replaced["superseded"]["proposition"],
            replaced["superseded"]["lifecycle_state"]) == (weekly, "Deploys are weekly", "superseded")
    assert replaced["belief"]["lifecycle_state"] == "active"


def test_the_same_proposition_reinforces_and_its_negation_contradicts(session):
    again, minimal = _data(session, "set-reinforce"), _data(session, "set-minimal")
    assert (again["action"], again["belief"]["id"], again["belief"]["version"]) == \
        ("reinforced", minimal["belief"]["id"], 2)
    negation = _data(session, "set-negation")["belief"]
    assert negation["lifecycle_state"] == "contradicted" and negation["contested_by"] == [minimal["belief"]["id"]]


def test_the_earlier_argument_names_still_work(session):
    old = _data(session, "set-alias-text")
    assert (old["action"], old["belief"]["proposition"], old["superseded"]["id"]) == \
        ("superseded", "Bob likes coffee", session[1]["ids"]["coffee"])
    auto = _data(session, "resolve-alias-auto")
    assert (auto["strategy"], auto["resolution"], auto["rule"]) == ("auto", "keep_a", "confidence")


# -- get_belief -------------------------------------------------------------------------------

def test_get_belief_defaults_to_the_active_beliefs_and_answers_the_query_used(session):
    found = _data(session, "get-defaults")
    assert found["query"] == {"proposition": "", "lifecycle_state": "active", "limit": 10, "offset": 0}
    active = [b["proposition"] for b in found["beliefs"]]  # newest first; the negated pairs are contradicted
    assert found["total"] == 6 and active == ["Deploys are daily", "Postgres suits Server Alpha", "Kafka is complicated",
                                               "Kafka is simple", "The API is stable in production", "Bob likes tea"]
    assert {b["lifecycle_state"] for b in found["beliefs"]} == {"active"}


def test_get_belief_by_proposition_and_confidence_finds_the_best_first(session):
    found = _data(session, "get-full")
    assert found["beliefs"][0]["proposition"] == "Postgres suits Server Alpha"
    assert all(b["confidence"] >= 0.5 and b["lifecycle_state"] == "active" for b in found["beliefs"])
    assert found["query"]["min_confidence"] == 0.5 and found["total"] == len(found["beliefs"]) <= 5


def test_get_belief_filters_by_creator_source_id_tags_and_lifecycle_state(session):
    ids = session[1]["ids"]
    creator = _data(session, "get-creator")
    assert [b["id"] for b in creator["beliefs"]] == [ids["weekly"]]
    assert all(b["creator"] == "mcp:set_belief" for b in creator["beliefs"])
    assert [b["id"] for b in _data(session, "get-source_id")["beliefs"]] == [ids["set-sources"]]
    assert [b["id"] for b in _data(session, "get-tags")["beliefs"]] == [ids["set-sources"]]
    contradicted = {b["id"] for b in _data(session, "get-contradicted")["beliefs"]}
    assert {ids["set-minimal"], ids["set-negation"]} <= contradicted  # before the keep_a case
    assert ids["weekly"] in {b["id"] for b in _data(session, "get-state")["beliefs"]}  # state: any lifecycle_state


# -- resolve_conflict -------------------------------------------------------------------------

@pytest.mark.quick
def test_keep_a_leaves_b_discarded_and_keep_b_the_reverse(session):
    ids = session[1]["ids"]
    kept = _data(session, "resolve-keep_a")
    assert (kept["resolution"], kept["belief_a"]["lifecycle_state"], kept["belief_b"]["lifecycle_state"]) == \
        ("keep_a", "active", "discarded")
    assert not kept["belief_b"].get("superseded_by") and "created" not in kept
    assert sorted((e["belief_id"], e["from_state"], e["to_state"]) for e in kept["events"]) == sorted(
        [(ids["set-minimal"], "contradicted", "active"), (ids["set-negation"], "contradicted", "discarded")])
    assert kept["receipt"]["memory_id"] == ids["set-minimal"]
    other = _data(session, "resolve-keep_b")
    assert (other["belief_a"]["lifecycle_state"], other["belief_b"]["lifecycle_state"]) == ("discarded", "active")


def test_merge_keeps_both_active_settles_their_conflict_and_creates_the_merged_belief(session):
    merged = _data(session, "resolve-merge")
    a, b, created = merged["belief_a"]["id"], merged["belief_b"]["id"], merged["created"]["id"]
    assert merged["created"]["proposition"] == "Alice likes green tea only"
    assert [merged[k]["lifecycle_state"] for k in ("belief_a", "belief_b", "created")] == ["active"] * 3
    assert (merged["belief_a"]["contested_by"], merged["belief_b"]["contested_by"]) == ([], [])
    assert [(e["belief_id"], e["from_state"], e["to_state"]) for e in merged["events"]] == [
        (a, "contradicted", "active"), (b, "contradicted", "active"), (created, "none", "active")]
    assert (merged["created"]["merged_from_ids"], merged["belief_a"]["settled_with_ids"]) == ([a, b], [b])
    later = _data(session, "reflect-contradictions")  # after every resolution
    assert (a, b) not in {(p["belief_a_id"], p["belief_b_id"]) for p in later["contradictions"]}
    again = session[0]["merge-again"][1]
    assert again.error and again.text.endswith(f"Beliefs {a} and {b} were settled already, by the merge into "
                                               f"{created}.")
    refused = session[0]["merge-without-text"][1]
    assert refused.error and refused.text.endswith("A merge needs the text of the merged belief (new_proposition).")
    empty = session[0]["resolve-empty-ids"][1]
    assert empty.error and empty.text.endswith("Missing required argument 'belief_a_id'.")


def test_discard_both_and_auto_resolve_within_the_gap(session):
    discarded = _data(session, "resolve-discard_both")
    assert [discarded[k]["lifecycle_state"] for k in ("belief_a", "belief_b")] == ["discarded", "discarded"]
    assert {e["to_state"] for e in discarded["events"]} == {"discarded"}
    auto = _data(session, "resolve-auto_resolve")  # 0.6 against 0.5: within 0.5, so both contradicted
    assert (auto["resolution"], auto["belief_a"]["lifecycle_state"], auto["belief_b"]["lifecycle_state"]) == \
        ("contradicted", "contradicted", "contradicted")
    assert [(e["from_state"], e["to_state"]) for e in auto["events"]] == [("active", "contradicted")] * 2


# -- reflect ----------------------------------------------------------------------------------

def test_reflect_overview_counts_by_the_contracts_lifecycle_states(session):
    overview, default = _data(session, "reflect-overview"), _data(session, "reflect-defaults")
    assert default["mode"] == "overview" and default["total_beliefs"] == overview["total_beliefs"]
    assert sum(overview["by_lifecycle_state"].values()) == overview["total_beliefs"] == overview["analysed"]
    discarded = overview["by_lifecycle_state"]["discarded"]  # discard_both's two, the losers of keep_a and keep_b
    assert discarded == 4 and overview["contradiction_count"] >= 2


def test_reflect_relations_finds_the_seeded_contradiction(session):
    ids = session[1]["ids"]
    found = _data(session, "reflect-relations")
    pairs = {(r["belief_a_id"], r["belief_b_id"]): r for r in found["relations"] if r["relation"] == "contradiction"}
    vim = pairs[(ids["resolve-keep_a-again:a"], ids["resolve-keep_a-again:b"])]  # resolved only later
    assert (vim["proposition_a"], vim["detection_method"], vim["same_context"]) == ("Vim is great", "keyword", True)
    assert (ids["resolve-merge:a"], ids["resolve-merge:b"]) not in pairs  # settled by the merge
    assert (ids["resolve-auto_resolve:a"], ids["resolve-auto_resolve:b"]) in pairs  # declared by auto_resolve
    assert found["total"] == found["contradictions"] + found["entailments"] + found["neutral_pairs"]
    assert found["analysed"] <= 50 and found["strict_same_context"] is True


def test_reflect_applies_topic_limit_and_the_context_gate(session):
    filtered = _data(session, "reflect-relations-filtered")
    assert filtered["context"] == "prod" and filtered["strict_same_context"] is False
    assert filtered["analysed"] == 1  # only "The API is stable in production" is tagged api
    contradictions = _data(session, "reflect-contradictions")
    assert contradictions["total"] == len(contradictions["contradictions"]) >= 2
    assert contradictions["recommendation"].startswith(f"{contradictions['total']} contradiction(s)")
    confidence = _data(session, "reflect-confidence")
    assert sum(confidence["histogram"].values()) == len(confidence["beliefs"])


# -- after the others ---------------------------------------------------------------------------

def test_a_proposition_of_2048_characters_is_taken_by_set_belief_and_merge(session):
    assert _data(session, "set-longest")["belief"]["proposition"] == "x" * 2048
    merged = _data(session, "resolve-merge-longest")
    assert (merged["resolution"], merged["created"]["proposition"]) == ("merge", "y" * 2048)


def test_an_outside_reference_is_shown_as_given_and_a_memory_cited_twice_is_one_row(session):
    fact = session[1]["ids"]["fact"]
    belief = _data(session, "set-outside-ids")["belief"]
    assert belief["source_ids"] == [MD5, fact]  # the md5 is no memory of the scope: kept as given
    assert [(e["source_type"], e["memory_id"], e["source_ref"]) for e in belief["evidence"]] == \
        [("fact", fact, ""), ("observation", None, MD5)]


def test_get_belief_total_is_the_beliefs_returned_and_matched_all_that_match(session):
    paged = _data(session, "get-paged")
    assert (len(paged["beliefs"]), paged["total"]) == (1, 1) and paged["matched"] > 1


def test_reflect_relations_across_contexts_says_they_are_not_in_the_same_context(session):
    loose = _data(session, "reflect-relations-loose")
    api = [r for r in loose["relations"] if r["proposition_a"] == "The API is stable in production"
           and r["relation"] == "contradiction"]
    assert [r["same_context"] for r in api] == [False]  # prod against staging, rated without the gate
    found = [r for r in loose["relations"] if r["relation"] == "contradiction"]
    same = sum(r["same_context"] for r in found)
    assert 0 < same < len(found) == loose["contradictions"]
    assert loose["recommendation"] == (f"{len(found)} contradiction(s), {same} of them in the same context: "
                                       "settle them with resolve_conflict.")
