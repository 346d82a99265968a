"""Memory lifecycle on real stores: dedup, supersession, admission, consolidation, decay, TTL,
forget, the audit trail and the one-leader scheduler."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from hermes_cmms import MemoryService, Settings

from hermes_cmms.common import lifecycle_rules as lifecycle
from hermes_cmms.common.errors import InvalidInput, UnknownMemory
from hermes_cmms.vectors.chroma import VIEWS, owner
from hermes_cmms.lifecycle.scheduler import Scheduler
from hermes_cmms.recall import _rows as recall_rows
from hermes_cmms.store.store import NewMemory, Store
from hermes_cmms.store._batches import MOST_ROWS

from conftest import SERVER, server_databases
from db import dump, keyword_hits, keyword_rows, on_postgres, plan, row, sql, url_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from lifecycle import synthetic_observations  # (the benchmark's data, shared)

pytestmark = pytest.mark.store

SCOPE = "test:lifecycle"
OTHER = "test:lifecycle-other"
DAY = 86400.0
OPENAI_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"


def _db(service_or_home):
    """The embedded default's database file (only tests of the SQLite files use it)."""
    home = getattr(getattr(service_or_home, "settings", None), "home", service_or_home)
    return home / "cmms" / "cmms.db"


def _sql(service, query, *params) -> list:
    return sql(service, query, *params)


def _row(service, memory_id: str):
    return row(service, "SELECT * FROM memories WHERE id = ?", memory_id)


@pytest.fixture
def store_url(tmp_path):
    """The URL of a new store on the backend under test, migrated (from the template)."""
    if not SERVER:
        yield f"sqlite:///{tmp_path / 'cmms.db'}"
        return
    with server_databases(migrated=True) as (url, _):
        yield url


def _events(service, action: str, memory_id=None) -> list[dict]:
    """Audit events of one action (and memory), oldest first, detail parsed."""
    one = "" if memory_id is None else " AND memory_id = ?"
    rows = _sql(service, f"SELECT actor, scope, memory_id, detail, snapshot FROM audit_log WHERE action = ?{one} "
                         "ORDER BY id", action, *(() if memory_id is None else (memory_id,)))
    return [{"actor": a, "scope": s, "memory_id": m, "detail": json.loads(d), "snapshot": snap}
            for a, s, m, d, snap in rows]


def _fts(service, word: str) -> int:
    """Memories the keyword index finds for a word (FTS5 table / PostgreSQL tsvector columns)."""
    return keyword_hits(service, word)


def _embed(service, *texts) -> list[list[float]]:
    assert service.upkeep.wait_vectors(120) and service.indexer.active
    return service.indexer.embedder.embed(list(texts))


def _cosine(service, a: str, b: str) -> float:
    va, vb = _embed(service, a, b)
    return sum(x * y for x, y in zip(va, vb))


def _ids(hits) -> list[str]:
    return [h.id for h in hits]


def _vector_ids(service, scope: str, text: str, view: str = "content") -> list[str]:
    return [i for i, _ in service.indexer.vectors.query(scope, _embed(service, text)[0], 10, view)]


# -- duplicates reinforce -----------------------------------------------------------------------


@pytest.mark.quick
def test_a_repeated_note_reinforces_the_first_instead_of_adding_a_row(keyword_service):
    svc = keyword_service
    first = svc.store_note(SCOPE, "The garage door code is 4417", source="mcp:store_memory", session_id="s1")
    before = _row(svc, first.id)
    again = svc.store_note(SCOPE, "  the GARAGE door code is   4417 ", source="hermes:memory-tool",
                           session_id="s2")
    assert again.reinforced and again.id == first.id and not first.reinforced
    assert _sql(svc, "SELECT id FROM memories") == [(first.id,)]
    row = _row(svc, first.id)
    assert row["content"] == "The garage door code is 4417" and row["access_count"] == 1
    [receipt] = json.loads(row["receipts"])
    assert (receipt["source"], receipt["session_id"]) == ("hermes:memory-tool", "s2")
    assert before["confidence"] == 0.9 and row["confidence"] == pytest.approx(0.93)  # 1 - 0.1 * 0.7
    assert row["last_seen_at"] == receipt["at"] >= before["last_seen_at"]
    [event] = _events(svc, "reinforce", first.id)
    assert event["actor"] == "hermes:memory-tool" and event["detail"]["access_count"] == 1
    assert len(_events(svc, "remember")) == 1
    other = svc.store_note(OTHER, "The garage door code is 4417")  # dedup never crosses scopes
    assert not other.reinforced and _row(svc, other.id)["scope"] == OTHER


def test_duplicates_move_a_candidate_forward_to_validated_then_active(keyword_service):
    svc = keyword_service
    text = "The plumber might be called Tavares"
    memory_id = svc.remember(SCOPE, text, confidence=0.4)
    states = [_row(svc, memory_id)["state"]]
    for _ in range(2):
        assert svc.remember(SCOPE, text, confidence=0.4) == memory_id
        states.append(_row(svc, memory_id)["state"])
    assert states == ["candidate", "validated", "active"]
    assert _row(svc, memory_id)["confidence"] == pytest.approx(1 - 0.6 * 0.7 ** 2)
    moves = [(e["detail"]["state_from"], e["detail"]["state_to"], e["detail"]["reason"])
             for e in _events(svc, "lifecycle", memory_id)]
    assert moves == [("candidate", "validated", "corroborated"), ("validated", "active", "corroborated")]


