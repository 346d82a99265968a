"""The memser tools keep the seed's documented arguments and answer the shapes the README gives,
checked against local schemas (tests/contracts_memser/, JSON Schema 2020-12: the memser seed
published none) through one MCP client session (in memory, against the real server object);
`metrics`' shape; and the other two doors' ids: the Hermes tools and `hermes-cmms` show ids
dashed and take them in either form, and the Hermes tools refuse an argument they do not take."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from contract_harness import FORMATS, first_case_of_each_tool, hex_ids, module_home, sampled
from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.ids import stored_id
from hermes_cmms.provider import CmmsMemoryProvider
from inprocess import cli, memory_bridge
from mcp_client import run

SCHEMAS = Path(__file__).resolve().parents[1] / "contracts_memser"
DOCS = {p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(SCHEMAS.glob("*.schema.json"))}
TOOLS = ("store_memory", "recall_memory", "forget_memory", "list_memories", "consolidate_memories", "audit_log")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SCOPE = "user:telegram:42"
EPISODE = ["I walked the dog along the beach this morning.",
           "This morning I took the dog for a walk on the beach.",
           "The dog and I went walking on the beach early today.",
           "Walked my dog on the beach this morning, it was lovely."]


def schema_errors(tool: str, value, part: str = "output") -> list[str]:
    """Why `value` is not valid under the local schema's `part` (strict: no extra keys at the top)."""
    registry = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012)) for doc in DOCS.values())
    doc = DOCS[tool]
    validator = Draft202012Validator({"$schema": doc["$schema"], "$id": doc["$id"], **doc[part]},
                                     registry=registry, format_checker=FORMATS)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
            for e in validator.iter_errors(value)]


@pytest.mark.quick
def test_the_local_schemas_are_valid_2020_12_and_cover_the_memser_tools():
    assert set(DOCS) == {*TOOLS, "common"}
    for doc in DOCS.values():
        Draft202012Validator.check_schema(doc)
    assert schema_errors("store_memory", {"stored": True, "reinforced": False, "id": "ab" * 16, "scope": "s",
                                          "tier": "semantic", "kind": "note", "supersedes": []})  # a hex id fails


# -- one bridge session for the module ------------------------------------------------------------

CASES = ("store_memory/minimal", "store_memory/repeat_reinforces", "store_memory/tags_source_actor",
         "store_memory/ttl_seconds",
         "recall_memory/query", "recall_memory/k", "recall_memory/tags",
         "list_memories/all", "list_memories/tier_working", "list_memories/page",
         "consolidate_memories/session", "consolidate_memories/nothing_new",
         "list_memories/semantic_state",
         "forget_memory/dashed_id", "forget_memory/stored_hex_id", "forget_memory/tags",
         "audit_log/scope", "audit_log/memory_id_dashed", "audit_log/memory_id_stored_hex", "audit_log/action")


async def _session(home) -> dict:
    cases: dict = {}
    async with memory_bridge(home) as bridge:
        async def case(case_id: str, **args) -> dict:
            result = await bridge.call(case_id.split("/")[0], **args)
            cases[case_id] = (args, result)
            return result.data or {}

        gate = await case("store_memory/minimal", content="The gate code changes on Mondays.", scope=SCOPE)
        await case("store_memory/repeat_reinforces", content="the gate code changes on mondays. ", scope=SCOPE,
                   actor="ops-bot")
        boiler = await case("store_memory/tags_source_actor", content="The boiler service is booked for March 3.",
                            scope=SCOPE, tags=["house", "boiler"], source="slack", actor="ops-bot")
        permit = await case("store_memory/ttl_seconds", content="The parking permit code for today is 4471.",
                            scope=SCOPE, ttl_seconds=3600)
        await case("recall_memory/query", query="gate code", scope=SCOPE)
        await case("recall_memory/k", query="walked the dog on the beach", scope=SCOPE, k=2)
        await case("recall_memory/tags", query="boiler service", scope=SCOPE, tags=["boiler"])
        await case("list_memories/all", scope=SCOPE)
        await case("list_memories/tier_working", scope=SCOPE, tier="working")
        await case("list_memories/page", scope=SCOPE, limit=2, offset=1)
        await case("consolidate_memories/session", scope=SCOPE, session_id="walks", actor="curator")
        await case("consolidate_memories/nothing_new", scope=SCOPE, session_id="walks")
        await case("list_memories/semantic_state", scope=SCOPE, tier="semantic", state="active")
        await case("forget_memory/dashed_id", scope=SCOPE, memory_id=gate.get("id"), actor="ops-bot")
        await case("forget_memory/stored_hex_id", scope=SCOPE, memory_id=stored_id(permit.get("id")))
        await case("forget_memory/tags", scope=SCOPE, tags=["boiler"])
        await case("audit_log/scope", scope=SCOPE, limit=200)
        await case("audit_log/memory_id_dashed", scope=SCOPE, memory_id=gate.get("id"))
        await case("audit_log/memory_id_stored_hex", scope=SCOPE, memory_id=stored_id(gate.get("id")))
        await case("audit_log/action", scope=SCOPE, action="forget", limit=2)
        cases["metrics"] = ({}, await bridge.call("metrics"))
        cases["seeded"] = {"gate": gate, "boiler": boiler, "permit": permit}
    return cases


