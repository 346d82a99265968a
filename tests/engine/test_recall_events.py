"""Recall events: every recall records which memories went into its block at which rank (ids
and ranks only), per scope, session and turn; bounded; gone with a forgotten memory and with a
forgotten scope. On real stores."""
import pytest
from sqlalchemy import text

from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.provider import CmmsMemoryProvider
from hermes_cmms.recall.block import settled
from hermes_cmms.recall import _rows as recall_events

pytestmark = pytest.mark.store
SCOPE, OTHER = "local:default", "user:telegram:42"
PROMPT = "What do I know about Lisbon?"


def _rows(service, sql, **params):
    with service.store.read() as conn:
        return [tuple(row) for row in conn.execute(text(sql), params)]


def _fill(service, scope=SCOPE, session="s1"):
    service.retain_turn(scope, session, "Alice lives in Lisbon near the river", "Lisbon is lovely")
    service.retain_turn(scope, session, "Bob works at a bakery in Lisbon", "Fresh bread every day")
    return service.remember(scope, "The Lisbon office opens at nine")


@pytest.mark.quick
def test_a_hermes_turn_records_its_block_s_ids_in_order_with_session_and_turn(kw_home):
    p = CmmsMemoryProvider()
    p.initialize("chat-1", hermes_home=str(kw_home), platform="cli", agent_context="primary", agent_identity="default")
    try:
        _fill(p.service, p.scope, session="earlier")
        inspected = p.service.inspect_recall(p.scope, PROMPT)  # (records nothing)
        block = p.prefetch(PROMPT)
        p.sync_turn(PROMPT, "You know a few things.")
        p.prefetch("And the bakery in Lisbon?")
        first, second = reversed(p.service.upkeep.recent_recalls(p.scope))
    finally:
        p.shutdown()
    assert block and (first["scope"], first["session_id"], first["turn"]) == (p.scope, "chat-1", 1)
    assert [(r["memory_id"], r["rank"]) for r in first["recalled"]] == [(line["memory_id"], line["rank"])
                                                                         for line in inspected["lines"]]
    assert second["turn"] == 2  # the turn it was recalled for
    assert not {r["memory_id"] for r in first["recalled"]} & {r["memory_id"] for r in second["recalled"]}


def test_events_hold_ids_and_ranks_only(keyword_service):
    _fill(keyword_service)
    keyword_service.recall(SCOPE, PROMPT, session_id="s2")
    settled()  # (written on a thread of their own)
    with keyword_service.store.read() as conn:
        events = conn.execute(text("SELECT * FROM recall_events")).mappings().all()
        items = conn.execute(text("SELECT * FROM recalled_memories")).mappings().all()
    assert set(events[0]) == {"id", "scope", "session_id", "turn", "at", "kind"}
    assert set(items[0]) == {"event_id", "rank", "memory_id"} and len(items) >= 3
    stored = "\n".join(str(value) for row in [*events, *items] for value in row.values())
    assert "Lisbon" not in stored and "bakery" not in stored


def test_forgetting_a_memory_leaves_no_recall_event_naming_it(keyword_service):
    office = _fill(keyword_service)
    keyword_service.recall(SCOPE, PROMPT, session_id="s2")
    recalled = [r["memory_id"] for r in keyword_service.upkeep.recent_recalls(SCOPE)[0]["recalled"]]
    assert office in recalled
    keyword_service.forget(SCOPE, office)
    assert _rows(keyword_service, "SELECT event_id FROM recalled_memories WHERE memory_id = :m", m=office) == []
    left = keyword_service.upkeep.recent_recalls(SCOPE)[0]["recalled"]
    assert [r["memory_id"] for r in left] == [m for m in recalled if m != office]  # the others keep their ranks
    assert all(r["rank"] == recalled.index(r["memory_id"]) + 1 for r in left)
    assert office not in str(keyword_service.session_timeline(SCOPE, "s2"))


