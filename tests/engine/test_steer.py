"""Steering by hand through the facade: correct, pin, tag, and forget with a preview of all that
goes with it. Real stores (SQLite or PostgreSQL), real Chroma and MiniLM where recall is the point."""
import json
import time

import pytest

from db import row, sql
from hermes_cmms.common.errors import InvalidInput, UnknownMemory
from hermes_cmms.store.store import NewMemory

SCOPE, OTHER = "test:steer", "test:steer-other"
TABLES = ("memories", "facts", "links", "beliefs", "evidence", "relations", "entities")


def _row(service, memory_id):
    return row(service, "SELECT * FROM memories WHERE id = ?", memory_id)


def _events(service, action, memory_id=None):
    one = "" if memory_id is None else " AND memory_id = ?"
    rows = sql(service, f"SELECT actor, memory_id, detail, snapshot FROM audit_log WHERE action = ?{one} ORDER BY id",
               action, *(() if memory_id is None else (memory_id,)))
    return [{"actor": a, "memory_id": m, "detail": json.loads(d), "snapshot": s} for a, m, d, s in rows]


def _count(service, table) -> int:
    return sql(service, f"SELECT count(*) FROM {table}")[0][0]


# -- correct --------------------------------------------------------------------------------


@pytest.mark.quick
def test_a_correction_supersedes_the_old_memory_and_the_next_recall_finds_only_the_new_text(service):
    old = service.remember(SCOPE, "The storage unit door code is 4412.", source="hermes:cmms_remember")
    service.upkeep.drain(60)
    new = service.correct(SCOPE, old, "The storage unit door code is 9931, password is Tr0ub4dor&3xyz.",
                          actor="cli")
    assert service.upkeep.drain(60)
    stored = _row(service, new)
    assert "9931" in stored["content"] and "Tr0ub4dor" not in stored["content"]  # redacted
    assert (stored["source"], stored["kind"], stored["tier"]) == ("cli:correct", "note", "semantic")
    before = _row(service, old)
    assert before["superseded_by"] == new and before["corrected_at"] is not None  # kept, superseded
    [event] = _events(service, "correct", old)
    assert (event["actor"], event["detail"]) == ("cli:correct", {"corrected_by": new})
    assert _events(service, "supersede", old) == []  # one correction, one event on the trail
    assert [e.action for e in service.audit_log(SCOPE, memory_id=old)] == ["correct", "remember"]
    block = service.recall(SCOPE, "What is the storage unit door code?")
    assert "9931" in block and "4412" not in block
    assert [h.id for h in service.search(SCOPE, "storage unit door code")] == [new]
    assert new in {m.id for m in service.semantic_search(SCOPE, "storage unit door code")}  # re-indexed
    assert old not in {m.id for m in service.semantic_search(SCOPE, "storage unit door code")}


def test_a_corrected_message_keeps_its_session_role_and_tags_and_a_pinned_one_stays_pinned(keyword_service):
    svc = keyword_service
    user, _ = svc.retain_turn(SCOPE, "s1", "My sister lives in Porto.", "Noted.")
    svc.tag(SCOPE, user, add=["family"], actor="ui")
    svc.pin(SCOPE, user, actor="ui")
    new = svc.correct(SCOPE, user, "My sister lives in Braga.", actor="ui")
    stored = _row(svc, new)
    assert (stored["session_id"], stored["role"], stored["kind"], stored["tier"]) == ("s1", "user", "message", "episodic")
    assert json.loads(stored["tags"]) == ["family"] and stored["pinned"] == 1


@pytest.mark.parametrize("text, message", [
    ("The gate is green.", "reads as the memory already does"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "Nothing is left to remember once secrets are removed"),
    ("", "non-empty string"),
])
def test_a_correction_that_changes_nothing_is_refused(keyword_service, text, message):
    old = keyword_service.remember(SCOPE, "The gate is green.")
    with pytest.raises(InvalidInput, match=message):
        keyword_service.correct(SCOPE, old, text, actor="cli")
    assert _row(keyword_service, old)["superseded_by"] is None and _count(keyword_service, "memories") == 1