SDK_SAMPLES = {**first_case_of_each_tool({case: case.split("/")[0] for case in CASES}),
               "metrics": "test_metrics_answers_the_prometheus_exposition_of_this_bridge"}  # a test of its own


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    with module_home(tmp_path_factory, "memser") as home:
        with MemoryService(Settings.load(home)) as service:  # an episode Hermes retained, to consolidate
            for i, text in enumerate(EPISODE):
                service.retain_turn(SCOPE, "walks", text, f"Noted ({i}).")
            assert service.upkeep.drain(120)
        return run(_session(home))


def _check_store_minimal(data, cases):
    assert (data["stored"], data["reinforced"], data["scope"], data["kind"]) == (True, False, SCOPE, "note")
    assert data["supersedes"] == []


def _check_store_repeat(data, cases):
    assert (data["stored"], data["reinforced"], data["id"]) == (False, True, cases["seeded"]["gate"]["id"])


def _check_store_tags(data, cases):
    [item] = [m for m in _data(cases, "list_memories/all")["memories"] if m["id"] == data["id"]]
    assert item["tags"] == ["house", "boiler"] and item["source"] == "slack by ops-bot"


def _check_store_ttl(data, cases):
    assert data["tier"] == "working"


def _check_recall_query(data, cases):
    assert data["scope"] == SCOPE and data["results"][0]["id"] == cases["seeded"]["gate"]["id"]


def _check_recall_k(data, cases):
    assert len(data["results"]) == 2 and all("beach" in r["content"] for r in data["results"])


def _check_recall_tags(data, cases):
    assert [r["id"] for r in data["results"]] == [cases["seeded"]["boiler"]["id"]]


def _check_list_all(data, cases):
    assert data["total"] == len(data["memories"]) == 2 * len(EPISODE) + 3  # the turns and three notes
    assert (data["limit"], data["offset"]) == (50, 0)  # the defaults
    times = [m["created_at"] for m in data["memories"]]
    assert times == sorted(times, reverse=True)  # newest first
    gate = next(m for m in data["memories"] if m["id"] == cases["seeded"]["gate"]["id"])
    assert gate["reinforcements"] == 1


def _check_list_working(data, cases):
    [item] = data["memories"]
    assert item["id"] == cases["seeded"]["permit"]["id"] and item["expires_at"] > item["created_at"]


def _check_list_page(data, cases):
    everything = _data(cases, "list_memories/all")
    assert data["total"] == everything["total"] and (data["limit"], data["offset"]) == (2, 1)
    assert [m["id"] for m in data["memories"]] == [m["id"] for m in everything["memories"][1:3]]


def _check_consolidate(data, cases):
    assert data["scope"] == SCOPE and data["clusters"] >= 1 and data["consolidated"] >= 3
    assert len(data["summaries"]) == data["clusters"]


def _check_nothing_new(data, cases):
    assert (data["clusters"], data["consolidated"], data["summaries"]) == (0, 0, [])


def _check_list_semantic(data, cases):
    summaries = {m["id"] for m in data["memories"] if m["kind"] == "summary"}
    assert summaries == set(_data(cases, "consolidate_memories/session")["summaries"])
    assert all((m["tier"], m["state"]) == ("semantic", "active") for m in data["memories"])


def _check_forget_dashed(data, cases):
    assert (data["forgotten"], data["ids"], data["scope"]) == (1, [cases["seeded"]["gate"]["id"]], SCOPE)


