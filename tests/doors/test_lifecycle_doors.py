"""The lifecycle through every door: MCP tools, Hermes tools and the command line."""
import json

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.ids import stored_id
from hermes_cmms.provider import CmmsMemoryProvider
from db import dump, on_postgres, sql
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}
SCOPE = "user:telegram:42"
EPISODE = ["I walked the dog along the beach this morning.",
           "This morning I took the dog for a walk on the beach.",
           "The dog and I went walking on the beach early today.",
           "Walked my dog on the beach this morning, it was lovely."]


def _sql(home, query, *params):
    return sql(home, query, *params)


def _cli(home, *args, **env):
    return cli(home, *args, env={**KEYWORD_ONLY, **env})


@pytest.mark.quick
def test_mcp_store_reinforces_forget_snapshots_and_every_call_is_audited(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            first = await bridge.ok("store_memory", content="The gate code changes on Mondays.", scope=SCOPE,
                                    actor="ops-bot")
            again = await bridge.ok("store_memory", content="the gate code changes on mondays. ", scope=SCOPE)
            listed = await bridge.ok("list_memories", scope=SCOPE, state="active")
            bad = await bridge.call("list_memories", scope=SCOPE, state="asleep")
            gone = await bridge.ok("forget_memory", scope=SCOPE, memory_id=first["id"], actor="ops-bot")
            trail = await bridge.ok("audit_log", scope=SCOPE, limit=20)
            return first, again, listed, bad, gone, trail

    first, again, listed, bad, gone, trail = run(main())
    assert (first["stored"], first["reinforced"]) == (True, False)
    assert (again["stored"], again["reinforced"], again["id"]) == (False, True, first["id"])
    [item] = listed["memories"]
    assert (item["id"], item["reinforcements"], item["state"]) == (first["id"], 1, "active")
    assert bad.error and "Unknown state 'asleep'" in bad.text
    assert gone["forgotten"] == 1 and _sql(home, "SELECT count(*) FROM memories") == [(0,)]
    actions = [e["action"] for e in trail["events"]]
    assert actions[-2:] == ["tool", "remember"]  # newest first: the first write, then its call
    forget = next(e for e in trail["events"] if e["action"] == "forget")
    assert forget["memory_id"] == first["id"] and forget["actor"] == "mcp:forget_memory by ops-bot"
    assert forget["snapshot_kept"] and "gate code" not in json.dumps(trail)  # content stays off MCP
    tools = [(e["detail"]["tool"], e["detail"]["ok"], e["actor"]) for e in trail["events"] if e["action"] == "tool"]
    assert ("store_memory", True, "mcp:ops-bot") in tools and ("list_memories", False, "mcp:client") in tools
    assert ("forget_memory", True, "mcp:ops-bot") in tools
    snapshot = _sql(home, "SELECT snapshot FROM audit_log WHERE action = 'forget'")[0][0]
    assert json.loads(snapshot)["content"] == "The gate code changes on Mondays."


def test_mcp_consolidates_what_hermes_retained(home):
    with MemoryService(Settings.load(home)) as service:
        for i, text in enumerate(EPISODE):
            service.retain_turn(SCOPE, "walks", text, f"Noted ({i}).")
        assert service.upkeep.drain(120)

    async def main():
        async with memory_bridge(home) as bridge:
            report = await bridge.ok("consolidate_memories", scope=SCOPE, session_id="walks", actor="curator")
            semantic = await bridge.ok("list_memories", scope=SCOPE, tier="semantic")
            return report, semantic

    report, semantic = run(main())
    assert report["clusters"] >= 1 and report["consolidated"] >= 3
    summaries = {m["id"]: m for m in semantic["memories"] if m["kind"] == "summary"}
    assert set(summaries) == set(report["summaries"])  # the walks, and the four "Noted (n)." replies
    [beach] = [m for m in summaries.values() if "beach" in m["content"]]
    members = _sql(home, "SELECT content FROM memories WHERE superseded_by = ?", stored_id(beach["id"]))
    assert {c for (c,) in members} == set(EPISODE)
    assert _sql(home, "SELECT count(*) FROM memories WHERE superseded_by IS NOT NULL") == [(report["consolidated"],)]


def test_hermes_tools_reinforce_and_are_audited(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="telegram", user_id="42", agent_context="primary")
    first = json.loads(p.handle_tool_call("cmms_remember", {"content": "Invoices go out on the 3rd."}))
    again = json.loads(p.handle_tool_call("cmms_remember", {"content": "Invoices go out on the 3rd."}))
    error = json.loads(p.handle_tool_call("cmms_forget", {"memory_id": "nope"}))
    p.shutdown()
    assert first["stored"] and again == {"stored": False, "reinforced": True, "id": first["id"]}
    assert "Unknown memory id 'nope'" in error["error"]
    assert _sql(home, "SELECT access_count, receipts LIKE '%hermes:cmms_remember%' FROM memories") == [(1, 1)]
    tools = _sql(home, "SELECT actor, scope, detail FROM audit_log WHERE action = 'tool' ORDER BY id")
    assert [(a, s, json.loads(d)["tool"], json.loads(d)["ok"]) for a, s, d in tools] == [
        ("hermes:telegram", SCOPE, "cmms_remember", True), ("hermes:telegram", SCOPE, "cmms_remember", True),
        ("hermes:telegram", SCOPE, "cmms_forget", False)]


def test_cli_forget_all_audit_log_and_maintain(home):
    with MemoryService(Settings.load(home, embedder="none")) as service:
        kept = service.remember("user:slack:7", "Other user's note about Pier 9.")
        doomed = [service.remember(SCOPE, f"Pier {n} is where the boat is moored.") for n in (9, 10)]
        service.forget(SCOPE, doomed[0], actor="cli:test")  # an earlier forget: its snapshot has content
    assert _cli(home, "forget", "--scope", SCOPE).returncode == 1
    bad = _cli(home, "forget", "--scope", SCOPE, "--all", "--id", "x")
    assert bad.stderr.strip() == "error: Say what to forget: ID..., --id, or --tier/--tag, or --all."
    done = _cli(home, "forget", "--scope", SCOPE, "--all", "--actor", "dpo")
    assert done.returncode == 0 and done.stdout.strip() == f"Forgot 1 memory of scope '{SCOPE}'."
    assert _sql(home, "SELECT id FROM memories") == [(kept,)]
    assert _sql(home, "SELECT count(*) FROM audit_log WHERE scope = ? AND snapshot IS NOT NULL", SCOPE) == [(0,)]
    assert "Pier 10" not in dump(home)  # no row of any table (on PostgreSQL with the tsvector columns)
    if not on_postgres(home):  # nor a page, an FTS segment or a WAL frame of the SQLite files
        assert b"Pier 10" not in b"".join(p.read_bytes() for p in (home / "cmms").glob("cmms.db*"))
    trail = json.loads(_cli(home, "audit-log", "--scope", SCOPE, "--json", "--snapshots").stdout)
    assert trail[0]["action"] == "forget_all" and trail[0]["actor"] == "cli:dpo"
    assert trail[0]["detail"] == {"memories": 1}
    assert {e["action"] for e in trail} >= {"remember", "forget", "forget_all"}
    assert all(e["snapshot"] is None for e in trail)
    text = _cli(home, "audit-log", "--action", "remember").stdout
    assert text.count(" remember ") == 3  # one line an event, every scope
    maintained = json.loads(_cli(home, "maintain").stdout)
    assert maintained["sweep"] == {"expired": 0} and maintained["decay"]["transitions"] == 0
    assert _cli(home, "audit-log", "--limit", "0").stderr.strip() == \
        "error: --limit must be a whole number from 1 to 1,000,000, not 0."
    assert _cli(home, "audit-log", "--limit", "99999999999999999999").stderr.strip() == \
        "error: --limit must be a whole number from 1 to 1,000,000, not 99999999999999999999."
