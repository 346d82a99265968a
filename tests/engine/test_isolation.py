"""Data survives a restart; gateway users never see, find or delete each other's memories."""
from __future__ import annotations

import json

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.ids import stored_id
from hermes_cmms.provider import CmmsMemoryProvider

from db import sql
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

pytestmark = pytest.mark.store

A_SECRET_WORDS = "pineapple saxophone lighthouse"


def _provider(home, user_id=None, platform="telegram", agent_context="primary", session="s"):
    provider = CmmsMemoryProvider()
    kwargs = {"hermes_home": str(home), "platform": platform, "agent_context": agent_context}
    if user_id:
        kwargs["user_id"] = user_id
    provider.initialize(f"{session}-{user_id}", **kwargs)
    return provider


def _rows(home, scope):
    return sql(home, "SELECT id, content FROM memories WHERE scope = ? ORDER BY seq", scope)


def _tool(provider, name, **args):
    return json.loads(provider.handle_tool_call(name, args))


@pytest.mark.quick
def test_memories_survive_closing_and_reopening(home):
    first = MemoryService(Settings.load(home))
    note = first.remember("local:default", "The spare key hangs behind the calendar")
    turn = first.retain_turn("local:default", "s1", "I was born in Valparaíso", "Noted!")
    assert first.upkeep.drain(30)
    first.close()

    second = MemoryService(Settings.load(home))
    try:
        stored = second.store.get([note, *turn], "local:default")
        assert sorted(m.content for m in stored.values()) == [
            "I was born in Valparaíso", "Noted!", "The spare key hangs behind the calendar"]
        assert [m.turn for m in stored.values() if m.role] == [1, 1]
        assert second.upkeep.wait_vectors(30) and second.indexer.active
        hits = {h.memory.id: h for h in ranked(second.engine, "local:default", "where is the spare key")}
        assert hits[note].keyword_rank is not None
        assert hits[note].vector_rank is not None  # the Chroma index persisted too
        assert second.retain_turn("local:default", "s1", "next", "turn") and \
            {m.turn for m in second.store.recent("local:default", 2)} == {2}
    finally:
        second.close()


@pytest.fixture
def users(home):
    """Telegram users A and B on one profile (sharing one engine), A with a memory."""
    a, b = _provider(home, "A"), _provider(home, "B")
    a.sync_turn(f"My locker password hint is {A_SECRET_WORDS}", "I'll remember that.")
    a_note = _tool(a, "cmms_remember", content=f"A keeps the {A_SECRET_WORDS} notes in a drawer")["id"]
    b.sync_turn("I like climbing and tea", "Good to know.")
    assert a.service is b.service
    assert a.service.upkeep.drain(30)
    yield a, b, a_note
    a.shutdown()
    b.shutdown()


def test_b_never_recalls_a(users):
    a, b, a_note = users
    query = f"what is the {A_SECRET_WORDS} password hint and where are the notes?"
    assert "pineapple" in a.prefetch(query)  # control: the memory is there to be found
    block = b.prefetch(query)
    assert "pineapple" not in block and "drawer" not in block
    results = _tool(b, "cmms_recall", query=query, limit=50)["results"]
    assert {r["content"] for r in results} <= {"I like climbing and tea", "Good to know."}
    own = _tool(b, "cmms_recall", query=f"{query} Do I like climbing?", limit=50)["results"]
    assert "I like climbing and tea" in {r["content"] for r in own}  # control: B finds B's own
    assert all("pineapple" not in r["content"] for r in own)
    assert a_note in {r["id"] for r in _tool(a, "cmms_recall", query=query)["results"]}


def test_b_cannot_forget_a_memory(users, home):
    a, b, a_note = users
    answer = _tool(b, "cmms_forget", memory_id=a_note)
    assert answer == {"error": f"Unknown memory id '{a_note}' in this scope."}
    assert stored_id(a_note) in {row[0] for row in _rows(home, a.scope)}  # the doors show ids dashed
    assert _tool(a, "cmms_forget", memory_id=a_note) == {"forgotten": True, "id": a_note, "vectors_pending": 0}
    assert stored_id(a_note) not in {row[0] for row in _rows(home, a.scope)}


def test_same_user_id_on_another_platform_is_another_user(users, home):
    a, _, _ = users
    other = _provider(home, "A", platform="discord")
    try:
        assert other.scope != a.scope
        assert "pineapple" not in other.prefetch(A_SECRET_WORDS)
        assert _tool(other, "cmms_recall", query=A_SECRET_WORDS)["results"] == []
    finally:
        other.shutdown()


@pytest.mark.parametrize("context", ["subagent", "cron", "flush"])
def test_non_primary_context_writes_nothing(home, monkeypatch, context):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    primary = _provider(home, "A")
    primary.sync_turn("primary turn", "ok")
    other = _provider(home, "A", agent_context=context)
    try:
        assert other.scope == primary.scope
        before = _rows(home, primary.scope)
        other.sync_turn("cron system prompt: summarise the news", "Here is the news")
        other.on_memory_write("add", "memory", "User prefers cron summaries")
        other.on_delegation("Summarise", "Summary text")
        refused = _tool(other, "cmms_remember", content="cron wants this remembered")
        assert refused == {"error": "Memory is read-only in this agent; only the primary agent writes."}
        assert _rows(home, primary.scope) == before and len(before) == 2
        assert "primary turn" in other.prefetch("primary turn")  # it may still read
    finally:
        other.shutdown()
        primary.shutdown()


@pytest.mark.parametrize("how", ["forget", "forget_all"])
def test_forgetting_a_memory_leaves_another_scopes_evidence_naming_its_id(service, how):
    """A belief of one scope may cite, as an outside source, an id that is a memory of another
    scope: forgetting that memory (one forget, or its whole scope) changes nothing of the first
    scope, the two ways alike (the single forget deleted that evidence row, forget --all kept it)."""
    noted = service.remember("local:s", "the note of scope s")
    service.set_belief("local:t", "tea is better than coffee",
                       sources=[{"source_type": "observation", "source_id": noted}])
    cited = "SELECT source_ref FROM evidence WHERE scope = 'local:t' AND source_ref = ?"
    assert sql(service, cited, noted) == [(noted,)]
    if how == "forget":
        assert service.forget("local:s", noted)
    else:
        service.forget_all("local:s", actor="test")
    assert sql(service, cited, noted) == [(noted,)]