def test_another_scopes_id_is_answered_as_a_missing_one_by_every_steer_verb(keyword_service):
    svc = keyword_service
    theirs = svc.remember(OTHER, "Their gate is red.", tags=["mine"])
    calls = [lambda i: svc.correct(SCOPE, i, "The gate is blue.", actor="cli"),
             lambda i: svc.pin(SCOPE, i, actor="cli"), lambda i: svc.tag(SCOPE, i, remove=["mine"], actor="cli"),
             lambda i: svc.forget_preview(SCOPE, [i]), lambda i: svc.forget_many(SCOPE, [i], actor="cli")]
    for call in calls:
        for memory_id in (theirs, "0" * 32):
            with pytest.raises(UnknownMemory, match=f"^No memory '{memory_id}' in this scope.$"):
                call(memory_id)
    after = _row(svc, theirs)
    assert (after["content"], after["pinned"], json.loads(after["tags"])) == ("Their gate is red.", 0, ["mine"])
    assert _events(svc, "correct") == _events(svc, "pin") == _events(svc, "tag") == _events(svc, "forget") == []


def test_a_correction_of_a_replaced_memory_or_of_a_belief_is_refused(keyword_service):
    svc = keyword_service
    old = svc.remember(SCOPE, "The gate is green.")
    svc.correct(SCOPE, old, "The gate is blue.", actor="cli")
    with pytest.raises(InvalidInput, match="was already replaced by"):
        svc.correct(SCOPE, old, "The gate is grey.", actor="cli")
    belief = svc.set_belief(SCOPE, "Alice likes tea")["id"]
    with pytest.raises(InvalidInput, match="set_belief with supersedes"):
        svc.correct(SCOPE, belief, "Alice likes coffee", actor="cli")


# -- pin ------------------------------------------------------------------------------------


def test_a_pinned_memory_never_decays_and_unpinned_it_does(keyword_service):
    svc = keyword_service
    pinned, plain = svc.remember(SCOPE, "Remember the blue door."), svc.remember(SCOPE, "Remember the red door.")
    assert svc.pin(SCOPE, pinned, actor="cli") is True
    before = _row(svc, pinned)["confidence"]
    svc.upkeep.decay(now=time.time() + 5 * 365 * 86400)
    assert (_row(svc, pinned)["confidence"], _row(svc, pinned)["state"]) == (before, "active")
    assert _row(svc, plain)["state"] == "archived"
    assert svc.pin(SCOPE, pinned, False, actor="cli") is False
    svc.upkeep.decay(now=time.time() + 5 * 365 * 86400)
    assert _row(svc, pinned)["state"] == "archived"
    assert [e["memory_id"] for e in _events(svc, "pin")] == [e["memory_id"] for e in _events(svc, "unpin")] == [pinned]


def test_a_pinned_working_memory_never_expires_and_the_sweep_leaves_it(keyword_service):
    svc = keyword_service
    kept = svc.remember(SCOPE, "Parked on level 3.", ttl_seconds=60)
    gone = svc.remember(SCOPE, "Parked on level 4.", ttl_seconds=60)
    svc.pin(SCOPE, kept, actor="cli")
    assert svc.upkeep.sweep(now=time.time() + 3600) == 1
    assert _row(svc, gone) is None
    assert _row(svc, kept)["expires_at"] is None
    assert [h.id for h in svc.search(SCOPE, "parked level")] == [kept]  # still recalled
    with pytest.raises(InvalidInput, match="true or false"):
        svc.pin(SCOPE, kept, "yes", actor="cli")


