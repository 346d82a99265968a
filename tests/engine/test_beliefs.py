"""Beliefs on real stores: set (create, reinforce, supersede, challenge), negation, every
get_belief filter, every conflict strategy with its audit event, the six reflections on one
known fixture, scope isolation, forget, and bad input for every function."""
from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from hermes_cmms.knowledge import beliefs
from hermes_cmms.knowledge.beliefs import get_belief, read_proposition, reflect, resolve_conflict, set_belief
from hermes_cmms.common.errors import InvalidInput, UnknownMemory
from hermes_cmms.common.ids import shown_id
from hermes_cmms.store.models import Evidence
from hermes_cmms.store.store import NewMemory
from db import row, sql, tables

SCOPE = "test:beliefs"
OTHER = "test:beliefs-other"
DAY = 86400.0
REPO = Path(__file__).resolve().parents[2]
SECRETS = ("hunter2secret", "sk-abcdefghijklmnopqrstuvwx123456")
SECRET_TEXT = f"the deploy password is {SECRETS[0]} and api key {SECRETS[1]}"


def _sql(svc, query: str, *params) -> list[tuple]:
    return sql(svc, query, *params)


def _memory(svc, memory_id: str) -> dict:
    return row(svc, "SELECT * FROM memories WHERE id = ?", memory_id)


def _belief_row(svc, memory_id: str) -> tuple:
    return _sql(svc, "SELECT scope, proposition_key, topic, polarity FROM beliefs WHERE memory_id = ?",
                memory_id)[0]


def _evidence(svc, belief_id: str) -> list[tuple]:
    return _sql(svc, "SELECT memory_id, source, stance, note, scope FROM evidence WHERE belief_id = ? "
                     "ORDER BY id", belief_id)


def _events(svc, action: str) -> list[dict]:
    rows = _sql(svc, "SELECT actor, scope, memory_id, detail FROM audit_log WHERE action = ? ORDER BY id", action)
    return [{"actor": a, "scope": s, "memory_id": m, "detail": json.loads(d)} for a, s, m, d in rows]


def _ids(answer: dict) -> list[str]:
    return [b["id"] for b in answer["beliefs"]]


def _set(svc, text: str, scope: str = SCOPE, **kwargs) -> str:
    return set_belief(svc.engine, scope, text, **kwargs)["id"]


def _dump(svc) -> str:
    """Every row of every table, as one string."""
    return repr({name: _sql(svc, f'SELECT * FROM "{name}"') for name in tables(svc)})


# -- set_belief -------------------------------------------------------------------------------------


@pytest.mark.quick
def test_a_new_belief_is_a_semantic_memory_with_its_proposition_and_evidence(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "Alice ordered green tea at lunch")
    answer = set_belief(svc.engine, SCOPE, "Alice likes tea", confidence=0.9, evidence="She said so",
                        evidence_ids=[note], source="mcp:set_belief", tags=["people"])
    assert answer["action"] == "created" and answer["superseded_ids"] == [] and "superseded" not in answer
    row = _memory(svc, answer["id"])
    assert (row["kind"], row["tier"], row["content"], row["confidence"], row["state"], row["source"]) == \
        ("belief", "semantic", "Alice likes tea", 0.9, "active", "mcp:set_belief")
    assert json.loads(row["tags"]) == ["people"]
    assert _belief_row(svc, answer["id"]) == (SCOPE, "alice likes tea", "alice", 1)
    assert _evidence(svc, answer["id"]) == [(note, "mcp:set_belief", 1, "She said so", SCOPE)]
    shown = answer["belief"]
    assert (shown["proposition_key"], shown["topic"], shown["polarity"], shown["evidence_for"],
            shown["reinforcements"]) == ("alice likes tea", "alice", 1, 1, 0)
    assert (shown["proposition"], shown["creator"], shown["lifecycle_state"], shown["version"],
            shown["source_ids"]) == ("Alice likes tea", "mcp:set_belief", "active", 1, [shown_id(note)])
    assert (answer["receipt"]["memory_type"], answer["receipt"]["memory_id"], answer["receipt"]["created_by"]) == \
        ("belief", answer["id"], "mcp:set_belief")
    assert shown["evidence"][0]["memory_id"] == note and shown["created_at"].endswith("+00:00")
    assert [e["memory_id"] for e in _events(svc, "remember")][-1] == answer["id"]


def test_the_same_proposition_reworded_reinforces_the_belief(keyword_service):
    svc = keyword_service
    first = set_belief(svc.engine, SCOPE, "Alice likes tea", confidence=0.9, source="mcp:a")
    again = set_belief(svc.engine, SCOPE, "I think Alice probably likes the tea.", source="hermes:chat",
                       evidence="Again")
    assert (again["action"], again["id"]) == ("reinforced", first["id"])
    assert _sql(svc, "SELECT count(*) FROM memories WHERE kind = 'belief'") == [(1,)]
    row = _memory(svc, first["id"])
    assert row["access_count"] == 1 and row["confidence"] == pytest.approx(0.93)  # 1 - 0.1 * 0.7
    assert [r["source"] for r in json.loads(row["receipts"])] == ["hermes:chat"]
    assert _evidence(svc, first["id"]) == [(None, "hermes:chat", 1, "Again", SCOPE)]
    set_belief(svc.engine, SCOPE, "alice LIKES tea")  # a bare restatement is evidence too
    assert _evidence(svc, first["id"])[-1] == (None, "", 1, "restated", SCOPE)
    assert _memory(svc, first["id"])["access_count"] == 2


def test_supersedes_marks_the_old_belief_and_halves_its_confidence(keyword_service):
    svc = keyword_service
    old = _set(svc, "Deploys are weekly", confidence=0.6, evidence="Release calendar")
    answer = set_belief(svc.engine, SCOPE, "Deploys are daily", confidence=0.9, supersedes=old)
    assert answer["action"] == "superseded" and answer["superseded_ids"] == [old]
    assert (answer["superseded"]["id"], answer["superseded"]["lifecycle_state"]) == (old, "superseded")
    assert (_memory(svc, old)["superseded_by"], _memory(svc, old)["confidence"]) == (answer["id"], 0.3)
    assert _memory(svc, answer["id"])["superseded_by"] is None
    [event] = _events(svc, "supersede")
    assert (event["memory_id"], event["detail"]["superseded_by"]) == (old, answer["id"])
    assert get_belief(svc.engine, SCOPE, belief_id=old)["beliefs"][0]["state"] == "superseded"
    again = set_belief(svc.engine, SCOPE, "Deploys are daily")  # reinforced: the old one's evidence stays there
    assert (again["action"], again["superseded_ids"]) == ("reinforced", []) and "superseded" not in again
    assert _evidence(svc, answer["id"]) == [(None, "", 1, "restated", SCOPE)]
    with pytest.raises(InvalidInput, match="already superseded"):
        set_belief(svc.engine, SCOPE, "Deploys are hourly", supersedes=old)
    with pytest.raises(InvalidInput, match="restates"):
        set_belief(svc.engine, SCOPE, "The deploys are daily", supersedes=answer["id"])


def test_superseding_with_a_proposition_already_held_reinforces_that_one(keyword_service):
    svc = keyword_service
    held, old = _set(svc, "Deploys are daily"), _set(svc, "Deploys are weekly")
    answer = set_belief(svc.engine, SCOPE, "The deploys are daily", supersedes=old)
    assert (answer["id"], answer["action"], answer["superseded_ids"]) == (held, "superseded", [old])
    assert _memory(svc, old)["superseded_by"] == held and _memory(svc, held)["access_count"] == 1