def test_a_reworded_note_the_model_reads_as_the_same_reinforces_it(service):
    text, reworded = "The garage door code is 4417", "The code for the garage door is 4417"
    assert _cosine(service, text, reworded) >= 0.95  # measured 0.984; not the same content hash
    first = service.store_note(SCOPE, text, source="mcp:store_memory")
    assert service.upkeep.drain(60)
    again = service.store_note(SCOPE, reworded, source="hermes:cmms_remember", session_id="s9")
    assert again.reinforced and again.id == first.id
    assert _sql(service, "SELECT id, content, access_count FROM memories") == [(first.id, text, 1)]
    [receipt] = json.loads(_row(service, first.id)["receipts"])
    assert (receipt["source"], receipt["session_id"]) == ("hermes:cmms_remember", "s9")
    assert [e["actor"] for e in _events(service, "reinforce", first.id)] == ["hermes:cmms_remember"]


def test_a_repeated_conversation_message_is_folded_into_the_first(service):
    first = service.retain_turn(SCOPE, "s1", "The garage door code is 4417", "Noted, thanks.")
    assert service.retain_turn(SCOPE, "s1", "The garage door code is 4417", "Noted, thanks.") == first
    assert _sql(service, "SELECT count(*) FROM memories") == [(2,)]  # the exact repeat: reinforced
    assert _cosine(service, "The garage door code is 4417", "The garage door code is 4417.") >= 0.97  # 0.995
    again = service.retain_turn(SCOPE, "s2", "The garage door code is 4417.", "Got it.")
    assert service.upkeep.drain(60)
    assert _row(service, again[0]) is not None  # folded when its session is consolidated
    service.flush_session(SCOPE, "s2")
    assert _row(service, again[0]) is None and _row(service, again[1]) is not None
    row = _row(service, first[0])
    assert row["access_count"] == 2
    assert [r["session_id"] for r in json.loads(row["receipts"])] == ["s1", "s2"]
    [merge] = _events(service, "merge", again[0])
    assert merge["detail"]["into"] == first[0]
    assert merge["snapshot"] is None  # folded, not forgotten: the text lives on in the memory it joined
    assert service.upkeep.drain(60)  # the fold's vector delete is queued like any other
    assert service.indexer.vectors.get(SCOPE, [again[0], first[0]]).keys() == {first[0]}


# -- updates supersede --------------------------------------------------------------------------


def test_a_new_fact_supersedes_the_old_one_and_search_prefers_it(service):
    old = service.remember_fact(SCOPE, "user", "lives_in", "Lisbon")
    job = service.remember_fact(SCOPE, "user", "works_as", "a nurse")
    new = service.remember_fact(SCOPE, "User", "LIVES_IN", "Porto")  # same subject+predicate, any case
    assert len({old, job, new}) == 3
    assert _row(service, old)["superseded_by"] == new
    assert _row(service, new)["superseded_by"] is None and _row(service, job)["superseded_by"] is None
    assert (_row(service, old)["confidence"], _row(service, new)["confidence"]) == (0.5, 1.0)
    assert sorted(_sql(service, "SELECT object FROM facts")) == [("Lisbon",), ("Porto",), ("a nurse",)]
    [event] = _events(service, "supersede", old)
    assert event["detail"] == {"superseded_by": new, "reason": "conflict"}
    assert service.upkeep.drain(60)
    found = _ids(service.search(SCOPE, "where does the user live"))
    assert found.index(new) < found.index(old)  # both found, the current one first


def test_recall_labels_the_superseded_fact_earlier_and_ranks_the_current_one_now(service):
    old = service.remember_fact(SCOPE, "user", "lives_in", "Lisbon")
    new = service.remember_fact(SCOPE, "user", "lives_in", "Porto")
    assert service.upkeep.drain(60)
    hits = service.search(SCOPE, "where does the user live")
    assert _ids(hits)[:2] == [new, old] and hits[0].score > hits[1].score
    lines = service.recall(SCOPE, "where does the user live").splitlines()
    assert [line for line in lines if "Lisbon" in line] == ["- fact (earlier): user lives_in Lisbon"]
    assert [line for line in lines if "Porto" in line] == ["- fact (now): user lives_in Porto"]


