"""The knowledge layer through every door: MCP tools, Hermes tools and the command line."""
import json
import os

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.mcp_bridge import local_scope
from hermes_cmms.provider import CmmsMemoryProvider
from db import sql
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}


def _sql(home, query, *params):
    return sql(home, query, *params)


def _cli(home, *args, stdin=None, own_store=False):
    """`hermes-cmms ARGS` keyword-only; `own_store`: without the server URLs, so the home given
    decides where the store is (its embedded default)."""
    env = dict(KEYWORD_ONLY, **({"CMMS_DATABASE_URL": None, "CMMS_CHROMA_URL": None} if own_store else {}))
    return cli(home, *args, stdin=stdin, env=env)


@pytest.mark.quick
def test_mcp_knowledge_tools_good_and_bad(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            out = {"learned": await bridge.ok("learn", text="Ana works at Acme. Acme is based in Lisbon. "
                                                            "I think the staging API is stable.",
                                              source="standup", extract_beliefs=True)}
            out["against"] = await bridge.ok("set_belief", text="The staging API is not stable.", confidence=0.4)
            out["again"] = await bridge.ok("set_belief", text="I think the staging API is stable.")
            out["contested"] = await bridge.ok("get_belief", state="contested")
            out["contradictions"] = await bridge.ok("reflect", mode="contradictions")
            ids = [b["id"] for b in out["contested"]["beliefs"]]
            out["resolved"] = await bridge.ok("resolve_conflict", belief_a=ids[0], belief_b=ids[1], strategy="auto")
            out["after"] = await bridge.ok("reflect", mode="contradictions")
            out["graph"] = await bridge.ok("graph_search", query="Where does Ana work?")
            ana = out["graph"]["entities"][0]["id"]
            lisbon = next(n["entity"]["id"] for e in out["graph"]["entities"] for n in e["neighbours"]
                          if n["entity"]["name"] == "Acme")
            out["entity"] = await bridge.ok("graph_search", entity_id=ana)
            out["route"] = await bridge.ok("route", query="Where does Ana work?")
            out["audit"] = await bridge.ok("audit", audit_type="orphans")
            out["metrics"] = await bridge.ok("metrics")
            out["bad"] = [await bridge.call(name, **args) for name, args in [
                ("learn", {"text": ""}), ("learn", {"text": 5}), ("learn", {}),
                ("set_belief", {"text": "x", "confidence": 3}), ("get_belief", {"state": "asleep"}),
                ("get_belief", {"belief_id": "nope"}),
                ("resolve_conflict", {"belief_a": ids[0], "belief_b": ids[0], "strategy": "auto"}),
                ("resolve_conflict", {"belief_a": ids[0], "belief_b": ids[1], "strategy": "coin"}),
                ("reflect", {"mode": "dreams"}), ("graph_search", {"source_id": ana}),
                ("graph_search", {"source_id": ana, "target_id": lisbon, "max_depth": 9}),
                ("graph_search", {"entity_id": "nope"}), ("route", {"query": "Ana", "top_k": 101}),
                ("route", {"query": "Ana", "score_threshold": 2}), ("audit", {"audit_type": "everything"})]]
            out["still"] = await bridge.ok("ping")
            return out

    out = run(main())
    kinds = sorted(item["kind"] for item in out["learned"]["learned"])
    assert kinds == ["belief", "fact", "fact"]
    assert out["again"]["action"] == "reinforced"
    assert len(out["contested"]["beliefs"]) == 2 and len(out["contradictions"]["pairs"]) == 1
    assert out["resolved"]["strategy"] == "auto" and not out["after"]["pairs"]
    assert out["graph"]["mode"] == "query" and out["graph"]["entities"][0]["name"] == "Ana"
    assert out["entity"]["mode"] == "entity"
    assert out["route"]["stage_name"] in ("rules", "graph") and out["route"]["answered"]
    assert out["audit"]["ok"] is True
    assert "cmms_tool_calls_total" in out["metrics"]["exposition"]
    for result in out["bad"]:
        assert result.error and result.text and "Traceback" not in result.text, result.text
    assert out["still"]["ok"]
    scope = local_scope(home)
    assert {s for (s,) in _sql(home, "SELECT DISTINCT scope FROM memories")} == {scope}


def test_hermes_belief_and_graph_tools(home):
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="telegram", user_id="9")
    try:
        p.service.learn(p.scope, "Ana works at Acme.")
        first = json.loads(p.handle_tool_call("cmms_belief", {"text": "Acme ships on Fridays", "confidence": 0.7}))
        again = json.loads(p.handle_tool_call("cmms_belief", {"text": "Acme ships on Fridays"}))
        graph = json.loads(p.handle_tool_call("cmms_graph", {"query": "Who works at Acme?"}))
        errors = [json.loads(p.handle_tool_call(name, args))["error"] for name, args in [
            ("cmms_belief", {}), ("cmms_belief", {"text": "x", "confidence": True}),
            ("cmms_belief", {"text": "x", "confidence": 2}), ("cmms_graph", {"query": ""}),
            ("cmms_graph", {"query": ["Ana"]}), ("cmms_recall", {"query": "Acme", "route": "yes"})]]
        routed = json.loads(p.handle_tool_call("cmms_recall", {"query": "Who works at Acme?", "route": True}))
    finally:
        p.shutdown()
    assert (first["action"], again["action"], again["id"]) == ("created", "reinforced", first["id"])
    assert "Acme" in [e["name"] for e in graph["entities"]]
    assert errors[0] == "Missing required argument 'text'."
    assert errors[1] == "Argument 'confidence' must be a number, not a boolean."
    assert errors[-1] == "Argument 'route' must be a boolean, not a string."
    assert routed["stage"] in ("rules", "semantic", "graph") and routed["answered"] and routed["reason"]
    assert all(e and "\n" not in e for e in errors)