def test_the_negation_is_a_separate_belief_that_contests_it(keyword_service):
    svc = keyword_service
    likes = _set(svc, "Alice likes tea")
    answer = set_belief(svc.engine, SCOPE, "Alice doesn't like tea")
    assert answer["action"] == "created" and answer["id"] != likes
    assert _belief_row(svc, answer["id"]) == (SCOPE, "alice likes tea", "alice", -1)
    assert answer["belief"]["contested_by"] == [likes]
    assert _memory(svc, likes)["superseded_by"] is None and _memory(svc, answer["id"])["superseded_by"] is None
    assert get_belief(svc.engine, SCOPE, belief_id=likes)["beliefs"][0]["contested_by"] == [answer["id"]]


@pytest.mark.parametrize("text,expected", [
    ("Alice likes tea", ("alice likes tea", "alice", 1)),
    ("Alice doesn't like tea", ("alice likes tea", "alice", -1)),
    ("Alice does not like the tea.", ("alice likes tea", "alice", -1)),
    ("Postgres is not fast", ("postgres is fast", "postgres", -1)),
    ("Postgres isn’t fast", ("postgres is fast", "postgres", -1)),
    ("Bob never drinks coffee", ("bob drinks coffee", "bob", -1)),
    ("Carol no longer works at Acme", ("carol works at acme", "carol", -1)),
    ("We cannot ship on Friday", ("we can ship on friday", "we", -1)),
    ("Alice didn't move to Berlin", ("alice moved to berlin", "alice", -1)),
    ("Alice doesn't have a car", ("alice has car", "alice", -1)),
    ("I think that the build server probably runs Ubuntu", ("build server runs ubuntu", "build server", 1)),
    ("The project status is green", ("project status is green", "project status", 1)),
    ("It is not true that X is not Y", ("it is true that x is y", "it", 1)),  # two negations
])
def test_negations_and_hedges_are_read_off_the_proposition(text, expected):
    assert read_proposition(text) == expected


def test_a_given_polarity_asserts_or_denies_the_text_as_written(keyword_service):
    svc = keyword_service
    denied = _set(svc, "Alice likes tea", polarity=-1)
    double = _set(svc, "Bob doesn't drink coffee", polarity=-1)
    assert _belief_row(svc, denied)[1:] == ("alice likes tea", "alice", -1)
    assert _belief_row(svc, double)[1:] == ("bob drinks coffee", "bob", 1)
    # the stored text reads as what is held
    assert _memory(svc, denied)["content"] == "it is not the case that Alice likes tea"
    assert _memory(svc, double)["content"] == "it is not the case that Bob doesn't drink coffee"
    assert read_proposition(_memory(svc, double)["content"]) == ("bob drinks coffee", "bob", 1)


def test_denying_a_held_text_is_a_new_contradicting_belief_not_a_reinforcement(keyword_service):
    svc = keyword_service
    held = set_belief(svc.engine, SCOPE, "the staging API is stable")
    denied = set_belief(svc.engine, SCOPE, "the staging API is stable", polarity=-1)
    assert denied["action"] == "created" and denied["id"] != held["id"]
    assert _memory(svc, denied["id"])["content"] == "the staging API is not stable"
    assert _belief_row(svc, denied["id"])[1:] == ("staging api is stable", "staging api", -1)
    assert _memory(svc, held["id"])["access_count"] == 0 and denied["belief"]["contested_by"] == [held["id"]]
    assert _ids(get_belief(svc.engine, SCOPE, state="contested")) == [denied["id"], held["id"]]
    again = set_belief(svc.engine, SCOPE, "The staging API isn't stable")  # reinforced by proposition, not text
    assert (again["action"], again["id"]) == ("reinforced", denied["id"])


def test_learning_a_denial_contests_the_learned_belief(keyword_service):
    svc = keyword_service
    first = svc.learn(SCOPE, "I think the staging API is stable")
    second = svc.learn(SCOPE, "I do not think the staging API is stable")
    [held] = [i for i in first["learned"] if i["kind"] == "belief"]
    [denied] = [i for i in second["learned"] if i["kind"] == "belief"]
    assert denied["id"] != held["id"] and not denied["reinforced"]
    assert read_proposition(_memory(svc, denied["id"])["content"]) == ("staging api is stable", "staging api", -1)
    assert read_proposition(_memory(svc, held["id"])["content"])[2] == 1
    assert _memory(svc, held["id"])["access_count"] == 0
    assert set(_ids(get_belief(svc.engine, SCOPE, state="contested"))) == {held["id"], denied["id"]}


def test_secrets_never_reach_belief_rows_evidence_the_audit_log_or_errors(keyword_service):
    svc = keyword_service
    answer = set_belief(svc.engine, SCOPE, SECRET_TEXT, evidence=f"seen with {SECRETS[1]}",
                        source=f"cli {SECRETS[1]}")
    assert "redacted" in _belief_row(svc, answer["id"])[1] and _evidence(svc, answer["id"])
    other = _set(svc, "the deploy password is not set")
    resolve_conflict(svc.engine, SCOPE, answer["id"], other, "merge", merged_text=f"the password is {SECRETS[0]}")
    bad_calls = [((SECRET_TEXT,), {"supersedes": answer["id"]}), (({"password": SECRETS[0]},), {}),
                 ((SECRET_TEXT * 30,), {}), ((SECRET_TEXT,), {"polarity": 0})]
    for args, kwargs in bad_calls:
        with pytest.raises(InvalidInput) as error:
            set_belief(svc.engine, SCOPE, *args, **kwargs)
        assert not any(secret in str(error.value) for secret in SECRETS), error.value
        svc.upkeep.record_call("test", "set_belief", SCOPE, False, str(error.value))  # what a door writes
    dump = _dump(svc)
    assert "[REDACTED:password]" in dump and not any(secret in dump for secret in SECRETS)


def test_a_stale_belief_restated_is_renewed_with_its_evidence(keyword_service):
    svc = keyword_service
    old = _set(svc, "Postgres is old", confidence=0.8, evidence="Released 1996")
    svc.upkeep.decay(now=time.time() + 400 * DAY)
    assert _memory(svc, old)["state"] == "stale"
    answer = set_belief(svc.engine, SCOPE, "Postgres is old", evidence="Still true")
    assert answer["action"] == "reinforced" and answer["superseded_ids"] == [old] and answer["id"] != old
    assert _memory(svc, old)["superseded_by"] == answer["id"] and _memory(svc, answer["id"])["state"] == "active"
    assert [e[3] for e in _evidence(svc, answer["id"])] == ["Released 1996", "Still true"]


def test_evidence_against_an_existing_belief_challenges_it_without_reinforcing(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "Alice ordered coffee twice")
    held = _set(svc, "Alice likes tea", confidence=0.9)
    answer = set_belief(svc.engine, SCOPE, "Alice likes tea", stance=-1, evidence_ids=[note], source="cli")
    assert (answer["id"], answer["action"]) == (held, "challenged")
    assert _memory(svc, held)["access_count"] == 0 and _memory(svc, held)["confidence"] == 0.9
    assert _evidence(svc, held) == [(note, "cli", -1, "challenged", SCOPE)]
    assert answer["belief"]["evidence_against"] == 1
    [event] = _events(svc, "evidence")
    assert (event["memory_id"], event["detail"]) == (held, {"stance": -1, "rows": 1})