def _check_forget_hex(data, cases):
    assert (data["forgotten"], data["ids"]) == (1, [cases["seeded"]["permit"]["id"]])  # shown dashed


def _check_forget_tags(data, cases):
    assert (data["forgotten"], data["ids"]) == (1, [cases["seeded"]["boiler"]["id"]])


def _check_audit_scope(data, cases):
    actions = [e["action"] for e in data["events"]]
    assert {"remember", "reinforce", "forget", "tool"} <= set(actions)
    times = [e["at"] for e in data["events"]]
    assert times == sorted(times, reverse=True) and "gate code" not in json.dumps(data)  # content stays off MCP


def _check_audit_dashed(data, cases):
    gate = cases["seeded"]["gate"]["id"]
    assert data["events"] and all(e["memory_id"] == gate for e in data["events"])
    assert [e["action"] for e in data["events"]] == ["forget", "reinforce", "remember"]
    forget = data["events"][0]
    assert forget["actor"] == "mcp:forget_memory by ops-bot" and forget["snapshot_kept"]


def _check_audit_hex(data, cases):
    assert data["events"] == _data(cases, "audit_log/memory_id_dashed")["events"]


def _check_audit_action(data, cases):
    assert [e["action"] for e in data["events"]] == ["forget", "forget"]  # three forgets, limit 2
    assert data["events"][0]["memory_id"] == cases["seeded"]["boiler"]["id"]  # newest first


CHECKS = dict(zip(CASES, (
    _check_store_minimal, _check_store_repeat, _check_store_tags, _check_store_ttl,
    _check_recall_query, _check_recall_k, _check_recall_tags,
    _check_list_all, _check_list_working, _check_list_page,
    _check_consolidate, _check_nothing_new, _check_list_semantic,
    _check_forget_dashed, _check_forget_hex, _check_forget_tags,
    _check_audit_scope, _check_audit_dashed, _check_audit_hex, _check_audit_action)))


def _data(cases, case_id: str) -> dict:
    args, result = cases[case_id]
    assert not result.error, (case_id, result.text)
    return result.data


@pytest.mark.store
@pytest.mark.parametrize("case_id", sampled(CASES, SDK_SAMPLES))
def test_a_memser_tool_answers_its_documented_shape(answers, case_id):
    tool = case_id.split("/")[0]
    args, result = answers[case_id]
    assert schema_errors(tool, args, part="input") == []  # the case is valid under the documented arguments
    assert not result.error, result.text
    assert schema_errors(tool, result.data) == []
    assert hex_ids(result.data) == []
    CHECKS[case_id](result.data, answers)


@pytest.mark.store
@pytest.mark.sdk_sample
def test_metrics_answers_the_prometheus_exposition_of_this_bridge(answers):
    from prometheus_client.parser import text_string_to_metric_families

    _, result = answers["metrics"]
    assert not result.error, result.text
    assert set(result.data) == {"format", "exposition"} and result.data["format"] == "prometheus-text-0.0.4"
    families = {f.name: f for f in text_string_to_metric_families(result.data["exposition"])}
    calls = {s.labels["tool"]: s.value for s in families["cmms_tool_calls"].samples
             if s.name.endswith("_total") and s.labels.get("door") == "mcp"}
    assert calls["store_memory"] == 4 and calls["list_memories"] == 4
    assert "cmms_memories" in families and hex_ids(result.data) == []


# -- the Hermes tools -----------------------------------------------------------------------------

def _hermes(home) -> CmmsMemoryProvider:
    provider = CmmsMemoryProvider()
    provider.initialize("s1", hermes_home=str(home), platform="telegram", user_id="42", agent_context="primary")
    return provider


def _tool(provider, name: str, **args) -> dict:
    return json.loads(provider.handle_tool_call(name, args))