def test_a_close_but_different_note_supersedes_the_older_one(service):
    old_text = "The office is on the fourth floor of the Baker building"
    new_text = "The office is on the sixth floor of the Baker building"
    assert 0.80 <= _cosine(service, old_text, new_text) < 0.95  # measured 0.894
    old = service.store_note(SCOPE, old_text)
    assert service.upkeep.drain(60)
    new = service.store_note(SCOPE, new_text)
    assert not new.reinforced and new.id != old.id
    assert _row(service, old.id)["superseded_by"] == new.id and _row(service, new.id)["superseded_by"] is None
    assert (_row(service, old.id)["confidence"], _row(service, new.id)["confidence"]) == (0.4, 0.8)
    assert [e["detail"]["superseded_by"] for e in _events(service, "supersede", old.id)] == [new.id]
    assert service.upkeep.drain(60)
    found = _ids(service.search(SCOPE, "which floor of the Baker building is the office on"))
    assert found.index(new.id) < found.index(old.id)
    lines = service.recall(SCOPE, "which floor of the Baker building is the office on").splitlines()
    assert [line for line in lines if "fourth" in line] == [f"- note (earlier): {old_text}"]
    assert [line for line in lines if "sixth" in line] == [f"- note (now): {new_text}"]


def test_a_near_identical_note_with_another_detail_is_an_update_not_a_repeat(service):
    old_text, new_text = "The team meeting is on Monday at ten", "The team meeting is on Wednesday at ten"
    assert _cosine(service, old_text, new_text) >= 0.95  # measured 0.965: the model barely tells them apart
    old = service.store_note(SCOPE, old_text)
    assert service.upkeep.drain(60)
    new = service.store_note(SCOPE, new_text)
    assert not new.reinforced and _row(service, old.id)["superseded_by"] == new.id
    assert lifecycle.same_gist("The garage door code is 4417", "The code for the garage door is 4417")
    assert not lifecycle.same_gist("hermes question 175", "hermes question 176")


def test_folding_a_memory_carries_the_repeats_it_had_collected(store_url):
    store = Store(store_url)
    try:
        c, b, a = (store.add([NewMemory(scope=SCOPE, content=f"copy {n}", source=n, dedup=False)])[0]
                   for n in ("c", "b", "a"))
        assert store.merge(SCOPE, [(a, b)]) == 1 and store.merge(SCOPE, [(b, c)]) == 1
        with store.read() as conn:
            [(count, receipts)] = conn.execute(
                text("SELECT access_count, receipts FROM memories WHERE id = :id"), {"id": c}).fetchall()
        assert count == 2 and [r["source"] for r in json.loads(receipts)] == ["a", "b"]
        assert store.merge(SCOPE, [(c, a)]) == 0  # a is gone: nothing to fold
    finally:
        store.close()


def test_a_correction_with_not_is_an_update_not_a_repeat(service):
    old_text, new_text = "The user is allergic to peanuts", "The user is not allergic to peanuts"
    assert _cosine(service, old_text, new_text) >= 0.95  # 0.966: the model hardly sees the "not"
    old = service.store_note(SCOPE, old_text)
    assert service.upkeep.drain(60)
    new = service.store_note(SCOPE, new_text)
    assert not new.reinforced and _row(service, old.id)["superseded_by"] == new.id
    assert _row(service, old.id)["access_count"] == 0


def test_a_fact_is_stored_as_a_fact_even_when_a_note_says_the_same(keyword_service):
    svc = keyword_service
    coffee = svc.remember_fact(SCOPE, "Alice", "likes", "coffee")
    note = svc.remember(SCOPE, "Alice likes tea")
    tea = svc.remember_fact(SCOPE, "Alice", "likes", "tea")
    assert tea != note and _row(svc, tea)["kind"] == "fact" and _row(svc, note)["access_count"] == 0
    assert _row(svc, coffee)["superseded_by"] == tea
    assert svc.remember_fact(SCOPE, "alice", "LIKES", "tea") == tea  # the same fact again: reinforced


def test_facts_match_and_supersede_in_any_case_and_script(keyword_service):
    svc = keyword_service
    lyon = svc.remember_fact(SCOPE, "Émile", "habite à", "Lyon")
    paris = svc.remember_fact(SCOPE, "ÉMILE", "HABITE À", "Paris")
    assert _row(svc, lyon)["superseded_by"] == paris
    assert recall_rows.facts_matching(svc.store, SCOPE, subject="émile", predicate="habite  à") == [paris, lyon]


def test_repeats_fold_only_into_the_same_role(keyword_service):
    svc = keyword_service
    first = svc.retain_turn(SCOPE, "s1", "OK", "Shall I book the table for eight?")
    second = svc.retain_turn(SCOPE, "s1", "Is the terrace open?", "OK")  # the assistant's "OK"
    third = svc.retain_turn(SCOPE, "s2", "OK", "Booked.")  # the user's "OK" again
    assert second[1] != first[0] and third[0] == first[0]
    assert _sql(svc, "SELECT role, access_count FROM memories WHERE content = 'OK' ORDER BY seq") == [
        ("user", 1), ("assistant", 0)]