def test_secrets_in_evidence_notes_are_redacted(keyword_service):
    svc = keyword_service
    held = _set(svc, "The deploy key works", evidence="key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t tested")
    [(_, _, _, note, _)] = _evidence(svc, held)
    assert "sk-proj" not in note and "REDACTED" in note


# -- get_belief ------------------------------------------------------------------------------------


def test_get_belief_filters_by_text_state_confidence_tags_source_and_id(keyword_service):
    svc = keyword_service
    svc.remember(SCOPE, "Green tea is on the shopping list")  # a note, never a belief
    tea = _set(svc, "Alice likes green tea", confidence=0.9, tags=["people", "drinks"], source="mcp:x")
    no_tea = _set(svc, "Alice doesn't like green tea", confidence=0.65, tags=["people"], source="cli")
    unsure = _set(svc, "Bob might be on call", confidence=0.3, source="mcp:y")
    weekly = _set(svc, "Deploys are weekly", confidence=0.7)
    daily = _set(svc, "Deploys are daily", confidence=0.7, supersedes=weekly)
    assert _ids(get_belief(svc.engine, SCOPE)) == [daily, weekly, unsure, no_tea, tea]  # newest first
    found = get_belief(svc.engine, SCOPE, text="green tea")
    assert set(_ids(found)) == {tea, no_tea} and found["total"] == 2
    assert _ids(get_belief(svc.engine, SCOPE, state="candidate")) == [unsure]
    assert _ids(get_belief(svc.engine, SCOPE, state="active")) == [daily, no_tea, tea]
    assert _ids(get_belief(svc.engine, SCOPE, state="superseded")) == [weekly]
    assert _ids(get_belief(svc.engine, SCOPE, state="contested")) == [no_tea, tea]
    assert _ids(get_belief(svc.engine, SCOPE, min_confidence=0.7)) == [daily, tea]  # weekly was halved to 0.35
    assert _ids(get_belief(svc.engine, SCOPE, tags=["people", "drinks"])) == [tea]
    assert _ids(get_belief(svc.engine, SCOPE, source="mcp:")) == [unsure, tea]
    assert _ids(get_belief(svc.engine, SCOPE, belief_id=tea)) == [tea]
    assert _ids(get_belief(svc.engine, SCOPE, belief_id=tea, state="candidate")) == []
    assert _ids(get_belief(svc.engine, SCOPE, text="green tea", state="contested", tags=["drinks"])) == [tea]
    page = get_belief(svc.engine, SCOPE, limit=2, offset=1)  # total: the beliefs returned; matched: all
    assert (_ids(page), page["total"], page["matched"]) == ([weekly, unsure], 2, 5)
    assert (get_belief(svc.engine, SCOPE, text="green tea", limit=1)["total"],
            get_belief(svc.engine, SCOPE, text="green tea", limit=1)["matched"]) == (1, 2)
    with pytest.raises(UnknownMemory, match="Unknown belief id 'nope'"):
        get_belief(svc.engine, SCOPE, belief_id="nope")


def test_get_belief_state_filters_stale_and_archived(keyword_service):
    svc = keyword_service
    old = _set(svc, "Postgres is old")
    svc.upkeep.decay(now=time.time() + 400 * DAY)
    a, b = _set(svc, "Carol works at Acme"), _set(svc, "Carol no longer works at Acme")
    resolve_conflict(svc.engine, SCOPE, a, b, "discard_both")
    assert _ids(get_belief(svc.engine, SCOPE, state="stale")) == [old]
    assert _ids(get_belief(svc.engine, SCOPE, state="archived")) == [b, a]
    assert _ids(get_belief(svc.engine, SCOPE, state="contested")) == []  # discarded: no longer contested


# -- resolve_conflict ------------------------------------------------------------------------------


def _pair(svc, conf_a=0.9, conf_b=0.6, **kwargs):
    return (_set(svc, "Alice likes tea", confidence=conf_a, **kwargs.get("a", {})),
            _set(svc, "Alice doesn't like tea", confidence=conf_b, **kwargs.get("b", {})))


@pytest.mark.parametrize("strategy", ["keep_a", "keep_b"])
def test_keep_discards_the_other_belief_and_is_audited(keyword_service, strategy):
    svc = keyword_service
    a, b = _pair(svc)
    kept, lost = (a, b) if strategy == "keep_a" else (b, a)
    answer = resolve_conflict(svc.engine, SCOPE, a, b, strategy, actor="mcp:resolve")
    assert (answer["winner"], answer["kept"], answer["archived"], answer["superseded"], answer["rule"]) == \
        (kept, [kept], [lost], [], None)
    assert (answer["resolution"], answer["receipt"]["memory_id"], answer["receipt"]["created_by"]) == \
        (strategy, kept, "mcp:resolve")
    assert sorted((e["belief_id"], e["from_state"], e["to_state"]) for e in answer["events"]) == \
        sorted([(kept, "contradicted", "active"), (lost, "contradicted", "discarded")])  # the contract's words
    assert _memory(svc, lost)["state"] == "archived" and _memory(svc, lost)["superseded_by"] is None
    [event] = _events(svc, "resolve_conflict")
    assert (event["actor"], event["scope"], event["memory_id"]) == ("mcp:resolve", SCOPE, kept)
    assert (event["detail"]["strategy"], event["detail"]["archived"]) == (strategy, [lost])
    assert get_belief(svc.engine, SCOPE, state="contested")["total"] == 0
    svc.forget(SCOPE, kept)  # the discarded one stays discarded: nothing comes back
    assert get_belief(svc.engine, SCOPE, lifecycle_state="active")["beliefs"] == []
    assert [r["lifecycle_state"] for r in get_belief(svc.engine, SCOPE)["beliefs"]] == ["discarded"]


def test_merge_carries_both_evidence_into_a_new_belief_and_keeps_both(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "Alice ordered green tea")
    a, b = _pair(svc, a={"evidence_ids": [note], "source": "mcp:a", "tags": ["x"]},
                 b={"evidence": "Refused tea once", "source": "cli", "tags": ["y"]})
    answer = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes tea, but only sometimes",
                              actor="cli:resolve")
    merged = answer["merged"]
    assert answer["superseded"] == [] and answer["kept"] == [a, b, merged]  # the contract's merge: both remain
    assert _memory(svc, a)["superseded_by"] is None and _memory(svc, b)["superseded_by"] is None
    assert (answer["resolution"], answer["created"]["id"], answer["receipt"]["memory_id"]) == ("merge", merged, merged)
    settled = f"its conflict was settled by the merge into {shown_id(merged)}"
    assert answer["events"] == [
        {"belief_id": a, "from_state": "contradicted", "to_state": "active", "reason": settled},
        {"belief_id": b, "from_state": "contradicted", "to_state": "active", "reason": settled},
        {"belief_id": merged, "from_state": "none", "to_state": "active",
         "reason": f"merged from {shown_id(a)} and {shown_id(b)}"}]
    assert [answer[k]["lifecycle_state"] for k in ("belief_a", "belief_b", "created")] == ["active"] * 3
    assert (answer["belief_a"]["contested_by"], answer["belief_a"]["settled_with_ids"],
            answer["created"]["merged_from_ids"]) == ([], [b], [a, b])
    row = _memory(svc, merged)
    assert (row["kind"], row["content"], row["confidence"], row["source"]) == \
        ("belief", "Alice likes tea, but only sometimes", 0.9, "cli:resolve")
    assert json.loads(row["tags"]) == ["x", "y"]
    # b denied the proposition, so evidence for b is evidence against the merged belief
    assert _evidence(svc, merged) == [(note, "mcp:a", 1, "", SCOPE), (None, "cli", -1, "Refused tea once", SCOPE),
                                      (a, "cli:resolve", 0, "merged from it", SCOPE),  # marker rows, not evidence
                                      (b, "cli:resolve", 0, "merged from it", SCOPE)]
    assert answer["created"]["evidence_for"] + answer["created"]["evidence_against"] == 2
    [event] = _events(svc, "resolve_conflict")
    assert (event["memory_id"], event["detail"]["merged"]) == (merged, merged)
    assert event["detail"]["strategy"] == "merge"