@pytest.mark.store
def test_the_hermes_tools_show_ids_dashed_and_take_them_in_either_form(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    p = _hermes(home)
    try:
        kayak = _tool(p, "cmms_remember", content="I keep the red kayak in the garage.", tags=["boats"])
        tent = _tool(p, "cmms_remember", content="The tent poles are in the garage loft.")
        found = _tool(p, "cmms_recall", query="garage", limit=5)
        belief = _tool(p, "cmms_belief", text="the garage is too small for the kayak", confidence=0.7)
        graph = _tool(p, "cmms_graph", query="Where is the red kayak?")
        by_hex = _tool(p, "cmms_forget", memory_id=stored_id(kayak["id"]))  # as stored: 32 hex digits
        by_dash = _tool(p, "cmms_forget", memory_id=tent["id"].upper())  # as shown, any case
        again = _tool(p, "cmms_recall", query="garage", limit=5)
    finally:
        p.shutdown()
    assert UUID.match(kayak["id"]) and UUID.match(tent["id"]) and UUID.match(belief["id"])
    assert {r["id"] for r in found["results"]} == {kayak["id"], tent["id"]}
    assert by_hex == {"forgotten": True, "id": kayak["id"], "vectors_pending": 0}
    assert by_dash == {"forgotten": True, "id": tent["id"], "vectors_pending": 0}
    assert [r["id"] for r in again["results"]] == [belief["id"]]  # the belief about the garage is left
    assert hex_ids([kayak, tent, found, belief, graph, by_hex, by_dash]) == []
    assert all(r["session_id"] == "s1" for r in found["results"])  # Hermes' session id, as Hermes gave it


@pytest.mark.store
@pytest.mark.parametrize("tool, args, takes", [
    ("cmms_recall", {"query": "kayak", "x": 1}, "query, limit, route"),
    ("cmms_remember", {"content": "a note", "x": 1}, "content, tags"),
    ("cmms_forget", {"memory_id": "nope", "x": 1}, "memory_id"),
    ("cmms_belief", {"text": "it is stable", "x": 1}, "text, confidence, evidence"),
    ("cmms_graph", {"query": "Ana", "x": 1}, "query"),
])
def test_a_hermes_tool_refuses_an_argument_it_does_not_take(home, monkeypatch, tool, args, takes):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    p = _hermes(home)
    try:
        answer = _tool(p, tool, **args)
        stored = _tool(p, "cmms_recall", query="note stable kayak")
    finally:
        p.shutdown()
    assert answer == {"error": f"{tool} takes {takes}; 'x' is not one of them."}
    assert stored == {"results": []}  # refused before anything was done


# -- the command line -----------------------------------------------------------------------------

def _cli(home, *args):
    return cli(home, *args, env={"CMMS_EMBEDDER": "none"})


@pytest.mark.store
def test_hermes_cmms_shows_ids_dashed_and_takes_them_in_either_form(home):
    with MemoryService(Settings.load(home, embedder="none")) as service:
        ids = [service.remember("local:default", f"Pier {n} is where the boat is moored.") for n in (7, 8, 9)]
    shown = [str(__import__("uuid").UUID(hex=i)) for i in ids]
    found = json.loads(_cli(home, "search", "pier boat", "--json").stdout)
    assert {r["id"] for r in found["results"]} == set(shown) and hex_ids(found) == []
    text = _cli(home, "search", "pier boat").stdout
    assert {line.split()[0] for line in text.splitlines()} == set(shown)
    learned = json.loads(_cli(home, "learn", "Ana works at Acme. We decided to use Postgres because it is "
                                            "reliable.", "--json").stdout)
    assert learned["learned"] and hex_ids(learned) == [] and UUID.match(learned["id"])
    found = json.loads(_cli(home, "graph", "search", "Ana").stdout)
    ana = next(e["id"] for e in found["entities"] if e["name"] == "Ana")
    entity = json.loads(_cli(home, "graph", "entity", ana).stdout)  # an id as shown is taken back
    assert UUID.match(ana) and entity["entity"]["id"] == ana and hex_ids([found, entity]) == []
    trail = json.loads(_cli(home, "audit-log", "--memory-id", shown[0], "--json").stdout)
    assert [(e["action"], e["memory_id"]) for e in trail] == [("remember", shown[0])]
    assert json.loads(_cli(home, "audit-log", "--memory-id", ids[0], "--json").stdout) == trail
    assert shown[0] in _cli(home, "audit-log", "--memory-id", shown[0]).stdout
    done = _cli(home, "forget", "--scope", "local:default", "--id", shown[1], "--id", ids[2])
    assert done.returncode == 0 and done.stdout.strip() == "Forgot 2 memories of scope 'local:default'.", done.stderr
    left = json.loads(_cli(home, "search", "pier boat", "--json").stdout)
    assert [r["id"] for r in left["results"]] == [shown[0]]