@pytest.mark.quick
def test_forgetting_a_consolidated_memory_takes_its_summary_along(service):
    episode = ["I walked the dog along the beach this morning.",
               "This morning I took the dog for a walk on the beach.",
               "The dog and I went walking on the beach early today."]
    ids = [service.retain_turn(SCOPE, "walks", text, f"Reply {n}.")[0] for n, text in enumerate(episode)]
    assert service.upkeep.drain(60)
    [summary] = service.consolidate(SCOPE, "walks").summaries
    assert {_row(service, i)["superseded_by"] for i in ids} == {summary}
    service.forget(SCOPE, ids[0])
    assert _row(service, summary) is None
    assert _fts(service, "along") == 0  # not in the summary, nor in the next message's context
    assert _sql(service, "SELECT context FROM memories WHERE content = 'Reply 0.'") == [(None,)]
    assert [(_row(service, i)["superseded_by"], _row(service, i)["consolidated_at"]) for i in ids[1:]] == [
        (None, None), (None, None)]  # current again, and consolidation will look at them anew
    [event] = _events(service, "forget", summary)
    assert event["snapshot"] is None and event["detail"]["reason"] == "a memory it summarised was forgotten"


# -- admission ------------------------------------------------------------------------------------


def test_notes_are_classified_by_whole_words(keyword_service):
    texts = {"I know Python well": "note", "Use the template for invoices": "note",
             "I am at the airport now": "status", "Currently reading Dune": "status",
             "I prefer window seats": "preference", "We decided to rent the flat in Braga": "decision"}
    ids = {text: keyword_service.remember(SCOPE, text) for text in texts}
    assert {text: _row(keyword_service, i)["kind"] for text, i in ids.items()} == texts


def test_secrets_are_redacted_before_storage_and_only_secrets_is_refused(keyword_service):
    svc = keyword_service
    for content in (OPENAI_KEY, f"  {OPENAI_KEY} , "):
        with pytest.raises(InvalidInput):
            svc.store_note(SCOPE, content)
    assert _sql(svc, "SELECT count(*) FROM memories") == [(0,)]
    assert _sql(svc, "SELECT count(*) FROM audit_log") == [(0,)]
    assert len(svc.retain_turn(SCOPE, "s1", OPENAI_KEY, "I will not repeat that.")) == 1
    memory_id = svc.remember(SCOPE, f"The billing bot uses the key {OPENAI_KEY} for invoices")
    assert _row(svc, memory_id)["content"] == "The billing bot uses the key [REDACTED:openai-key] for invoices"
    assert _sql(svc, "SELECT content FROM memories ORDER BY seq") == [
        ("I will not repeat that.",), ("The billing bot uses the key [REDACTED:openai-key] for invoices",)]
    everything = json.dumps(_sql(svc, "SELECT * FROM memories") + _sql(svc, "SELECT * FROM audit_log")
                            + keyword_rows(svc))
    assert "sk-proj" not in everything and "Ab3dEf6hIj9k" not in everything


# -- consolidation ---------------------------------------------------------------------------------

def _members(service, scope: str) -> dict[str, list[str]]:
    """summary id -> ids of the memories it supersedes, for the summaries of `scope`."""
    found: dict[str, list[str]] = {}
    for member, summary in _sql(service, "SELECT m.id, m.superseded_by FROM memories m JOIN memories s "
                                         "ON s.id = m.superseded_by WHERE s.scope = ? AND s.kind = 'summary'",
                                scope):
        found.setdefault(summary, []).append(member)
    return found


def test_consolidation_of_episodic_memories_stays_inside_its_scope(service):
    """Thirty topics (three people, ten activities) of twenty paraphrases, the same texts in two
    scopes: more than one batch of rows (MOST_ROWS). (What consolidating 2,000 costs, and how
    that grows, is benchmarks/lifecycle.py's figure.)"""
    texts = synthetic_observations()[:600]
    assert len(set(texts)) == 600 > MOST_ROWS
    for scope in (SCOPE, OTHER):
        service.store.add([NewMemory(scope=scope, content=t, kind="observation", tier="episodic") for t in texts])
    service.indexer.notify()
    assert service.upkeep.drain(300)

    report = service.consolidate(SCOPE)
    episodic = _sql(service, "SELECT count(*) FROM memories WHERE scope = ? AND tier = 'episodic'", SCOPE)[0][0]
    assert report.examined == episodic > 570  # (bar any near-exact repeat indexing folded)
    assert report.clusters > 0 and len(set(report.summaries)) == report.clusters
    assert report.consolidated >= 3 * report.clusters

    summaries = dict(_sql(service, "SELECT id, scope FROM memories WHERE kind = 'summary'"))
    assert set(summaries) == set(report.summaries) and set(summaries.values()) == {SCOPE}
    members = _members(service, SCOPE)
    assert members.keys() == set(report.summaries)
    assert sum(len(ids) for ids in members.values()) == report.consolidated  # every member row kept
    for summary_id, ids in members.items():
        summary = _row(service, summary_id)
        assert (summary["tier"], summary["source"]) == ("semantic", "consolidation")
        assert 3 <= len(ids) <= 24 and summary["content"].startswith(f"Summary of {len(ids)} related memories (")
        rows = [_row(service, i) for i in ids]
        assert {r["scope"] for r in rows} == {SCOPE} and {r["tier"] for r in rows} == {"episodic"}
        assert any(r["content"] in summary["content"] for r in rows)  # extractive: its members' words
    assert _sql(service, "SELECT count(*) FROM memories WHERE scope = ? AND superseded_by IS NOT NULL",
                OTHER) == [(0,)]  # the other scope's identical memories are untouched
    assert _sql(service, "SELECT count(*) FROM memories WHERE scope = ? AND tier = 'episodic' "
                         "AND consolidated_at IS NULL", SCOPE) == [(0,)]

    theirs = service.consolidate(OTHER)
    assert theirs.clusters > 0 and not set(theirs.summaries) & set(report.summaries)
    assert set(_members(service, OTHER)) == set(theirs.summaries)
    crossing = _sql(service, "SELECT count(*) FROM memories m JOIN memories s ON s.id = m.superseded_by "
                             "WHERE m.scope != s.scope")
    dangling = _sql(service, "SELECT count(*) FROM memories m LEFT JOIN memories s ON s.id = m.superseded_by "
                             "WHERE m.superseded_by IS NOT NULL AND s.id IS NULL")
    assert crossing == dangling == [(0,)]
    assert service.consolidate(SCOPE).examined == 0 and service.consolidate(OTHER).examined == 0
    assert [e["detail"]["clusters"] for e in _events(service, "consolidate")] == [report.clusters, theirs.clusters]