def test_merge_is_learned_from_what_both_were_learned_from(keyword_service):
    svc = keyword_service
    n1, n2 = svc.remember(SCOPE, "Alice ordered green tea"), svc.remember(SCOPE, "Alice refused the tea")
    a, b = _pair(svc, a={"learned_from": [n1]}, b={"learned_from": [n2]})
    merged = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes tea sometimes")["merged"]
    assert sorted(_sql(svc, "SELECT source_id FROM links WHERE memory_id = ?", merged)) == sorted([(n1,), (n2,)])
    svc.forget(SCOPE, n1)
    assert _sql(svc, "SELECT source_id FROM links WHERE memory_id = ?", merged) == [(n2,)]


def test_merge_keeps_the_first_32_tags(keyword_service):
    svc = keyword_service
    a, b = _pair(svc, a={"tags": [f"a{i}" for i in range(20)]}, b={"tags": [f"b{i}" for i in range(20)]})
    merged = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes some tea")["merged"]
    assert json.loads(_memory(svc, merged)["tags"]) == [f"a{i}" for i in range(20)] + [f"b{i}" for i in range(12)]


def test_a_belief_its_row_and_its_evidence_are_written_in_one_transaction(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "Alice ordered green tea")
    held = _set(svc, "Alice likes tea", evidence_ids=[note])
    assert _memory(svc, held)["kind"] == "belief" and _belief_row(svc, held)[1] == "alice likes tea"
    assert _evidence(svc, held) == [(note, "", 1, "", SCOPE)]
    broken = NewMemory(scope=SCOPE, content="Bob likes coffee", kind="belief", tier="semantic",
                       belief={"proposition_key": "bob likes coffee", "topic": "bob", "polarity": 1},
                       evidence=[{"memory_id": note, "source": "", "stance": None, "note": ""}])
    with pytest.raises(IntegrityError):  # the evidence row fails: nothing of the belief is kept
        svc.store.add([broken])
    assert _sql(svc, "SELECT count(*) FROM memories WHERE content = 'Bob likes coffee'") == [(0,)]
    assert _sql(svc, "SELECT count(*) FROM beliefs WHERE proposition_key = 'bob likes coffee'") == [(0,)]
    writers = sorted(path.name for path in (REPO / "hermes_cmms").rglob("*.py") if "insert(Belief)" in path.read_text())
    assert writers == ["store.py"]  # no belief row is written anywhere else


def test_merge_needs_a_text_that_restates_neither_belief(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    with pytest.raises(InvalidInput, match=r"^A merge needs the text of the merged belief \(new_proposition\)\.$"):
        resolve_conflict(svc.engine, SCOPE, a, b, "merge")
    with pytest.raises(InvalidInput, match="restates belief"):
        resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="I think Alice likes the tea")
    with pytest.raises(InvalidInput, match="only used by the merge strategy"):
        resolve_conflict(svc.engine, SCOPE, a, b, "keep_a", merged_text="Alice likes some tea")
    assert _sql(svc, "SELECT count(*) FROM beliefs") == [(2,)] and not _events(svc, "resolve_conflict")