def test_forgetting_by_tag_or_expiry_also_drops_them(keyword_service):
    tagged = keyword_service.remember(SCOPE, "Lisbon trams are yellow", tags=["city"])
    brief = keyword_service.store_note(SCOPE, "Lisbon meeting at noon", ttl_seconds=0.3).id
    keyword_service.recall(SCOPE, "Lisbon trams meeting", session_id="s2")
    named = {r["memory_id"] for r in keyword_service.upkeep.recent_recalls(SCOPE)[0]["recalled"]}
    assert {tagged, brief} <= named
    keyword_service.forget_where(SCOPE, tags=["city"])
    import time

    keyword_service.upkeep.sweep(now=time.time() + 1)
    assert _rows(keyword_service, "SELECT memory_id FROM recalled_memories WHERE memory_id IN (:a, :b)",
                 a=tagged, b=brief) == []


def test_forget_all_leaves_no_recall_event_of_the_scope_and_keeps_the_others(keyword_service):
    _fill(keyword_service)
    _fill(keyword_service, OTHER)
    for scope in (SCOPE, OTHER):
        keyword_service.recall(scope, PROMPT, session_id="s2")
    theirs = keyword_service.upkeep.recent_recalls(OTHER)
    keyword_service.forget_all(SCOPE)
    assert _rows(keyword_service, "SELECT id FROM recall_events WHERE scope = :s", s=SCOPE) == []
    assert _rows(keyword_service, "SELECT count(*) FROM recalled_memories r JOIN recall_events e ON e.id = r.event_id "
                                  "WHERE e.scope = :s", s=OTHER) == [(len(theirs[0]["recalled"]),)]
    assert _rows(keyword_service, "SELECT count(*) FROM recalled_memories WHERE event_id NOT IN "
                                  "(SELECT id FROM recall_events)") == [(0,)]
    assert keyword_service.upkeep.recent_recalls(SCOPE) == [] and keyword_service.upkeep.recent_recalls(OTHER) == theirs
    assert keyword_service.sessions(SCOPE) == []


def test_retention_keeps_a_scope_s_newest_events(keyword_service):
    office, theirs = _fill(keyword_service), _fill(keyword_service, OTHER)
    keep = 3
    for _ in range(recall_events.PRUNE_EVERY):
        recall_events.record(keyword_service.store, SCOPE, "s2", [office], keep)
    recall_events.record(keyword_service.store, OTHER, "s2", [theirs], keep)
    ids = [row[0] for row in _rows(keyword_service, "SELECT id FROM recall_events WHERE scope = :s ORDER BY id", s=SCOPE)]
    assert ids == list(range(recall_events.PRUNE_EVERY - keep + 1, recall_events.PRUNE_EVERY + 1))
    assert _rows(keyword_service, "SELECT count(*) FROM recalled_memories") == [(keep + 1,)]
    assert len(keyword_service.upkeep.recent_recalls(OTHER)) == 1


def test_the_recall_events_setting_bounds_what_a_scope_keeps(home, monkeypatch):
    from hermes_cmms import MemoryService, Settings

    monkeypatch.setenv("CMMS_RECALL_EVENTS", "2")
    with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as service:
        _fill(service)
        for _ in range(recall_events.PRUNE_EVERY):
            service.recall(SCOPE, PROMPT)
        assert len(service.upkeep.recent_recalls(SCOPE, limit=50)) == 2
    monkeypatch.setenv("CMMS_RECALL_EVENTS", "0")
    with pytest.raises(InvalidInput, match="recall_events must be positive"):
        Settings.load(home)


def test_an_old_event_goes_at_the_next_pruning(keyword_service):
    with keyword_service.store.writing() as conn:
        recall_events.prune(conn, SCOPE, 1000, before=0)  # (nothing to prune: no error)
    recall_events.record(keyword_service.store, SCOPE, "s2", [_fill(keyword_service)], 1000)
    assert len(keyword_service.upkeep.recent_recalls(SCOPE)) == 1
    with keyword_service.store.writing() as conn:
        conn.execute(text("UPDATE recall_events SET at = 0"))
        recall_events.prune(conn, SCOPE, 1000, before=1)
    assert keyword_service.upkeep.recent_recalls(SCOPE) == []