# -- decay and TTL ---------------------------------------------------------------------------------


def test_decay_ages_memories_forward_only_with_a_controllable_clock(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "The boiler was serviced by Ferreira Heating")  # note: TTL 365 days
    status = svc.remember(SCOPE, "I am at the airport now")  # status: TTL 2 days
    doubt = svc.remember(SCOPE, "The neighbour's cat may be called Biscuit", confidence=0.3)
    start = time.time()

    def states():
        return [_row(svc, i)["state"] for i in (note, status, doubt)]

    assert states() == ["active", "active", "candidate"]
    fresh = _row(svc, note)["confidence"]
    svc.upkeep.decay(now=start + 5 * DAY)
    assert states() == ["active", "stale", "candidate"]
    aged = _row(svc, note)["confidence"]
    assert svc.upkeep.decay(now=start + 400 * DAY)["transitions"] == 3
    assert states() == ["stale", "archived", "archived"]
    assert fresh == 0.8 > aged > _row(svc, note)["confidence"] == pytest.approx(0.4)  # floor: half
    svc.upkeep.decay(now=start + 1100 * DAY)
    assert states() == ["archived", "archived", "archived"]
    assert svc.upkeep.decay(now=start + DAY)["transitions"] == 0  # an earlier clock moves nothing back
    assert states() == ["archived", "archived", "archived"]

    moves = {i: [(e["detail"]["state_from"], e["detail"]["state_to"], e["detail"]["reason"])
                 for e in _events(svc, "lifecycle", i)] for i in (note, status, doubt)}
    assert moves == {note: [("active", "stale", "age"), ("stale", "archived", "age")],
                     status: [("active", "stale", "age"), ("stale", "archived", "age")],
                     doubt: [("candidate", "archived", "age")]}
    assert all(lifecycle.forward(a, b) for events in moves.values() for a, b, _ in events)

    again = svc.store_note(SCOPE, "The boiler was serviced by Ferreira Heating")  # archived: not revived
    assert not again.reinforced and _row(svc, again.id)["state"] == "active"
    assert _row(svc, note)["state"] == "archived" and _row(svc, note)["superseded_by"] == again.id


def test_working_memory_expires_and_the_sweep_deletes_it_everywhere(service):
    assert service.upkeep.drain(120)  # the model is loaded
    keep = service.store_note(SCOPE, "Parking spot 14 is free this afternoon", ttl_seconds=3600)
    temp = service.store_note(SCOPE, "Parking spot 9 is reserved for the visitor", ttl_seconds=2)
    assert service.upkeep.drain(30)
    row = _row(service, temp.id)
    assert row["tier"] == "working" and row["expires_at"] == pytest.approx(row["created_at"] + 2, abs=0.1)
    assert service.indexer.vectors.get(SCOPE, [temp.id]).keys() == {temp.id}
    assert temp.id in _ids(service.search(SCOPE, "parking spot for the visitor"))

    time.sleep(max(0.0, row["expires_at"] - time.time()) + 0.1)
    assert temp.id not in _ids(service.search(SCOPE, "parking spot for the visitor"))
    page, total = service.page(SCOPE, tier="working")
    assert [m.id for m in page] == [keep.id] and total == 1
    assert _row(service, temp.id) is not None  # expired, not yet swept

    assert service.upkeep.sweep(now=time.time() + 5) == 1
    assert _row(service, temp.id) is None and _row(service, keep.id) is not None
    [event] = _events(service, "expire", temp.id)
    assert event["actor"] == "cmms:sweep"
    assert event["snapshot"] is None  # it was meant to go: no copy kept
    assert "visitor" not in json.dumps(_sql(service, "SELECT * FROM audit_log"))
    assert _fts(service, "visitor") == 0
    assert service.upkeep.drain(30)
    assert service.indexer.vectors.get(SCOPE, [temp.id, keep.id]).keys() == {keep.id}


