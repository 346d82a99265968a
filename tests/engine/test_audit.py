"""Audit and reindex on real stores: inject each kind of drift by hand, find exactly it, repair it."""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from hermes_cmms.ops import audit
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.store.store import NewMemory
from hermes_cmms.vectors.chroma import VIEWS

A, B = "test:audit-a", "test:audit-b"
GHOST = ["%032x" % n for n in range(1, 6)]  # ids no memory has
STRAY = "f" * 32
NOTES = ("The garage door code is 4417", "Grandma's birthday falls on the ninth of March",
         "The blue bicycle has a flat rear tyre", "Our router's admin page lives at 192.168.1.1",
         "Invoices are filed in the green cabinet", "The dentist appointment costs 80 euros",
         "The Wi-Fi password hint is the dog's name")


def _sql(svc, query: str, **params) -> list:
    with svc.store.read() as conn:
        return conn.execute(text(query), params).all()


def _write(svc, query: str, **params) -> int:
    with svc.store._write_lock, svc.store.write() as conn:
        return conn.execute(text(query), params).rowcount


def _seed(svc) -> dict:
    """Two scopes with notes, facts (one superseded by a conflict), a turn, learned items
    with links, a belief row with evidence and a working memory; vectors indexed."""
    ids = {f"n{i}": svc.remember(A, note, source="mcp:store_memory") for i, note in enumerate(NOTES)}
    for name, (s, p, o) in {"porto": ("Ana", "lives in", "Porto"), "lisbon": ("Ana", "lives in", "Lisbon"),
                            "acme": ("Ana", "works at", "Acme"), "jazz": ("Bruno", "likes", "jazz")}.items():
        ids[name] = svc.remember_fact(A, s, p, o, source="mcp:remember")
    ids["t0"], ids["t1"] = svc.retain_turn(A, "s1", "I moved to Lisbon last spring.", "Lisbon is lovely.",
                                           source="hermes:cli")
    ids["decision"] = svc.store_note(A, "Ana decided to learn Portuguese", kind="decision", source="learn:test",
                                     learned_from=[ids["t0"]]).id
    ids["belief"] = svc.store_note(A, "Remote work suits Ana", kind="belief", source="learn:test",
                                   learned_from=[ids["t0"]]).id
    ids["working"] = svc.remember(A, "Parked on level 3 of the garage", source="mcp:store_memory", ttl_seconds=600)
    _write(svc, "INSERT INTO beliefs (memory_id, scope, proposition_key, topic, polarity) "
                "VALUES (:m, :s, 'remote work suits ana', 'ana', 1)", m=ids["belief"], s=A)
    _write(svc, "INSERT INTO evidence (belief_id, scope, memory_id, source, stance, note, at) "
                "VALUES (:b, :s, :m, 'learn:test', 1, '', 0)", b=ids["belief"], s=A, m=ids["t0"])
    ids["b0"] = svc.remember(B, "The office plant needs water on Fridays", source="mcp:store_memory")
    ids["bfact"] = svc.remember_fact(B, "Carla", "owns", "a red kayak", source="mcp:remember")
    assert svc.upkeep.drain(180)
    return ids


def _vector(svc) -> list[float]:
    return svc.indexer.embedder.embed(["a stray vector nobody stored"])[0]