def test_sessions_timeline_and_recent_recalls(keyword_service):
    _fill(keyword_service)
    keyword_service.recall(SCOPE, PROMPT, session_id="s1")
    keyword_service.retain_turn(SCOPE, "s1", PROMPT, "Alice, Bob and the office.")
    _fill(keyword_service, OTHER, session="x")
    keyword_service.recall(OTHER, PROMPT, session_id="x")
    sessions = keyword_service.sessions(SCOPE)
    assert [(s["session_id"], s["turns"], s["recalls"]) for s in sessions] == [("s1", 3, 1)]
    timeline = keyword_service.session_timeline(SCOPE, "s1")
    assert timeline["session_id"] == "s1" and [t["turn"] for t in timeline["turns"]] == [1, 2, 3]
    first, _, third = timeline["turns"]
    assert [m["text"] for m in first["stored"]] == ["Alice lives in Lisbon near the river", "Lisbon is lovely"]
    assert third["recalled"] and [r["rank"] for r in third["recalled"]] == list(range(1, len(third["recalled"]) + 1))
    assert {r["scope"] for r in keyword_service.upkeep.recent_recalls()} == {SCOPE, OTHER}
    assert {r["scope"] for r in keyword_service.upkeep.recent_recalls(OTHER)} == {OTHER}
    assert len(keyword_service.upkeep.recent_recalls(limit=1)) == 1


def test_the_history_says_what_was_recalled_and_how_a_session_began(keyword_service):
    """A door shows text beside each id: a recall's memories with the start of their text (None
    once forgotten), a session with its first user message; the event itself keeps ids only."""
    office = _fill(keyword_service)
    keyword_service.recall(SCOPE, PROMPT, session_id="s1")
    keyword_service.retain_turn(SCOPE, "s1", PROMPT, "Alice, Bob and the office.")
    keyword_service.retain_turn(OTHER, "x", "A message of another scope", "ok")
    assert [s["first"] for s in keyword_service.sessions(SCOPE)] == ["Alice lives in Lisbon near the river"]
    recalled = keyword_service.session_timeline(SCOPE, "s1")["turns"][-1]["recalled"]
    texts = {r["memory_id"]: r["text"] for r in recalled}
    assert texts[office] == "The Lisbon office opens at nine" and all(texts.values())
    latest = keyword_service.upkeep.recent_recalls(SCOPE)[0]["recalled"]
    assert {r["memory_id"]: r["text"] for r in latest} == texts
    keyword_service.forget(SCOPE, office)
    assert office not in {r["memory_id"] for r in keyword_service.session_timeline(SCOPE, "s1")["turns"][-1]["recalled"]}
    assert _rows(keyword_service, "SELECT COUNT(*) FROM recalled_memories WHERE memory_id = :m", m=office) == [(0,)]


def test_nothing_crosses_scopes_and_bad_pages_are_refused(keyword_service):
    _fill(keyword_service)
    keyword_service.recall(SCOPE, PROMPT, session_id="s1")
    for scope, session in ((OTHER, "s1"), (SCOPE, "nope")):
        with pytest.raises(InvalidInput, match="No session .* in this scope"):
            keyword_service.session_timeline(scope, session)
    assert keyword_service.sessions(OTHER) == [] and keyword_service.upkeep.recent_recalls(OTHER) == []
    for kwargs in ({"limit": 0}, {"limit": 501}, {"offset": -1}, {"limit": "5"}):
        with pytest.raises(InvalidInput, match="A page is 1 to 500"):
            keyword_service.sessions(SCOPE, **kwargs)


def test_a_store_that_cannot_take_the_event_still_recalls(keyword_service):
    _fill(keyword_service)
    with keyword_service.store.writing() as conn:
        conn.execute(text("DROP TABLE recalled_memories"))
    assert "Lisbon" in keyword_service.recall(SCOPE, PROMPT, session_id="s1")
    settled()
    assert _rows(keyword_service, "SELECT count(*) FROM recall_events") == [(0,)]  # (rolled back whole)


def test_a_recall_that_gives_nothing_records_nothing(keyword_service):
    _fill(keyword_service)
    assert keyword_service.recall(SCOPE, "zebra quantum xylophone", session_id="s1") == ""
    assert keyword_service.recall(OTHER, PROMPT, session_id="s1") == ""  # (an empty scope)
    assert keyword_service.upkeep.recent_recalls() == []