# -- forget ---------------------------------------------------------------------------------------


def test_forget_leaves_no_trace_but_the_audit_snapshot(service):
    text = "My allergy is to hazelnuts and pistachios. It started when I was six."
    gone = service.remember(SCOPE, text, tags=["health"])
    fact = service.remember_fact(SCOPE, "user", "allergic_to", "pistachios")
    keep = service.remember(SCOPE, "The boat is moored at pier seven")
    assert service.upkeep.drain(60)
    assert gone in _vector_ids(service, SCOPE, text) and _fts(service, "pistachios") == 2
    units = _vector_ids(service, SCOPE, "It started when I was six.", "sentences")
    assert {u for u in units if owner(u) == gone} == {f"{gone}:0", f"{gone}:1"}  # both its sentences

    service.forget(SCOPE, gone)
    service.forget(SCOPE, fact)
    assert _sql(service, "SELECT id FROM memories") == [(keep,)]
    assert _sql(service, "SELECT count(*) FROM facts") == [(0,)]
    assert _fts(service, "pistachios") == 0 and _fts(service, "moored") == 1
    assert service.upkeep.drain(60)
    assert service.indexer.vectors.get(SCOPE, [gone, fact, keep]).keys() == {keep}
    for view in VIEWS:  # the memory's sentences too
        assert [owner(i) for i in _vector_ids(service, SCOPE, text, view)] == [keep]

    [event] = _events(service, "forget", gone)
    snapshot = json.loads(event["snapshot"])
    assert (snapshot["id"], snapshot["content"], snapshot["tags"]) == (gone, text, '["health"]')
    assert event["detail"]["state_to"] == "forgotten"
    [event] = _events(service, "forget", fact)
    assert json.loads(event["snapshot"])["fact"] == {"subject": "user", "predicate": "allergic_to",
                                                     "object": "pistachios"}
    with pytest.raises(UnknownMemory):
        service.forget(SCOPE, gone)


def test_forget_snapshots_last_snapshot_days_then_the_sweep_drops_their_content(keyword_service):
    svc = keyword_service
    svc.forget(SCOPE, svc.remember(SCOPE, "The locker code is 8812"))
    assert svc.settings.snapshot_days == 30
    svc.upkeep.sweep(now=time.time() + 29 * DAY)
    [kept] = _events(svc, "forget")
    assert "8812" in json.loads(kept["snapshot"])["content"]
    svc.upkeep.sweep(now=time.time() + 31 * DAY)
    [event] = _events(svc, "forget")
    assert event["snapshot"] is None and "8812" not in json.dumps(_sql(svc, "SELECT * FROM audit_log"))
    used = plan(svc, "UPDATE audit_log SET snapshot = NULL WHERE snapshot IS NOT NULL AND at < 1")
    assert "ix_audit_snapshots" in used  # the minutely sweep never scans the whole log


def test_forget_where_removes_exactly_the_tagged_memories(service):
    dentist = service.remember(SCOPE, "Dentist appointment on Tuesday at nine", tags=["health", "home"])
    blood = service.remember(SCOPE, "Blood test results are in the blue folder", tags=["health"])
    folder = service.remember(SCOPE, "The blue folder is in the study", tags=["home"])
    theirs = service.remember(OTHER, "Dentist appointment on Tuesday at nine", tags=["health"])
    assert service.upkeep.drain(60)

    assert sorted(service.forget_where(SCOPE, tags=["health"])) == sorted([dentist, blood])
    assert sorted(_sql(service, "SELECT id FROM memories")) == sorted([(folder,), (theirs,)])
    assert _fts(service, "dentist") == 1 and _fts(service, "blood") == 0 and _fts(service, "study") == 1
    assert {e["memory_id"] for e in _events(service, "forget")} == {dentist, blood}
    assert all(json.loads(e["snapshot"])["content"] for e in _events(service, "forget"))
    assert service.upkeep.drain(60)
    assert service.indexer.vectors.get(SCOPE, [dentist, blood, folder]).keys() == {folder}
    assert service.indexer.vectors.get(OTHER, [theirs]).keys() == {theirs}