def _inject(svc, ids: dict) -> dict:
    """Every kind of damage, by direct SQL and direct Chroma calls; returns the expected findings."""
    vectors = svc.indexer.vectors
    vectors.delete(A, [ids["n0"]])  # every view
    vectors.upsert(A, [STRAY], [_vector(svc)], [{"kind": "note", "created_at": 0.0}])  # content view only
    [(bruno, jazz)] = _sql(svc, "SELECT source_id, target_id FROM relations WHERE memory_id = :m", m=ids["jazz"])
    _write(svc, "DELETE FROM relations WHERE memory_id = :m", m=ids["jazz"])
    [(lisbon,)] = _sql(svc, "SELECT target_id FROM relations WHERE memory_id = :m", m=ids["lisbon"])
    [(rel, acme)] = _sql(svc, "SELECT id, target_id FROM relations WHERE memory_id = :m", m=ids["acme"])
    _write(svc, "UPDATE relations SET target_id = :t WHERE id = :r", t=lisbon, r=rel)
    _write(svc, "INSERT INTO facts (memory_id, scope, subject, predicate, object) VALUES (:m, :s, 'x', 'y', 'z')",
           m=GHOST[0], s=A)
    _write(svc, "INSERT INTO evidence (belief_id, scope, source, stance, note, at) VALUES (:b, :s, '', 1, '', 0)",
           b=GHOST[1], s=A)
    [(evidence,)] = _sql(svc, "SELECT id FROM evidence WHERE belief_id = :b", b=GHOST[1])
    _write(svc, "INSERT INTO links (memory_id, source_id, scope) VALUES (:m, :src, :s)", m=GHOST[2], src=ids["n1"], s=A)
    _set(svc, ids["n1"], superseded_by=GHOST[3])
    _set(svc, ids["n2"], confidence=1.7)
    _set(svc, ids["n3"], confidence=0.99)  # reliability 0.9, never reinforced
    _set(svc, ids["porto"], confidence=0.9)  # lost a conflict: should be halved
    _set(svc, ids["n4"], state="zombie")
    _write(svc, "INSERT INTO audit_log (at, action, actor, scope, memory_id, detail) VALUES "
                "(:at, 'lifecycle', 'cmms', :s, :m, :d)", at=time.time(), s=A, m=ids["n4"],
           d=json.dumps({"state_from": "stale", "state_to": "active", "reason": "age"}))
    [(event,)] = _sql(svc, "SELECT max(id) FROM audit_log")
    _set(svc, ids["t0"], superseded_by=ids["t1"])
    _set(svc, ids["t1"], superseded_by=ids["t0"])
    _set(svc, ids["n5"], superseded_by=ids["n5"])
    _set(svc, ids["working"], expires_at=time.time() - 3600)
    _set(svc, ids["jazz"], source="")
    _write(svc, "DELETE FROM links WHERE memory_id = :m", m=ids["decision"])
    _set(svc, ids["b0"], state="zombie")  # the one finding in the other scope
    return {
        "orphans": {("fact_without_memory", GHOST[0]), ("evidence_without_belief", evidence),
                    ("link_without_memory", GHOST[2]), ("superseded_by_missing", ids["n1"]),
                    ("entity_without_relation", bruno), ("entity_without_relation", jazz),
                    ("entity_without_relation", acme)},
        "receipts": {("empty_receipt", ids["jazz"]), ("learned_without_link", ids["decision"])},
        "lifecycle": {("unknown_state", ids["n4"]), ("backward_move", event),
                      ("supersede_cycle", min(ids["t0"], ids["t1"])), ("superseded_by_self", ids["n5"]),
                      ("expired_not_swept", ids["working"])},
        "confidence": {("confidence_out_of_range", ids["n2"]), ("above_ceiling", ids["n3"]),
                       ("conflict_not_penalised", ids["porto"])},
        "vector_drift": {("missing_vector", ids["n0"], "content"), ("missing_vector", ids["n0"], "context"),
                         ("missing_vector", ids["n0"], "sentences"), ("stray_vector", STRAY, "content")},
        "graph_drift": {("fact_without_relation", ids["jazz"]), ("relation_mismatch", rel)},
    }


def _set(svc, memory_id: str, **values) -> None:
    assignments = ", ".join(f"{name} = :{name}" for name in values)
    assert _write(svc, f"UPDATE memories SET {assignments} WHERE id = :id", id=memory_id, **values) == 1


def _found(answer: dict, audit_type: str) -> set:
    """(check, key[, view]) of each finding listed for one type."""
    return {(f["check"], f.get("memory_id", f.get("id")), *([f["detail"]["view"]] if "view" in f["detail"] else []))
            for f in answer["findings"][audit_type]}


@pytest.fixture
def seeded(service):
    return service, _seed(service)


@pytest.mark.quick
def test_a_healthy_store_has_no_findings(seeded):
    svc, ids = seeded
    answer = audit.run(svc)
    assert answer["ok"] and set(answer["counts"]) == set(audit.AUDIT_TYPES), answer["findings"]
    assert answer["checked"]["memories"] == _sql(svc, "SELECT count(*) FROM memories")[0][0] == len(ids)
    assert answer["checked"]["memories_content"] == answer["checked"]["vectors_content"]
    assert answer["checked"]["index_lag"] == 0