def test_cli_knowledge_commands(home):
    learned = _cli(home, "learn", "-", "--json", "--create", stdin="Ana works at Acme. Acme is based in Lisbon. "
                                                      "I prefer tea over coffee.")
    assert learned.returncode == 0, learned.stderr
    assert len(json.loads(learned.stdout)["learned"]) >= 3
    listed = _cli(home, "beliefs", "set", "The staging API is stable", "--confidence", "0.8", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["action"] == "created"
    beliefs = _cli(home, "beliefs", "list")
    assert "The staging API is stable" in beliefs.stdout and "1 belief(s) match." in beliefs.stdout
    elsewhere = _cli(home, "beliefs", "list", "--hermes-home", str(home / "other"),  # the flag after the action
                     own_store=True)
    other = home / "other" / "cmms" / "cmms.db"  # the store of the home the flag named: none, and none made
    assert elsewhere.returncode == 1 and elsewhere.stderr.startswith(f"error: No cmms store at {other};")
    assert not (home / "other").exists()
    assert json.loads(_cli(home, "beliefs", "reflect", "overview").stdout)
    found = json.loads(_cli(home, "graph", "search", "Where is Acme based?").stdout)
    ana = next(e for e in found["entities"] if e["name"] == "Acme")["id"]
    lisbon = _sql(home, "SELECT id FROM entities WHERE name = 'Lisbon'")[0][0]
    paths = json.loads(_cli(home, "graph", "path", ana, lisbon).stdout)
    assert paths["path_steps"][0]["length"] == 1
    rebuilt = _cli(home, "graph", "rebuild")
    assert rebuilt.returncode == 0 and json.loads(rebuilt.stdout)["relations"] == 2
    routed = json.loads(_cli(home, "route", "What do I prefer to drink?").stdout)
    assert routed["stage"] == "rules" and routed["route"] == "preferences"
    audit = _cli(home, "audit")
    assert audit.returncode == 0, audit.stdout
    _sql_write(home, "DELETE FROM relations")
    drift = _cli(home, "audit", "graph_drift")
    assert drift.returncode == 3 and "FAIL graph_drift" in drift.stdout
    fixed = _cli(home, "reindex")
    assert fixed.returncode == 0, fixed.stderr
    assert _cli(home, "audit", "graph_drift").returncode == 0
    metrics = _cli(home, "metrics")
    assert metrics.returncode == 0 and "cmms_memories" in metrics.stdout
    bad = _cli(home, "learn")
    assert bad.returncode == 1 and bad.stderr.startswith("error: Give the text")
    bad = _cli(home, "beliefs", "reflect", "dreams")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


@pytest.mark.quick
def test_cli_beliefs_set_says_what_it_stored_in_one_line_and_list_takes_state_all(home):
    made = _cli(home, "beliefs", "set", "The staging API is stable\u202e", "--confidence", "0.8", "--create")
    assert made.returncode == 0, made.stderr
    [line] = made.stdout.splitlines()
    short = line.split()[2]
    assert line == f"Stored belief {short} (confidence 0.80, active): The staging API is stable\\u202e"
    again = _cli(home, "beliefs", "set", "The staging API is flaky", "--supersedes", short)  # the short id it printed
    [line] = again.stdout.splitlines()
    assert again.returncode == 0 and line.startswith("Stored belief ") and line.endswith(f"; it replaces {short}")
    answer = json.loads(_cli(home, "beliefs", "set", "The staging API is flaky", "--json").stdout)
    assert answer["action"] == "reinforced" and answer["receipt"]["memory_type"] == "belief"
    listed = {state: _cli(home, "beliefs", "list", *(("--state", state) if state else ())) for state in ("all", None)}
    assert listed["all"].returncode == 0 and listed["all"].stdout == listed[None].stdout
    assert "2 belief(s) match." in listed["all"].stdout and "superseded" in listed["all"].stdout
    bad = _cli(home, "beliefs", "list", "--state", "every")
    assert bad.returncode == 1 and bad.stderr.strip() == ("error: Unknown belief state 'every'; choose one of candidate, "
                                                          "validated, active, stale, archived, superseded, contested or all.")


def _sql_write(home, query):
    sql(home, query)


def test_settings_for_the_llm_are_checked(home):
    assert Settings.load(home, llm="http://127.0.0.1:9/v1/").llm == "http://127.0.0.1:9/v1"
    assert Settings.load(home, llm="HERMES").llm == "hermes"
    from hermes_cmms.common.errors import InvalidInput

    with pytest.raises(InvalidInput, match="Unknown llm 'gpt'"):
        Settings.load(home, llm="gpt")
    with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as svc:
        assert svc.settings.mirror == "on"


def test_the_provider_mirrors_an_edit_of_memory_md_within_two_seconds(home):
    import time

    def wait_for(query, *params):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            rows = _sql(home, query, *params)
            if rows:
                return rows
            time.sleep(0.02)
        return []

    def write(entries):  # as Hermes' memory tool writes the file: a temporary file, renamed
        tmp = home / "memories" / ".MEMORY.md.tmp"
        tmp.write_text("\n§\n".join(entries), encoding="utf-8")
        os.replace(tmp, home / "memories" / "MEMORY.md")

    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="cli")
    try:
        write(["The user's laptop runs Fedora 41.", "Backups go to the NAS every night."])
        assert len(wait_for("SELECT id FROM memories WHERE source = 'hermes:file:MEMORY.md'")) >= 1
        time.sleep(0.5)  # both entries in, then edit one
        started = time.monotonic()
        write(["The user's laptop runs Fedora 42.", "Backups go to the NAS every night."])
        found = wait_for("SELECT id, scope FROM memories WHERE content = ? AND superseded_by IS NULL",
                         "The user's laptop runs Fedora 42.")
        took = time.monotonic() - started
        worker = p._mirror._worker
    finally:
        p.shutdown()
    assert found and found[0][1] == local_scope(home) and took < 2.0, took
    old = _sql(home, "SELECT superseded_by FROM memories WHERE content = ?", "The user's laptop runs Fedora 41.")
    assert old == [(found[0][0],)]
    assert p._mirror is None and not worker.is_alive()  # shutdown stopped the mirror


def test_a_memory_tool_replace_supersedes_the_entry_it_rewrites(home):
    import time

    from tools.memory_tool import MemoryStore

    old, new = "The build box runs Fedora 41.", "The build box runs Fedora 42."
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="cli")  # the mirror runs in this scope too
    try:
        hermes = MemoryStore()
        hermes.load_from_disk()
        assert hermes.add("memory", old)["success"]  # Hermes writes the file, then tells the provider
        p.on_memory_write("add", "memory", old)
        time.sleep(0.6)  # the mirror has seen the file
        assert hermes.replace("memory", "Fedora 41", new)["success"]
        p.on_memory_write("replace", "memory", new, {"old_text": "Fedora 41"})
        time.sleep(0.6)  # and the mirror has seen the edit
    finally:
        p.shutdown()
    current = _sql(home, "SELECT id, content FROM memories WHERE superseded_by IS NULL")
    assert [c for _, c in current] == [new]
    assert _sql(home, "SELECT superseded_by FROM memories WHERE content = ?", old) == [(current[0][0],)]
    assert _sql(home, "SELECT count(*) FROM audit_log WHERE action = 'forget'") == [(0,)]  # kept, not deleted