def test_forget_all_erases_a_scope_and_its_audit_snapshots_and_spares_the_others(service):
    service.forget(SCOPE, service.remember(SCOPE, "Old address was Rua das Flores 12"))
    mine = [service.remember(SCOPE, "The spare key is under the green flowerpot"),
            service.remember_fact(SCOPE, "user", "drives", "a red Fiat"),
            *service.retain_turn(SCOPE, "s1", "What did you paint last weekend?", "A sunrise over the lagoon.")]
    theirs = [service.remember(OTHER, "The spare key is under the green flowerpot"),
              service.remember_fact(OTHER, "user", "drives", "a blue Volvo")]
    service.forget(OTHER, service.remember(OTHER, "Their old address was Rua Augusta 3"))
    assert service.upkeep.drain(60)

    assert service.forget_all(SCOPE) == 4
    assert _sql(service, "SELECT scope, count(*) FROM memories GROUP BY scope") == [(OTHER, 2)]
    assert _sql(service, "SELECT scope FROM facts") == [(OTHER,)]
    assert _sql(service, "SELECT count(*) FROM sessions WHERE scope = ?", SCOPE) == [(0,)]
    assert _fts(service, "lagoon") == _fts(service, "fiat") == 0 and _fts(service, "flowerpot") == 1
    assert service.search(SCOPE, "where is the spare key") == []
    assert service.upkeep.drain(60)
    assert service.indexer.vectors.get(SCOPE, mine) == {}
    assert _vector_ids(service, SCOPE, "The spare key is under the green flowerpot") == []
    assert service.indexer.vectors.get(OTHER, theirs).keys() == set(theirs)

    trail = _sql(service, "SELECT action, memory_id, detail, snapshot FROM audit_log WHERE scope = ?", SCOPE)
    assert [snapshot for *_, snapshot in trail if snapshot is not None] == []
    assert not any(word in json.dumps(trail) for word in ("Flores", "flowerpot", "Fiat", "lagoon", "paint"))
    summary = [json.loads(detail) for action, memory_id, detail, _ in trail
               if action == "forget_all" and memory_id is None]
    assert summary == [{"memories": 4}]
    kept = _events(service, "forget")[-1]
    assert kept["scope"] == OTHER and "Rua Augusta" in json.loads(kept["snapshot"])["content"]
    everything = dump(service)  # every row of every table; on PostgreSQL with the tsvector columns
    assert not any(word in everything for word in ("lagoon", "Flores", "flore"))
    if not on_postgres(service):
        files = b"".join(p.read_bytes() for p in _db(service).parent.glob("cmms.db*"))
        assert b"lagoon" not in files and b"Flores" not in files  # not in a page, an FTS segment or the WAL



def test_forget_all_drops_the_scopes_vectors_once_for_all_its_queued_deletions(service):
    """More forgotten memories than the index writer takes at a time: the first batch finds the
    scope empty and deletes its collections whole, and the scope's other queued deletions go
    with them, not a batch at a time (each deleting the collections again)."""
    from hermes_cmms.vectors.indexer import BATCH
    from maintenance import fill

    fill(service, SCOPE, 3 * BATCH)  # rows only: their removal is queued all the same
    indexed = service.remember(SCOPE, "The harbour crane is painted orange")
    kept = service.remember(OTHER, "The harbour crane is painted orange")
    assert service.upkeep.drain(60) and service.indexer.vectors.get(SCOPE, [indexed]).keys() == {indexed}
    before = service.store.index_generation()  # moved once by every batch the index writer finishes

    assert service.forget_all(SCOPE) == 3 * BATCH + 1

    assert service.upkeep.vectors_pending(SCOPE) == 0 and not service.store.pending(1)
    assert service.store.index_generation() == before + 1
    assert service.indexer.vectors.get(SCOPE, [indexed]) == {}
    assert service.indexer.vectors.get(OTHER, [kept]).keys() == {kept}

# -- scheduler ------------------------------------------------------------------------------------

CHILD = """
import sys, time
from hermes_cmms.lifecycle.scheduler import Scheduler
from hermes_cmms.store.store import Store

store = Store(sys.argv[1])
scheduler = Scheduler(store, {"sweep": (0.3, lambda now: "swept")}, tick=0.2, lease=1.0).start()
print(scheduler.owner, flush=True)
time.sleep(120)
"""


def _lease(home) -> tuple[str, float]:
    return tuple(_sql(home, "SELECT owner, lease_until FROM jobs WHERE name = 'scheduler'")[0])


def _job_runs(home, since: float) -> list[tuple[float, str]]:
    return _sql(home, "SELECT at, actor FROM audit_log WHERE action = 'job' AND at >= ? ORDER BY id", since)


def _clocks_started(service) -> bool:
    times = service.store.job_times()
    return all(times[name] > 0 for name in ("sweep", "decay", "consolidate"))


def test_the_scheduler_runs_jobs_only_under_its_lease_and_gives_it_back_on_stop(home):
    store = Store(url_of(home))
    try:
        runs: list[float] = []
        first = Scheduler(store, {"probe": (10.0, runs.append)}, tick=0.1, lease=1.0)
        second = Scheduler(store, {"probe": (10.0, runs.append)}, tick=0.1, lease=1.0)
        now = time.time()
        assert first.step(now) == [] and first.leader  # the first lease only starts the clock
        assert second.step(now) == [] and not second.leader
        assert first.step(now + 5) == [] and runs == []  # not due yet
        assert first.step(now + 10.5) == ["probe"] and runs == [now + 10.5]
        assert second.step(now + 10.6) == [] and not second.leader  # the lease was renewed
        assert _lease(home)[0] == first.owner
        assert [a for _, a in _job_runs(home, 0)] == [f"scheduler:{first.owner}"]
        first.stop()
        assert _lease(home) == ("", 0.0)
        assert second.step(now + 11) == [] and second.leader  # at once, and probe is not due again
        assert second.step(now + 21) == ["probe"] and runs == [now + 10.5, now + 21]
        second.stop()
        assert _lease(home) == ("", 0.0)
    finally:
        store.close()