def test_discard_both_archives_them_and_keeps_the_rows(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    answer = resolve_conflict(svc.engine, SCOPE, a, b, "discard_both")
    assert answer["archived"] == [a, b] and answer["winner"] is None and "created" not in answer
    assert [(e["belief_id"], e["from_state"], e["to_state"]) for e in answer["events"]] == \
        [(a, "contradicted", "discarded"), (b, "contradicted", "discarded")]
    assert (answer["belief_a"]["lifecycle_state"], answer["belief_b"]["lifecycle_state"]) == ("discarded",) * 2
    assert [_memory(svc, i)["state"] for i in (a, b)] == ["archived", "archived"]
    assert _sql(svc, "SELECT count(*) FROM beliefs") == [(2,)]
    moves = [(e["memory_id"], e["detail"]["state_to"]) for e in _events(svc, "lifecycle")]
    assert moves == [(a, "archived"), (b, "archived")]
    assert _events(svc, "resolve_conflict")[0]["detail"]["archived"] == [a, b]
    with pytest.raises(InvalidInput, match="is archived"):
        resolve_conflict(svc.engine, SCOPE, a, b, "keep_a")


@pytest.mark.parametrize("conf_a,conf_b,evidence_b,rule,winner", [
    (0.9, 0.6, 0, "confidence", "a"),  # more than 0.05 apart: the higher confidence
    (0.8, 0.78, 1, "evidence", "b"),  # within 0.05: more supporting evidence
    (0.7, 0.7, 0, "newer", "b"),  # still tied: the newer
])
def test_auto_applies_confidence_then_evidence_then_recency(keyword_service, conf_a, conf_b, evidence_b,
                                                             rule, winner):
    svc = keyword_service
    a, b = _pair(svc, conf_a, conf_b, b={"evidence": "Seen"} if evidence_b else {})
    expected = {"a": a, "b": b}[winner]
    answer = resolve_conflict(svc.engine, SCOPE, a, b, "auto")
    assert (answer["rule"], answer["winner"]) == (rule, expected)
    loser = b if expected == a else a
    assert _memory(svc, loser)["superseded_by"] == expected
    [event] = _events(svc, "resolve_conflict")
    assert (event["detail"]["rule"], event["detail"]["winner"]) == (rule, expected)


# -- reflect -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(shared_keyword_service):
    """12 beliefs of SCOPE on 5 topics: 3 contradictory pairs (alice, postgres, build server),
    one decayed (stale), one superseded, one discarded pair (archived, carol), one belief citing a
    forgotten memory; and a contradiction in OTHER that must never show. Made once for the module:
    the tests that take it read SCOPE only (a reflection writes nothing), but for the one that
    restates OTHER's belief, which no other test reads."""
    svc, ids = shared_keyword_service, {}
    ids["old"] = _set(svc, "Postgres is old", confidence=0.8, source="mcp:test")
    svc.upkeep.decay(now=time.time() + 400 * DAY)  # only "old" exists yet: stale, 0.8 -> 0.4
    n1, n2, n3, n4 = (svc.remember(SCOPE, t) for t in (
        "Alice ordered green tea at lunch", "The load test ran 40% faster on Postgres",
        "A blog post says Postgres is fast", "Deploy logs show a deploy every day"))
    ids["tea"] = _set(svc, "Alice likes tea", confidence=0.9, evidence_ids=[n1], source="mcp:test")
    ids["no_tea"] = _set(svc, "Alice doesn't like tea", confidence=0.6, evidence="Refused tea", source="cli")
    _set(svc, "Alice likes the tea", source="hermes:chat")  # reinforces: 0.93, evidence from 2 sources
    set_belief(svc.engine, SCOPE, "Alice doesn't like tea", stance=-1, evidence_ids=[n1], source="mcp:test")
    set_belief(svc.engine, SCOPE, "Alice doesn't like tea", stance=-1, evidence="Ordered tea twice", source="cli")
    ids["fast"] = _set(svc, "Postgres is fast", confidence=0.8, evidence_ids=[n2, n3], source="mcp:test")
    ids["slow"] = _set(svc, "Postgres is not fast", confidence=0.78)
    ids["ubuntu"] = _set(svc, "The build server runs Ubuntu", confidence=0.7)
    ids["no_ubuntu"] = _set(svc, "The build server never runs Ubuntu", confidence=0.7)
    ids["weekly"] = _set(svc, "Deploys are weekly", confidence=0.6, evidence="Release calendar", source="cli")
    ids["daily"] = _set(svc, "Deploys are daily", confidence=0.9, supersedes=ids["weekly"], evidence_ids=[n4],
                        source="mcp:test")
    ids["designer"] = _set(svc, "Alice is a designer", confidence=0.85, evidence="Wiki title", source="mcp:test")
    ids["carol"] = _set(svc, "Carol works at Acme", confidence=0.7)
    ids["no_carol"] = _set(svc, "Carol no longer works at Acme", confidence=0.7)
    resolve_conflict(svc.engine, SCOPE, ids["carol"], ids["no_carol"], "discard_both")
    svc.forget(SCOPE, n3)  # forget cascades: "fast" keeps only n2's evidence
    with svc.store._write_lock, svc.store.write() as conn:  # a row that raced the forget of n3
        conn.execute(insert(Evidence).values(belief_id=ids["designer"], scope=SCOPE, memory_id=n3,
                                             source="mcp:test", stance=1, note="", at=time.time()))
    ids["n3"] = n3
    _set(svc, "Alice likes tea", scope=OTHER, confidence=0.9)
    _set(svc, "Alice doesn't like tea", scope=OTHER, confidence=0.2)
    return svc, ids


def test_reflect_overview(world):
    svc, ids = world
    view = reflect(svc.engine, SCOPE, "overview")
    assert view["by_state"] == {"candidate": 0, "validated": 0, "active": 8, "stale": 1, "archived": 2,
                                "superseded": 1}
    assert (view["mode"], view["beliefs"], view["current"], view["superseded"], view["contested"]) == \
        ("overview", 12, 9, 1, 6)
    assert view["mean_confidence"] == 0.74  # (0.4 + .93 + .6 + .8 + .78 + .7 + .7 + .9 + .85) / 9
    assert view["evidence"] == {"for": 8, "against": 2, "total": 10}
    assert view["topics"] == 4 and view["newest"]["id"] == ids["no_carol"]


@pytest.mark.quick
def test_reflect_contradictions_with_the_rule_auto_would_apply(world):
    svc, ids = world
    view = reflect(svc.engine, SCOPE, "contradictions")
    got = [(p["proposition_key"], p["holds"]["id"], p["denied"]["id"], p["auto"]["winner"], p["auto"]["rule"])
           for p in view["pairs"]]
    assert view["count"] == 3 and got == [
        ("alice likes tea", ids["tea"], ids["no_tea"], ids["tea"], "confidence"),
        ("postgres is fast", ids["fast"], ids["slow"], ids["fast"], "evidence"),
        ("build server runs ubuntu", ids["ubuntu"], ids["no_ubuntu"], ids["no_ubuntu"], "newer")]
    first = view["pairs"][0]
    assert (first["holds"]["confidence"], first["denied"]["confidence"]) == (0.93, 0.6)
    assert (first["denied"]["evidence_for"], first["denied"]["evidence_against"]) == (1, 2)


def test_reflect_decay(world):
    svc, ids = world
    view = reflect(svc.engine, SCOPE, "decay", now=time.time() + 10 * DAY)
    [fallen] = view["fallen"]
    assert (fallen["id"], fallen["reliability"], fallen["confidence"], fallen["drop"], fallen["state"]) == \
        (ids["old"], 0.8, 0.4, 0.4, "stale")
    assert fallen["days_since_evidence"] == 10.0
    assert [r["id"] for r in view["stale"]] == [ids["old"]]
    assert [r["id"] for r in view["archived"]] == [ids["carol"], ids["no_carol"]]


def test_reflect_topics(world):
    svc, ids = world
    got = [(t["topic"], t["beliefs"], t["mean_confidence"], t["contested"])
           for t in reflect(svc.engine, SCOPE, "topics")["subjects"]]
    assert got == [("alice", 3, 0.7933, 2), ("postgres", 3, 0.66, 2), ("build server", 2, 0.7, 2),
                   ("deploys", 1, 0.9, 0)]


def test_reflect_evidence_audit(world):
    svc, ids = world
    view = reflect(svc.engine, SCOPE, "evidence_audit")
    names = {v: k for k, v in ids.items()}
    assert [names[r["id"]] for r in view["no_evidence"]] == ["old", "slow", "ubuntu", "no_ubuntu"]
    assert [names[r["id"]] for r in view["single_source"]] == ["fast", "daily", "designer"]
    assert [names[r["id"]] for r in view["outweighed"]] == ["no_tea"]
    assert view["missing_memory"] == [{"belief_id": ids["designer"], "memory_id": ids["n3"]}]
    assert _evidence(svc, ids["fast"])[0][0] != ids["n3"] and len(_evidence(svc, ids["fast"])) == 1


def test_reflect_confidence(world):
    svc, ids = world
    view = reflect(svc.engine, SCOPE, "confidence")
    assert view["by_fifth"] == {"0.0-0.2": 0, "0.2-0.4": 0, "0.4-0.6": 1, "0.6-0.8": 4, "0.8-1.0": 4}
    assert view["histogram"] == {"0.9_1.0": 2, "0.7_0.9": 5, "0.5_0.7": 1, "0.3_0.5": 1, "0.0_0.3": 0}
    assert (view["count"], view["mean"]) == (9, 0.74)
    assert [r["id"] for r in view["lowest"]] == [ids["old"], ids["no_tea"], ids["ubuntu"]]
    assert [r["id"] for r in view["highest"]] == [ids["tea"], ids["daily"], ids["designer"]]
    # old, tea, no_tea, fast, slow, ubuntu, no_ubuntu, daily, designer
    confidence = [0.4, 0.93, 0.6, 0.8, 0.78, 0.7, 0.7, 0.9, 0.85]
    support = [0, 2, 1, 1, 0, 0, 0, 1, 2]
    assert view["correlation_with_evidence"] == round(statistics.correlation(confidence, support), 4)


def test_another_scopes_beliefs_never_show(world):
    svc, ids = world
    assert reflect(svc.engine, OTHER, "contradictions")["count"] == 1
    assert reflect(svc.engine, OTHER, "overview")["beliefs"] == 2
    theirs = set(_ids(get_belief(svc.engine, OTHER, limit=200)))
    assert len(theirs) == 2 and not theirs & set(_ids(get_belief(svc.engine, SCOPE, limit=200)))
    assert not theirs & set(_ids(get_belief(svc.engine, SCOPE, text="alice tea", state="contested")))
    assert _belief_row(svc, _set(svc, "Alice likes tea", scope=OTHER))[0] == OTHER
    assert _memory(svc, ids["tea"])["access_count"] == 1  # OTHER's restatement did not reinforce ours
    mine, other = ids["tea"], next(iter(theirs))
    with pytest.raises(UnknownMemory):
        resolve_conflict(svc.engine, SCOPE, mine, other, "keep_a")
    with pytest.raises(UnknownMemory):
        set_belief(svc.engine, SCOPE, "Alice likes coffee", supersedes=other)
    with pytest.raises(UnknownMemory):
        set_belief(svc.engine, SCOPE, "Alice likes coffee", evidence_ids=[other])
    with pytest.raises(UnknownMemory):
        get_belief(svc.engine, SCOPE, belief_id=other)


# -- forget ----------------------------------------------------------------------------------------


def test_forgetting_a_belief_removes_its_rows_and_a_cited_memory_its_evidence(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "Alice ordered green tea")
    tea = _set(svc, "Alice likes tea", evidence_ids=[note], evidence="Asked her")
    other = _set(svc, "Alice is a designer", evidence_ids=[note])
    svc.forget(SCOPE, tea)
    assert _sql(svc, "SELECT count(*) FROM beliefs WHERE memory_id = ?", tea) == [(0,)]
    assert _evidence(svc, tea) == []
    svc.forget(SCOPE, note)
    assert _evidence(svc, other) == [] and _belief_row(svc, other)[1] == "alice is designer"
    assert _ids(get_belief(svc.engine, SCOPE)) == [other]


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,message", [
    ({"text": ""}, "non-empty string"),
    ({"text": None}, "non-empty string"),
    ({"text": "x" * 2049}, "^A belief is 2,049 characters; the limit is 2,048.$"),
    ({"text": "not"}, "states nothing"),
    ({"confidence": 1.5}, "from 0 to 1, not 1.5"),
    ({"confidence": True}, "from 0 to 1"),
    ({"polarity": 0}, "polarity must be 1 or -1, not 0"),
    ({"stance": 2}, "stance must be 1 or -1, not 2"),
    ({"evidence": ""}, "evidence note must be a non-empty"),
    ({"evidence_ids": "abc"}, "list of memory ids"),
    ({"learned_from": "abc"}, "learned_from must be a list of memory ids"),
    ({"learned_from": ["ghost"]}, None),
    ({"tags": "x"}, "Tags must be a list"),
    ({"source": 3}, "source must be a string"),
])
def test_set_belief_refuses_bad_input_and_stores_nothing(shared_keyword_service, kwargs, message):
    svc, args = shared_keyword_service, {"text": "Alice likes tea", **kwargs}
    before = _dump(svc)
    with pytest.raises(InvalidInput if message else UnknownMemory, match=message or "Unknown memory id 'ghost'"):
        set_belief(svc.engine, SCOPE, args.pop("text"), **args)
    assert _dump(svc) == before