def test_every_injected_drift_is_found_exactly_then_reindex_repairs_it(seeded):
    svc, ids = seeded
    expected = _inject(svc, ids)
    answer = audit.run(svc, "all", A)
    assert answer["scope"] == A and not answer["ok"]
    for audit_type, want in expected.items():
        assert _found(answer, audit_type) == want, audit_type
        assert answer["counts"][audit_type] == len(want)
    relation = next(f for f in answer["findings"]["graph_drift"] if f["check"] == "relation_mismatch")
    assert set(relation["detail"]) == {"memory_id", "target"} and relation["detail"]["target"]["fact_says"] == "acme"

    other = audit.run(svc, "all", B)
    assert other["counts"] == {**{t: 0 for t in audit.AUDIT_TYPES}, "lifecycle": 1}
    assert _found(other, "lifecycle") == {("unknown_state", ids["b0"])}
    assert audit.run(svc)["counts"]["lifecycle"] == len(expected["lifecycle"]) + 1

    memories = _sql(svc, "SELECT count(*) FROM memories")[0][0]
    done = audit.reindex(svc)
    assert done["orphans_deleted"]["fact_without_memory"] == 1 and done["orphans_deleted"]["superseded_by_missing"] == 1
    assert (done["vectors_queued"], done["vectors_removed"], done["drained"]) == (1, 1, True)
    after = audit.run(svc)
    assert {t: after["counts"][t] for t in audit.REPAIRED} == {t: 0 for t in audit.REPAIRED}, after["findings"]
    assert after["counts"]["confidence"] == 3 and after["counts"]["receipts"] == 2  # left for a person
    assert _sql(svc, "SELECT count(*) FROM memories")[0][0] == memories
    assert svc.indexer.vectors.count() == memories
    for view in VIEWS:
        assert svc.indexer.vectors.present(A, [ids["n0"], STRAY], view) == {ids["n0"]}
    assert _sql(svc, "SELECT count(*) FROM facts WHERE memory_id = :m", m=GHOST[0])[0][0] == 0
    assert _sql(svc, "SELECT count(*) FROM evidence WHERE belief_id = :b", b=ids["belief"])[0][0] == 1  # kept
    assert _sql(svc, "SELECT superseded_by FROM memories WHERE id = :m", m=ids["n1"]) == [(None,)]
    assert _sql(svc, "SELECT e.key FROM relations r JOIN entities e ON e.id = r.target_id WHERE r.memory_id = :m",
                m=ids["acme"]) == [("acme",)]
    [event] = svc.audit_log(action="reindex")
    assert event.detail["vectors_queued"] == 1


def test_reindex_of_one_scope_leaves_the_other_alone(seeded):
    svc, ids = seeded
    svc.indexer.vectors.delete(A, [ids["n0"]])
    svc.indexer.vectors.delete(B, [ids["b0"]])
    _write(svc, "INSERT INTO facts (memory_id, scope, subject, predicate, object) VALUES (:m, :s, 'x', 'y', 'z')",
           m=GHOST[0], s=B)
    done = audit.reindex(svc, B)
    assert done["vectors_queued"] == 1 and done["orphans_deleted"]["fact_without_memory"] == 1
    assert audit.run(svc, "vector_drift", B)["ok"]
    left = audit.run(svc, "vector_drift", A)
    assert _found(left, "vector_drift") == {("missing_vector", ids["n0"], v) for v in VIEWS}


def test_vector_drift_counts_pending_outbox_rows_as_lag_not_drift(seeded):
    svc, ids = seeded
    with svc.store._write_lock:  # the indexer cannot finish (mark done) while the lock is held
        svc.indexer.vectors.delete(A, [ids["n0"]])
        with svc.store.write() as conn:
            conn.execute(text("INSERT INTO outbox (memory_id, scope, op, attempts, created_at) "
                              "VALUES (:m, :s, 'upsert', 0, :t)"), {"m": ids["n0"], "s": A, "t": time.time() - 5})
        answer = audit.run(svc, "vector_drift", A)
    assert answer["ok"] and answer["checked"]["index_lag"] == 1
    assert answer["checked"]["index_lag_seconds"] >= 5
    assert svc.upkeep.drain(60) and audit.run(svc, "vector_drift", A)["ok"]