def test_a_long_job_keeps_the_lease_and_a_failed_one_waits_a_full_interval(home):
    store = Store(url_of(home))
    try:
        def slow(now):
            time.sleep(2.0)  # over three lease periods

        def broken(now):
            raise RuntimeError("index unreachable")

        first = Scheduler(store, {"slow": (0.5, slow), "broken": (0.5, broken)}, tick=0.2, lease=0.6).start()
        second = Scheduler(store, {"slow": (0.5, slow)}, tick=0.2, lease=0.6)
        deadline = time.time() + 1.5
        while not any(name == "slow" for name, _ in first.runs) and time.time() < deadline:
            time.sleep(0.05)
        started = time.time()
        while time.time() < started + 2.5:  # all through the slow job and the failed one
            assert second.step(time.time()) == [] and not second.leader
            time.sleep(0.1)
        assert first.stop()
        runs = [json.loads(d) for (d,) in _sql(home, "SELECT detail FROM audit_log WHERE action = 'job' ORDER BY id")]
        assert {(r["job"], r["ok"]) for r in runs} == {("slow", True), ("broken", False)}
        assert next(r for r in runs if r["job"] == "broken")["result"] == "RuntimeError: index unreachable"
        assert store.job_times()["broken"] > 0  # stamped when it started: not retried every tick
    finally:
        store.close()


def test_a_services_first_recall_goes_before_the_schedulers_first_jobs(home):
    """The jobs due since the last process ran them (a fresh `hermes -z` an hour later) wait
    for the service's first recall block, or a tick; a scheduler stopped while it waits stops."""
    with MemoryService(Settings.load(home, embedder="none")) as service:
        service.scheduler.stop()  # (the service's own, started with its default tick of 5 s)
        waiting = Scheduler(service.store, {"sweep": (0.0, lambda now: "swept")}, tick=30.0,
                            after=service.engine.recalled).start()
        time.sleep(0.5)
        assert not waiting.leader and not service.store.job_times().get("sweep")
        service.recall("user:cli:first", "What did I plan for the weekend?")
        deadline = time.monotonic() + 10
        while not service.store.job_times().get("sweep") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting.leader and service.store.job_times()["sweep"] > 0
        assert waiting.stop()
        never = Scheduler(service.store, {"sweep": (0.0, lambda now: "swept")}, tick=30.0,
                          after=threading.Event()).start()
        started = time.monotonic()
        assert never.stop() and time.monotonic() - started < 2 and not never.leader


def test_a_service_starts_its_scheduler_and_releases_the_lease_on_close(home, monkeypatch):
    service = MemoryService(Settings.load(home, embedder="none"))
    try:
        owner = service.scheduler.owner
        deadline = time.monotonic() + 10
        while _lease(home)[0] != owner and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _lease(home)[0] == owner
        while not _clocks_started(service) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _clocks_started(service) and service.scheduler.leader
    finally:
        service.close()
    assert _lease(home) == ("", 0.0)
    monkeypatch.setenv("CMMS_SCHEDULER", "off")
    with MemoryService(Settings.load(home, embedder="none")) as quiet:
        assert quiet.scheduler is None


def test_only_one_of_two_processes_runs_the_jobs_and_the_other_takes_over(home, tmp_path):
    url = url_of(home)
    Store(url).close()  # migrated once, before the two processes open it
    script = tmp_path / "scheduler_child.py"
    script.write_text(CHILD)
    errors = [(tmp_path / f"child{n}.err").open("w") for n in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), url], stdout=subprocess.PIPE, stderr=err, text=True)
             for err in errors]
    try:
        owners = [p.stdout.readline().strip() for p in procs]
        assert all(owners), [(tmp_path / f"child{n}.err").read_text() for n in range(2)]
        both = time.time()
        time.sleep(4)
        assert [p.poll() for p in procs] == [None, None]  # both ran all along
        runs = _job_runs(home, both)
        assert len(runs) >= 4
        leaders = {actor for _, actor in runs}
        assert len(leaders) == 1, runs
        [leader] = leaders
        lead = [f"scheduler:{o}" for o in owners].index(leader)
        follower = f"scheduler:{owners[1 - lead]}"

        procs[lead].kill()
        procs[lead].wait()
        killed = time.time()
        deadline = time.monotonic() + 10
        while not any(a == follower for _, a in _job_runs(home, killed)) and time.monotonic() < deadline:
            time.sleep(0.1)
        after = _job_runs(home, killed)
        took = min(at for at, a in after if a == follower) - killed
        print(f"\nfollower took over after {took:.2f} s (lease 1.0 s)")
        assert took < 3.0  # within a few lease periods
        assert {a for _, a in after} == {follower}
        assert _lease(home)[0] == owners[1 - lead]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
        for err in errors:
            err.close()