def test_consolidation_leaves_a_pinned_memory_alone(service):
    walks = ["I walked the dog along the beach this morning.",
             "This morning I took the dog for a walk on the beach.",
             "The dog and I went walking on the beach early today.",
             "Early this morning I walked my dog on the beach."]
    ids = [service.retain_turn(SCOPE, "walks", text, f"Reply {n}.")[0] for n, text in enumerate(walks)]
    service.pin(SCOPE, ids[0], actor="cli")
    assert service.upkeep.drain(60)
    summaries = service.consolidate(SCOPE, "walks").summaries
    assert _row(service, ids[0])["superseded_by"] is None and _row(service, ids[0])["consolidated_at"] is None
    [summary] = {_row(service, i)["superseded_by"] for i in ids[1:]}
    assert summary in summaries  # the other three walks were consolidated


# -- tag ------------------------------------------------------------------------------------


def test_tags_are_added_and_removed_checked_redacted_and_audited(keyword_service):
    svc = keyword_service
    memory_id = svc.remember(SCOPE, "The boat is moored at Pier 9.", tags=["boat", "old"])
    assert svc.tag(SCOPE, memory_id, add=["harbour", "boat"], remove=["old"], actor="cli") == ["boat", "harbour"]
    assert [h.id for h in svc.search(SCOPE, "boat moored", tags=["harbour"])] == [memory_id]
    redacted = svc.tag(SCOPE, memory_id, add=["password=Tr0ub4dor&3xyzzy"], actor="cli")
    assert "Tr0ub4dor" not in json.dumps(redacted) and "Tr0ub4dor" not in json.dumps(_row(svc, memory_id))
    [first, _] = _events(svc, "tag", memory_id)
    assert first["detail"] == {"added": ["harbour", "boat"], "removed": ["old"]}
    for add, message in ((["x"] * 40, "At most 32 tags"), ("boat", "list of non-empty strings"),
                         ([f"t{n}" for n in range(31)], "at most 32 tags, not 34"), ((), "Name a tag")):
        with pytest.raises(InvalidInput, match=message):
            svc.tag(SCOPE, memory_id, add=add, actor="cli")
    assert len(json.loads(_row(svc, memory_id)["tags"])) == 3


# -- forget with a preview ------------------------------------------------------------------


def _rich_scope(svc) -> dict:
    """A turn that facts, a belief and a graph were learned from, a summary of two notes, a
    note another note supersedes, and what another scope holds."""
    learned = svc.learn(SCOPE, "Alice lives in Paris. Alice works at Acme.", source="cli:learn")
    user, reply = svc.retain_turn(SCOPE, "s1", "Bob moved to Lisbon.", "Good for Bob.")
    notes = [svc.remember(SCOPE, text, kind="observation", tier="episodic", dedup=False)
             for text in ("The kettle is broken.", "The kettle leaks water.")]
    summary = svc.store.consolidate(NewMemory(scope=SCOPE, content="The kettle is broken and leaks.",
                                              kind="summary", tier="semantic"), notes)
    belief = svc.set_belief(SCOPE, "Bob lives in Lisbon", evidence_ids=[user])["id"]
    first = svc.remember(SCOPE, "The wifi password hint is the cat's name.")
    svc.remember(SCOPE, "Their kettle is fine.", tags=["theirs"])
    svc.remember(OTHER, "Alice lives in Paris.")
    assert "Lisbon" in svc.recall(SCOPE, "Did Bob move to Lisbon? Is the kettle broken? Where does Alice live?")
    assert svc.upkeep.recent_recalls(SCOPE)  # (written on a thread of its own: this waits for it)
    return {"learned": learned["id"], "user": user, "reply": reply, "note": notes[0], "summary": summary,
            "belief": belief, "first": first}


def _all_rows(svc) -> dict:
    counts = {table: _count(svc, table) for table in (*TABLES, "recalled_memories")}
    counts["vector deletes"] = sql(svc, "SELECT count(*) FROM outbox WHERE op = 'delete'")[0][0]
    counts["snapshots"] = sql(svc, "SELECT count(*) FROM audit_log WHERE snapshot IS NOT NULL")[0][0]
    counts["current"] = sql(svc, "SELECT count(*) FROM memories WHERE superseded_by IS NULL")[0][0]
    return counts


