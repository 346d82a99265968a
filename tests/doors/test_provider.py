"""Hermes lifecycle methods of the cmms provider, on a real store."""
import json

import pytest

from conftest import embedded_only

from hermes_cmms import MemoryService, Settings
from hermes_cmms.provider import CmmsMemoryProvider
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit


def _provider(home, session="s1", **kw):
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), platform="cli", agent_context="primary",
                 agent_identity="default", **kw)
    return p


def _rows(home, scope="local:default"):
    svc = MemoryService(Settings.load(home, embedder="none"))
    try:
        with svc.store.read() as conn:
            return [dict(r._mapping) for r in conn.exec_driver_sql(
                "SELECT kind, role, content, session_id, source FROM memories WHERE scope = %s"
                if conn.dialect.name != "sqlite" else
                "SELECT kind, role, content, session_id, source FROM memories WHERE scope = ?", (scope,))]
    finally:
        svc.close()


@pytest.fixture
def kw_home(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    return home


@pytest.mark.store
def test_delegation_after_shutdown_is_still_retained(kw_home):
    p = _provider(kw_home)
    p.shutdown()
    p.on_delegation("Summarise the report", "The report says revenue grew 12%.", child_session_id="c1")
    rows = _rows(kw_home)
    assert [(r["kind"], r["source"]) for r in rows] == [("observation", "hermes:delegation")]
    assert "revenue grew 12%" in rows[0]["content"]


@pytest.mark.store
def test_memory_tool_writes_are_mirrored(kw_home):
    p = _provider(kw_home)
    p.on_memory_write("add", "user", "User prefers tea over coffee.", metadata={"write_origin": "assistant_tool"})
    p.on_memory_write("remove", "user", "Something else.")
    p.shutdown()
    rows = _rows(kw_home)
    assert [(r["kind"], r["content"], r["source"]) for r in rows] == [
        ("preference", "User prefers tea over coffee.", "hermes:memory-tool")]


@pytest.mark.store
def test_a_turn_is_recalled_with_its_own_prompt_and_nothing_is_asked_ahead(kw_home):
    """Hermes' queue_prefetch (after a turn, with that turn's message) makes no search and no
    recall event: a session's history holds what its turns got, and a next turn sending the same
    prompt gets a block made then, with what was stored since."""
    p = _provider(kw_home)
    p.sync_turn("I water the ferns every Sunday.", "Noted.", session_id="s1")
    p.queue_prefetch("When do I water the ferns?")
    p.sync_turn("The ferns moved to the balcony.", "Good idea.", session_id="s1")
    assert p.service.upkeep.recent_recalls(p.scope) == []  # nothing was recalled ahead
    fresh = p.prefetch("When do I water the ferns?")
    assert "balcony" in fresh and "Sunday" in fresh
    recalls = p.service.upkeep.recent_recalls(p.scope)
    assert [(r["kind"], r["turn"]) for r in recalls] == [("turn", 3)]
    p.shutdown()


@pytest.mark.store
def test_pre_compress_recalls_for_the_latest_user_message(kw_home):
    p = _provider(kw_home, session="old")
    p.sync_turn("Our wifi password rotation happens on the first Monday.", "OK.", session_id="old")
    p.on_session_switch("new", reset=True)
    text = p.on_pre_compress([{"role": "user", "content": "When does the wifi rotation happen?"},
                              {"role": "assistant", "content": "Let me check."}])
    p.shutdown()
    assert "first Monday" in text


@pytest.mark.store
def test_session_switch_and_end_flush_idempotently(kw_home):
    p = _provider(kw_home, session="a")
    p.sync_turn("first", "one", session_id="a")
    p.on_session_switch("b", reset=True)
    assert p.service.store.unflushed_sessions() == []
    p.sync_turn("second", "two", session_id="b")
    p.on_session_end([])
    p.on_session_end([])
    assert p.service.store.unflushed_sessions() == []
    p.sync_turn("late turn after end", "three", session_id="b")  # e.g. hermes -z race
    assert p.service.store.unflushed_sessions() == [("local:default", "b")]
    p.shutdown()  # flushes again once the last turn is in
    svc = MemoryService(Settings.load(kw_home))
    try:
        assert svc.store.unflushed_sessions() == []
    finally:
        svc.close()


def test_tool_schemas_do_not_depend_on_initialize_and_avoid_core_names():
    from toolsets import _HERMES_CORE_TOOLS

    names = [s["name"] for s in CmmsMemoryProvider().get_tool_schemas()]
    assert names == ["cmms_recall", "cmms_remember", "cmms_forget", "cmms_belief", "cmms_graph"]
    assert not set(names) & set(_HERMES_CORE_TOOLS)


@pytest.mark.quick
@pytest.mark.store
def test_remember_then_recall_then_forget_through_tools(kw_home):
    p = _provider(kw_home)
    stored = json.loads(p.handle_tool_call("cmms_remember", {"content": "The spare key is under the blue pot."}))
    found = json.loads(p.handle_tool_call("cmms_recall", {"query": "where is the spare key"}))
    assert [r["id"] for r in found["results"]] == [stored["id"]]
    assert json.loads(p.handle_tool_call("cmms_forget", {"memory_id": stored["id"]})) == {
        "forgotten": True, "id": stored["id"], "vectors_pending": 0}
    assert json.loads(p.handle_tool_call("cmms_recall", {"query": "spare key"})) == {"results": []}
    p.shutdown()


def test_save_config_writes_memory_cmms_and_settings_read_it(home):
    (home / "config.yaml").write_text("# my settings\nmemory:\n  provider: cmms\n")
    CmmsMemoryProvider().save_config({"recall_tokens": "900", "embedder": "none"}, str(home))
    text = (home / "config.yaml").read_text()
    assert text.startswith("# my settings") and "cmms:" in text
    settings = Settings.load(home)
    assert (settings.recall_tokens, settings.embedder) == (900, "none")
    assert settings.sources["recall_tokens"] == "config.yaml memory.cmms"


@pytest.mark.quick
@pytest.mark.store
def test_a_memory_is_injected_once_per_session(kw_home):
    writer = _provider(kw_home, session="old")
    writer.sync_turn("The bakery on Elm Street opens at 7.", "Good to know.", session_id="old")
    writer.sync_turn("The bakery sells rye bread on Fridays.", "Yum.", session_id="old")
    writer.shutdown()
    p = _provider(kw_home, session="new")
    first = p.prefetch("When does the bakery open?")
    assert "opens at 7" in first and "rye bread" in first
    assert "opens at 7" in p.prefetch("When does the bakery open?")  # that turn never completed
    p.sync_turn("When does the bakery open?", "At 7.", session_id="new")  # now it is history
    later = p.prefetch("Tell me about the bakery")
    assert "opens at 7" not in later and "rye bread" not in later  # already in the context
    p.queue_prefetch("bakery hours")  # precomputed but never used: marks nothing as injected
    p.on_session_switch("newer", reset=True)  # a fresh conversation carries no earlier blocks
    assert "opens at 7" in p.prefetch("When does the bakery open?")
    p.shutdown()


@pytest.mark.store
@embedded_only  # (another process holding the index is its lock file here; on a server, a lease in SQL)
def test_exit_flushes_a_session_once_and_leaves_what_is_not_indexed_to_the_outbox(home, monkeypatch):
    """/exit (on_session_end, then shutdown) flushes once and then does not wait for vectors:
    the turn is stored, and the next process indexes it from the outbox."""
    import fcntl
    import time

    from hermes_cmms import hookimpl
    from hermes_cmms.hooks import session_flush

    monkeypatch.setattr(session_flush, "FLUSH_WAIT_S", 0.5)  # the flush's own wait for vectors
    flushed = []

    class Count:
        @hookimpl
        def session_flush(self, service, scope, session_id):
            flushed.append(session_id)

    settings = Settings.load(home)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.data_dir / "indexer.lock", "a+b") as other:  # another process writes the index
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = _provider(home)
        p.service.pm.register(Count(), name="count")
        assert p.service.upkeep.wait_vectors(120) and p.service.indexer.active, p.service.indexer.error
        p.sync_turn("The spare key is under the blue flower pot.", "Noted.")
        p.on_session_end([])
        started = time.monotonic()
        p.shutdown()
        took = time.monotonic() - started
    assert flushed == ["s1"]
    assert took < 3.0, f"shutdown waited {took:.1f} s for the index"  # (it waited 5.5 s: flush, drain)
    svc = MemoryService(settings)  # the next process: the outbox still holds the turn, and it indexes it
    try:
        assert svc.store.pending(10) and svc.upkeep.drain(120)
        hit = next(h for h in ranked(svc.engine, "local:default", "where is the spare key")
                   if "spare key" in h.memory.content)
        assert hit.vector_rank is not None
    finally:
        svc.close()