def test_set_belief_refuses_unknown_ids_and_bad_scopes(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "A plain note")
    with pytest.raises(UnknownMemory, match="Unknown memory id 'missing'"):
        set_belief(svc.engine, SCOPE, "Alice likes tea", evidence_ids=[note, "missing"])
    with pytest.raises(UnknownMemory, match=f"Unknown belief id '{note}'"):  # a memory, not a belief
        set_belief(svc.engine, SCOPE, "Alice likes tea", supersedes=note)
    with pytest.raises(InvalidInput, match="scope"):
        set_belief(svc.engine, "  ", "Alice likes tea")
    assert _sql(svc, "SELECT count(*) FROM beliefs") == [(0,)]


@pytest.mark.parametrize("kwargs,message", [
    ({"state": "happy"}, "Unknown belief state 'happy'; choose one of candidate, "),
    ({"min_confidence": -0.1}, "min_confidence must be a number from 0 to 1"),
    ({"tags": [""]}, "Tags must be a list"),
    ({"source": ""}, "source filter must be a non-empty string"),
    ({"text": "  "}, "text filter must be a non-empty string"),
    ({"limit": 0}, "limit must be a whole number from 1 to 200, not 0"),
    ({"limit": "5"}, "limit must be a whole number"),
    ({"offset": -1}, "offset must be a whole number from 0"),
])
def test_get_belief_refuses_bad_filters(shared_keyword_service, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        get_belief(shared_keyword_service.engine, SCOPE, **kwargs)


def test_resolve_conflict_refuses_bad_input(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    cases = [((a, b, "coin_flip"), {}, InvalidInput, "Unknown strategy 'coin_flip'; choose one of keep_a"),
             ((a, a, "keep_a"), {}, InvalidInput, "not .* against itself"),
             (("", "", "keep_a"), {}, InvalidInput, "^Missing required argument 'belief_a_id'.$"),
             ((a, " ", "keep_a"), {}, InvalidInput, "^Missing required argument 'belief_b_id'.$"),
             ((a, "ghost", "keep_a"), {}, UnknownMemory, "Unknown belief id 'ghost'"),
             ((a, b, "keep_a"), {"merged_text": "x"}, InvalidInput, "only used by the merge strategy"),
             ((a, b, "merge"), {"merged_text": ""}, InvalidInput, "merged text must be a non-empty"),
             ((a, b, "auto"), {"actor": 5}, InvalidInput, "actor must be a string")]
    for args, kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            resolve_conflict(svc.engine, SCOPE, *args, **kwargs)
    assert _events(svc, "resolve_conflict") == []
    assert _sql(svc, "SELECT count(*) FROM memories WHERE superseded_by IS NOT NULL") == [(0,)]


def test_reflect_refuses_an_unknown_mode_naming_the_seven(shared_keyword_service):
    keyword_service = shared_keyword_service  # (refusals only: nothing read or written)
    with pytest.raises(InvalidInput) as error:
        reflect(keyword_service.engine, SCOPE, "dream")
    assert str(error.value) == ("Unknown reflect mode 'dream'; choose one of overview, contradictions, relations, "
                                "decay, topics, evidence_audit, confidence.")
    with pytest.raises(InvalidInput, match="Unix time"):
        reflect(keyword_service.engine, SCOPE, "decay", now="tomorrow")
    for bad, match in [({"min_confidence": 2}, "min_confidence must be a number from 0 to 1"),
                       ({"limit": -1}, "limit must be a whole number from 0"), ({"topic": ""}, "topic filter"),
                       ({"strict_same_context": "yes"}, "strict_same_context must be true or false")]:
        with pytest.raises(InvalidInput, match=match):
            reflect(keyword_service.engine, SCOPE, "relations", **bad)
    assert beliefs.REFLECT_MODES == ("overview", "contradictions", "relations", "decay", "topics",
                                     "evidence_audit", "confidence")
    assert beliefs.STRATEGIES == ("keep_a", "keep_b", "merge", "discard_both", "auto")


def test_the_reflection_examples_in_the_docs_are_the_fixtures_output(world):
    svc, ids = world
    names = {v: k for k, v in ids.items()}
    blocks = re.findall(r"```json\n(.*?)```", (REPO / "docs" / "beliefs.md").read_text(), re.S)
    shown = dict(zip(beliefs.REFLECT_MODES, (json.loads(block) for block in blocks)))
    overview = reflect(svc.engine, SCOPE, "overview")
    overview["newest"] = {**overview["newest"], "id": names[overview["newest"]["id"]], "created_at": "…"}
    # the conflicts' age moves with the clock (0.01 h is 36 s: a loaded machine's fixture reaches it)
    assert 0 <= overview["conflicts"]["age_hours_max"] < 1
    overview["conflicts"] = {**overview["conflicts"], "age_hours_max": shown["overview"]["conflicts"]["age_hours_max"]}
    assert shown["overview"] == {k: v for k, v in overview.items() if k != "mode"}
    confidence = reflect(svc.engine, SCOPE, "confidence")
    keys = ("count", "mean", "by_fifth", "histogram", "lowest_count", "correlation_with_evidence")
    assert [shown["confidence"][k] for k in keys] == [confidence[k] for k in keys]
    relations = reflect(svc.engine, SCOPE, "relations")
    keys = ("total", "contradictions", "entailments", "neutral_pairs")
    assert [shown["relations"][k] for k in keys] == [relations[k] for k in keys]
    assert shown["evidence_audit"]["missing_memory"] == [{"belief_id": "designer", "memory_id": "n3"}]


# -- the CMMS 0.11 contract's fields and filters ------------------------------------------------------


def test_sources_are_stored_as_cited_memories_or_outside_references_with_type_and_weight(keyword_service):
    svc = keyword_service
    fact = svc.remember_fact(SCOPE, "Server Alpha", "runs", "Postgres")
    answer = set_belief(svc.engine, SCOPE, "Postgres suits Server Alpha", source="system", creator="mcp:set_belief",
                        sources=[{"source_type": "fact", "source_id": fact, "weight": 0.9},
                                 {"source_type": "observation", "source_id": "ticket-12"}])
    rows = _sql(svc, "SELECT memory_id, source_ref, source_type, weight FROM evidence WHERE belief_id = ? "
                     "ORDER BY id", answer["id"])
    assert rows == [(fact, "", "fact", 0.9), (None, "ticket-12", "observation", 0.5)]
    shown = answer["belief"]
    assert (shown["source_ids"], shown["source"], shown["creator"]) == \
        ([shown_id(fact), "ticket-12"], "system", "mcp:set_belief")
    assert _sql(svc, "SELECT creator FROM beliefs WHERE memory_id = ?", answer["id"]) == [("mcp:set_belief",)]
    for bad, match in [([{"source_type": "rumour", "source_id": "x"}], "source_type must be one of fact"),
                       ([{"source_type": "fact"}], "source_id must be a non-empty string"),
                       ([{"source_type": "fact", "source_id": "x", "weight": 2}], "source weight"),
                       ([{"source_type": "fact", "source_id": "x", "why": 1}], "'why' is not one of them"),
                       ("x", "must be a list of objects")]:
        with pytest.raises(InvalidInput, match=match):
            set_belief(svc.engine, SCOPE, "Redis suits Server Alpha", sources=bad)


def test_get_belief_filters_by_coarse_lifecycle_state_creator_and_source_id(keyword_service):
    svc = keyword_service
    note = svc.remember(SCOPE, "The staging API answered all night")
    stable = _set(svc, "The staging API is stable", creator="mcp:set_belief", evidence_ids=[note])
    unstable = _set(svc, "The staging API is not stable", source="hermes:cmms_belief")
    old = _set(svc, "Deploys are weekly", source="cli:beliefs")
    daily = _set(svc, "Deploys are daily", supersedes=old, sources=[{"source_type": "decision", "source_id": "ADR-7"}])
    gone, gone_too = _set(svc, "Carol works at Acme"), _set(svc, "Carol no longer works at Acme")
    resolve_conflict(svc.engine, SCOPE, gone, gone_too, "discard_both")

    def found(**filters):
        answer = get_belief(svc.engine, SCOPE, **filters)
        return sorted(_ids(answer)), answer["query"]
    assert found(lifecycle_state="active")[0] == [daily]
    assert found(lifecycle_state="contradicted")[0] == sorted([stable, unstable])
    assert found(lifecycle_state="superseded")[0] == [old]
    assert found(lifecycle_state="discarded")[0] == sorted([gone, gone_too])
    assert found(creator="mcp")[0] == [stable] and found(creator="hermes:cmms_belief")[0] == [unstable]
    assert found(creator="mc")[0] == []  # a creator or its door, never any prefix
    assert found(source_id=note)[0] == [stable] and found(source_id="ADR-7")[0] == [daily]
    assert found(lifecycle_state="active", source_id="ADR-7", limit=5)[1] == {
        "proposition": "", "lifecycle_state": "active", "source_id": "ADR-7", "limit": 5, "offset": 0}
    shown = get_belief(svc.engine, SCOPE, belief_id=stable)["beliefs"][0]
    assert (shown["lifecycle_state"], shown["contested_by"], shown["verification_status"]) == \
        ("contradicted", [unstable], "trusted")
    with pytest.raises(InvalidInput, match="Unknown lifecycle state 'asleep'; choose one of active, superseded, "
                                           "discarded, contradicted."):
        get_belief(svc.engine, SCOPE, lifecycle_state="asleep")


def test_auto_resolve_supersedes_the_lower_belief_only_past_a_confidence_gap_of_half(keyword_service):
    svc = keyword_service
    a, b = _pair(svc, 0.9, 0.3)
    answer = resolve_conflict(svc.engine, SCOPE, a, b, "merge", auto_resolve=True, actor="mcp:resolve_conflict")
    assert (answer["resolution"], answer["winner"], answer["auto_resolve"]) == ("keep_a", a, True)
    assert _memory(svc, b)["superseded_by"] == a and "created" not in answer
    assert [(e["belief_id"], e["to_state"]) for e in answer["events"]] == [(a, "active"), (b, "superseded")]


def test_auto_resolve_within_the_gap_declares_both_contradicted_and_discards_nothing(keyword_service):
    svc = keyword_service
    fast, slow = _set(svc, "Redis is fast", confidence=0.6), _set(svc, "Redis is slow", confidence=0.5)
    assert get_belief(svc.engine, SCOPE, lifecycle_state="contradicted")["total"] == 0  # no negation: no conflict yet
    answer = resolve_conflict(svc.engine, SCOPE, fast, slow, "keep_a", auto_resolve=True)
    assert answer["resolution"] == "contradicted" and answer["superseded"] == answer["archived"] == []
    assert [(e["belief_id"], e["from_state"], e["to_state"]) for e in answer["events"]] == \
        [(fast, "active", "contradicted"), (slow, "active", "contradicted")]
    assert [_memory(svc, i)["superseded_by"] for i in (fast, slow)] == [None, None]
    assert sorted(_ids(get_belief(svc.engine, SCOPE, lifecycle_state="contradicted"))) == sorted([fast, slow])
    assert answer["belief_a"]["contested_by"] == [slow] and answer["belief_a"]["source_ids"] == []
    view = reflect(svc.engine, SCOPE, "contradictions")
    assert [(c["belief_a_id"], c["detection_method"]) for c in view["contradictions"]] == \
        [(fast, "confidence_weighted")]
    resolve_conflict(svc.engine, SCOPE, fast, slow, "keep_a", auto_resolve=True)  # again: no second row
    assert _sql(svc, "SELECT count(*) FROM evidence WHERE source_type = 'belief'") == [(2,)]
    resolve_conflict(svc.engine, SCOPE, fast, slow, "keep_a")
    assert get_belief(svc.engine, SCOPE, lifecycle_state="contradicted")["total"] == 0


def test_relations_rates_contradiction_entailment_and_gates_by_context(keyword_service):
    svc = keyword_service
    stable = _set(svc, "The API is stable", tags=["context:prod"])
    _set(svc, "The API is not stable", tags=["context:staging"])
    specific = _set(svc, "The API is stable in production", tags=["context:prod"])
    _set(svc, "Bob likes coffee")
    strict = reflect(svc.engine, SCOPE, "relations")
    assert (strict["total"], strict["contradictions"], strict["entailments"], strict["neutral_pairs"]) == (6, 0, 1, 5)
    [entails, gated] = strict["relations"]
    assert (entails["relation"], entails["belief_a_id"], entails["belief_b_id"], entails["same_context"]) == \
        ("entailment", specific, stable, True)
    assert (gated["relation"], gated["same_context"], gated["detection_method"]) == \
        ("neutral", False, "keyword, gated by context")
    loose = reflect(svc.engine, SCOPE, "relations", strict_same_context=False)
    assert (loose["contradictions"], loose["entailments"]) == (1, 1)
    assert loose["recommendation"] == ("1 contradiction(s), none of them in the same context: settle them with "
                                       "resolve_conflict.")  # prod against staging
    named = reflect(svc.engine, SCOPE, "relations", context="staging")
    assert (named["contradictions"], named["entailments"]) == (0, 0)  # only one belief holds in staging


def test_reflect_analyses_only_the_beliefs_its_filters_name(keyword_service):
    svc = keyword_service
    _set(svc, "Alice likes tea", confidence=0.9, tags=["people"])
    _set(svc, "Alice doesn't like tea", confidence=0.4)
    _set(svc, "Postgres is fast", confidence=0.8)
    assert reflect(svc.engine, SCOPE, "overview")["total_beliefs"] == 3
    assert reflect(svc.engine, SCOPE, "overview", topic="ALICE")["total_beliefs"] == 2
    assert reflect(svc.engine, SCOPE, "overview", topic="people")["total_beliefs"] == 1
    assert reflect(svc.engine, SCOPE, "contradictions", min_confidence=0.5)["total"] == 0
    newest = reflect(svc.engine, SCOPE, "confidence", limit=1)
    assert (newest["analysed"], [b["proposition"] for b in newest["beliefs"]]) == (1, ["Postgres is fast"])


@pytest.mark.migrates
def test_migration_0010_gives_old_beliefs_their_receipt_as_creator_and_old_evidence_full_weight(tmp_path):
    from sqlalchemy import create_engine, text as sql_text

    from hermes_cmms.store import _migrations

    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    before = [m for m in _migrations.CORE_MIGRATIONS if m[0] != "0010_belief_sources"]
    with engine.begin() as conn:
        _migrations.apply(conn, before)
        conn.execute(sql_text("INSERT INTO memories (id, scope, content, content_hash, source, created_at, updated_at) "
                              "VALUES ('b1', 's', 'x', 'h', 'hermes:cmms_belief', 0, 0)"))
        conn.execute(sql_text("INSERT INTO beliefs (memory_id, scope, proposition_key) VALUES ('b1', 's', 'x')"))
        conn.execute(sql_text("INSERT INTO evidence (belief_id, scope, at) VALUES ('b1', 's', 0)"))
        assert _migrations.apply(conn, _migrations.CORE_MIGRATIONS) == ["0010_belief_sources"]
        assert conn.execute(sql_text("SELECT creator FROM beliefs")).all() == [("hermes:cmms_belief",)]
        assert conn.execute(sql_text("SELECT source_type, source_ref, weight FROM evidence")).all() == [("", "", 1.0)]


def test_a_proposition_of_the_contracts_2048_characters_is_taken(keyword_service):
    svc = keyword_service
    longest = "x" * beliefs.MAX_BELIEF_CHARS
    assert (beliefs.MAX_BELIEF_CHARS, set_belief(svc.engine, SCOPE, longest)["belief"]["proposition"]) == (2048, longest)
    a, b = _pair(svc)
    merged = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="y" * 2048)
    assert merged["created"]["proposition"] == "y" * 2048


def test_a_merge_settles_the_conflict_for_good(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    merged = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes tea sometimes")["merged"]
    assert set(_ids(get_belief(svc.engine, SCOPE))) == {a, b, merged}  # the default (active): all three
    assert get_belief(svc.engine, SCOPE, lifecycle_state="contradicted")["beliefs"] == []
    assert get_belief(svc.engine, SCOPE, state="contested")["beliefs"] == []
    assert reflect(svc.engine, SCOPE, "contradictions")["contradictions"] == []
    assert reflect(svc.engine, SCOPE, "relations")["contradictions"] == 0
    assert reflect(svc.engine, SCOPE, "overview")["by_lifecycle_state"]["contradicted"] == 0
    for strategy, kwargs in [("merge", {"merged_text": "Alice likes tea at noon"}), ("keep_a", {}),
                             ("auto", {"auto_resolve": True})]:
        with pytest.raises(InvalidInput, match=f"^Beliefs {shown_id(a)} and {shown_id(b)} were settled already, "
                                               f"by the merge into {shown_id(merged)}.$"):
            resolve_conflict(svc.engine, SCOPE, a, b, strategy, **kwargs)
    again = _set(svc, "Alice does not like tea")  # restating b reinforces it: still settled
    assert again == b and get_belief(svc.engine, SCOPE, belief_id=b)["beliefs"][0]["lifecycle_state"] == "active"


def test_forgetting_a_merged_belief_leaves_no_row_naming_it(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    merged = resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes tea sometimes")["merged"]
    svc.forget(SCOPE, merged)
    assert _sql(svc, "SELECT id FROM evidence WHERE source_ref = ? OR memory_id = ? OR belief_id = ?",
                merged, merged, merged) == []
    assert set(_ids(get_belief(svc.engine, SCOPE))) == {a, b}


def test_a_settled_contest_is_kept_when_a_stale_belief_is_renewed(keyword_service):
    svc = keyword_service
    a, b = _pair(svc)
    resolve_conflict(svc.engine, SCOPE, a, b, "merge", merged_text="Alice likes tea sometimes")
    _sql(svc, "UPDATE memories SET state = 'stale' WHERE id = ?", a)
    renewed = set_belief(svc.engine, SCOPE, "Alice likes tea")
    assert renewed["id"] != a and renewed["superseded_ids"] == [a]  # a fresh copy of the stale belief
    assert (renewed["belief"]["lifecycle_state"], renewed["belief"]["settled_with_ids"]) == ("active", [b])
    assert get_belief(svc.engine, SCOPE, lifecycle_state="contradicted")["beliefs"] == []


def test_a_source_that_names_no_memory_is_kept_as_given_and_one_memory_is_cited_once(keyword_service):
    svc = keyword_service
    fact = svc.remember_fact(SCOPE, "Server Alpha", "runs", "Postgres")
    md5, dashed_outside = "d41d8cd98f00b204e9800998ecf8427e", "0f190aaf-8a8b-4f27-b21c-4af00964f89e"
    answer = set_belief(svc.engine, SCOPE, "Postgres suits Server Alpha", sources=[
        {"source_type": "observation", "source_id": md5}, {"source_type": "fact", "source_id": shown_id(fact)},
        {"source_type": "fact", "source_id": fact}, {"source_type": "observation", "source_id": dashed_outside},
        {"source_type": "observation", "source_id": " ticket-12 "}])
    rows = _sql(svc, "SELECT memory_id, source_ref, source_type FROM evidence WHERE belief_id = ? ORDER BY id",
                answer["id"])
    assert rows == [(None, md5, "observation"), (fact, "", "fact"), (None, dashed_outside, "observation"),
                    (None, " ticket-12 ", "observation")]
    assert answer["belief"]["source_ids"] == [md5, shown_id(fact), dashed_outside, " ticket-12 "]
    assert [e["source_ref"] for e in answer["belief"]["evidence"]] == [" ticket-12 ", dashed_outside, "", md5]
    for given in (md5, fact, shown_id(fact), dashed_outside):
        assert _ids(get_belief(svc.engine, SCOPE, source_id=given)) == [answer["id"]], given