def test_the_preview_lists_exactly_what_the_forget_then_removes(keyword_service):
    svc = keyword_service
    made = _rich_scope(svc)
    asked = [made["learned"], made["user"], made["note"]]
    before = _all_rows(svc)
    preview = svc.forget_preview(SCOPE, asked)
    assert _all_rows(svc) == before  # the preview changes nothing
    assert [m["id"] for m in preview["memories"]] == asked
    cascaded = {m["id"]: m["reason"] for m in preview["cascaded"]}
    assert cascaded[made["summary"]] == "a memory it summarised was forgotten"
    assert len(cascaded) >= 3  # the summary and the facts learned from the text
    assert preview["facts"] >= 2 and preview["relations"] >= 2 and preview["entities"] >= 3
    assert preview["evidence"] >= 1 and preview["links"] >= 2

    assert svc.forget_many(SCOPE, asked, actor="cli") == 3
    after = _all_rows(svc)
    gone = {table: before[table] - after[table] for table in (*TABLES, "recalled_memories")}
    assert gone == {"memories": len(asked) + len(cascaded), "facts": preview["facts"], "links": preview["links"],
                    "beliefs": preview["beliefs"], "evidence": preview["evidence"],
                    "relations": preview["relations"], "entities": preview["entities"],
                    "recalled_memories": preview["recalls"]}
    assert preview["recalls"] >= 2  # the recall's lines of the turn and the kettle
    assert after["vector deletes"] - before["vector deletes"] == preview["vectors"] == len(asked) + len(cascaded)
    assert after["snapshots"] - before["snapshots"] == preview["snapshots"] == len(asked)
    # the other note of the summary is current again, as the preview said
    assert preview["restored"] == 1 and _row(svc, made["summary"]) is None
    assert preview["reembedded"] == 1  # the reply, whose context quoted the forgotten turn
    assert _row(svc, made["reply"])["context"] is None
    assert sql(svc, "SELECT content FROM memories WHERE scope = ?", OTHER) == [("Alice lives in Paris.",)]


def test_a_forget_naming_a_missing_id_forgets_nothing(keyword_service):
    svc = keyword_service
    ids = [svc.remember(SCOPE, f"Note number {n} about boats.") for n in range(3)]
    with pytest.raises(UnknownMemory, match="No memory '1{32}' in this scope."):
        svc.forget_many(SCOPE, [ids[0], "1" * 32], actor="cli")
    assert _count(svc, "memories") == 3
    for bad, message in (([], "1 or more ids"), (ids[0], "list of 1 or more"), ([""], "non-empty string"),
                         (["x"] * 1001, "At most 1,000")):
        with pytest.raises(InvalidInput, match=message):
            svc.forget_preview(SCOPE, bad)
    with pytest.raises(InvalidInput, match="Name who acts"):
        svc.forget_many(SCOPE, ids, actor="")
    assert svc.forget_many(SCOPE, [ids[0], ids[0], ids[1]], actor="ui") == 2
    assert sorted(e["memory_id"] for e in _events(svc, "forget")) == sorted(ids[:2])


def test_an_export_keeps_what_was_pinned_and_corrected(keyword_service):
    svc = keyword_service
    pinned, wrong = svc.remember(SCOPE, "Remember the blue door."), svc.remember(SCOPE, "The gate is green.")
    svc.pin(SCOPE, pinned, actor="cli")
    right = svc.correct(SCOPE, wrong, "The gate is blue.", actor="cli")
    records, corrected_at = list(svc.transfer.export(SCOPE)), _row(svc, wrong)["corrected_at"]
    svc.forget_all(SCOPE, actor="cli")
    svc.transfer.import_records(records)
    assert (_row(svc, pinned)["pinned"], _row(svc, wrong)["corrected_at"]) == (1, corrected_at)
    assert [h.id for h in svc.search(SCOPE, "gate")] == [right]