def _spy(monkeypatch, obj, *names: str) -> dict[str, int]:
    """Count the calls of these methods of one real object (each still does its work)."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        def counted(*args, _real=getattr(obj, name), _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(obj, name, counted)
    return calls


def test_vector_drift_reads_the_index_once_per_page_not_once_per_memory(service, monkeypatch):
    svc = service
    ids = svc.store.add([NewMemory(A, f"Note number {n} about the garden shed", source="test:bulk")
                         for n in range(300)])
    assert svc.upkeep.drain(300)
    svc.indexer.vectors.delete(A, [ids[7]])
    calls = _spy(monkeypatch, svc.indexer.vectors, "present", "_page")  # each one Chroma get
    answer = audit.run(svc, "vector_drift", A)
    assert _found(answer, "vector_drift") == {("missing_vector", ids[7], view) for view in VIEWS}
    assert answer["checked"]["memories_content"] == 300
    assert calls["present"] <= 2 * len(VIEWS) and calls["_page"] <= 2 * len(VIEWS), calls  # was 300 per view
    calls.update(dict.fromkeys(calls, 0))
    done = audit.reindex(svc, A)
    assert done["vectors_queued"] == 1 and audit.run(svc, "vector_drift", A)["ok"]
    assert calls["present"] <= 3 * 2 * 2 * len(VIEWS), calls  # two repair passes and the audit after


def test_learned_without_link_matches_the_receipts_of_learning_exactly(keyword_service):
    svc = keyword_service
    notes = {source: svc.store_note(A, f"Ana chose option {n} for the garden", kind="decision", source=source).id
             for n, source in enumerate(("Learning-session notes", "learned-from-slack", "LEARN:test",
                                         "extract:session", "learn:notes"))}
    linked = svc.store_note(A, "Ana chose the blue paint", kind="decision", source="learn:notes",
                            learned_from=[notes["Learning-session notes"]]).id
    answer = audit.run(svc, "receipts", A)
    assert _found(answer, "receipts") == {("learned_without_link", notes["extract:session"]),
                                          ("learned_without_link", notes["learn:notes"])}
    assert linked not in str(answer["findings"])


def test_a_half_written_belief_is_found_and_left_for_a_person(keyword_service):
    svc = keyword_service
    whole = svc.set_belief(A, "Remote work suits Ana", source="mcp:set_belief")["id"]
    half = svc.store_note(A, "Tea beats coffee", kind="belief", source="mcp:store_memory").id  # no beliefs row
    answer = audit.run(svc, "receipts", A)
    assert _found(answer, "receipts") == {("belief_without_row", half)}
    audit.reindex(svc, A)
    assert _sql(svc, "SELECT id FROM memories WHERE id = :m", m=half) == [(half,)]
    assert _found(audit.run(svc, "receipts", A), "receipts") == {("belief_without_row", half)}
    assert _sql(svc, "SELECT count(*) FROM beliefs WHERE memory_id IN (:w, :h)", w=whole, h=half) == [(1,)]


def test_findings_are_capped_but_counted(keyword_service):
    svc = keyword_service
    svc.remember(A, "The garage door code is 4417", source="mcp:store_memory")
    rows = [{"m": "%032x" % (1000 + n), "s": A} for n in range(150)]
    with svc.store._write_lock, svc.store.write() as conn:
        conn.execute(text("INSERT INTO facts (memory_id, scope, subject, predicate, object) "
                          "VALUES (:m, :s, 'x', 'y', 'z')"), rows)
    answer = audit.run(svc, "orphans")
    assert answer["counts"] == {"orphans": 150} and len(answer["findings"]["orphans"]) == audit.MAX_FINDINGS
    assert set(answer["findings"]) == {"orphans"}


def test_the_contract_types_choose_the_checks_and_all_is_full(keyword_service):
    svc = keyword_service
    svc.store_note(A, "A clean note.")
    assert set(audit.run(svc)["counts"]) == set(audit.AUDIT_TYPES)  # the default is "full"
    assert audit.run(svc, "all")["counts"] == audit.run(svc, "full")["counts"]
    assert set(audit.run(svc, "consistency")["counts"]) == {"receipts", "lifecycle", "graph_drift", "vector_drift"}
    for one in ("orphans", "confidence", "receipts"):
        answer = audit.run(svc, one)
        assert answer["audit_type"] == one and set(answer["counts"]) == {one}


def test_findings_become_one_sentence_each_under_errors_or_warnings(keyword_service):
    svc = keyword_service
    kept = svc.store_note(A, "A note that stays.").id
    for n in range(5):  # facts rows whose memory is gone: integrity errors
        _write(svc, "INSERT INTO facts (memory_id, scope, subject, predicate, object) VALUES (:m, :s, 'x', 'y', 'z')",
               m="%032x" % (7000 + n), s=A)
    _set(svc, kept, source="")  # an empty receipt: a warning
    answer = audit.run(svc, "full", A)
    shown = str(uuid.UUID(hex="%032x" % 7000))
    assert answer["errors"] == [f"5 fact_without_memory (orphans), memory_id {shown}, memory_id "
                                f"{uuid.UUID(hex='%032x' % 7001)}, memory_id {uuid.UUID(hex='%032x' % 7002)} and more."]
    assert f"1 empty_receipt (receipts), memory_id {uuid.UUID(hex=kept)}." in answer["warnings"]
    assert any(w.startswith("The vector index was not checked") for w in answer["warnings"])  # keyword-only
    assert audit.run(svc, "orphans", B)["errors"] == [] and audit.run(svc, "orphans", B)["warnings"] == []


def test_stats_give_the_confidence_distribution_and_the_least_sure(keyword_service):
    svc = keyword_service
    ids = [svc.store_note(A, f"Note number {n} about something.").id for n in range(6)]
    for memory_id, confidence in zip(ids, (0.05, 0.25, 0.2, 0.5, 0.79, 1.0)):
        _set(svc, memory_id, confidence=confidence)
    _set(svc, ids[2], superseded_by=ids[3])  # superseded: not among the least sure
    svc.store_note(B, "Another scope's note.")
    stats = audit.run(svc, "confidence", A)["stats"]["confidence"]
    assert stats == {"total": 6, "buckets": {"0.0-0.2": 1, "0.2-0.4": 2, "0.4-0.6": 1, "0.6-0.8": 1, "0.8-1.0": 1},
                     "low_confidence": [ids[0], ids[1]]}
    assert audit.run(svc)["stats"]["confidence"]["total"] == 7


def test_an_outbox_upsert_for_a_gone_memory_is_an_orphan_unless_a_delete_follows(keyword_service):
    svc = keyword_service  # no vector index: the outbox is never drained here
    for memory_id, ops in ((GHOST[0], ("upsert",)), (GHOST[1], ("upsert", "delete"))):
        for op in ops:
            _write(svc, "INSERT INTO outbox (memory_id, scope, op, attempts, created_at) VALUES (:m, :s, :op, 0, 0)",
                   m=memory_id, s=A, op=op)
    answer = audit.run(svc, "all")
    assert {(f["check"], f["detail"]["memory_id"]) for f in answer["findings"]["orphans"]} == {
        ("outbox_without_memory", GHOST[0])}
    assert answer["counts"]["vector_drift"] == 0 and "not checked" in answer["checked"]["vector_index"]
    done = audit.reindex(svc)
    assert done["orphans_deleted"]["outbox_without_memory"] == 1 and "not repaired" in done["vectors"]
    assert _sql(svc, "SELECT memory_id, op FROM outbox ORDER BY id") == [(GHOST[1], "upsert"), (GHOST[1], "delete")]


def test_bad_audit_arguments_are_refused_in_one_sentence(keyword_service):
    with pytest.raises(InvalidInput, match=r"^Unknown audit type 'drift'; choose one of full, consistency, orphans, "
                                           r".*, all\.$"):
        audit.run(keyword_service, "drift")
    with pytest.raises(InvalidInput, match="scope must be a non-empty string"):
        audit.run(keyword_service, "all", "  ")
    with pytest.raises(InvalidInput, match="scope must be a non-empty string"):
        audit.reindex(keyword_service, 42)


def test_the_health_page_describes_every_check():
    page = (Path(__file__).resolve().parents[2] / "docs" / "health.md").read_text()
    assert set(audit.CHECKS) == set(audit.AUDIT_TYPES)
    for audit_type, checks in audit.CHECKS.items():
        for check in checks:
            assert f"`{check}`" in page, (audit_type, check)
