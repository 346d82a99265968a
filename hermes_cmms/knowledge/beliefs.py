"""Beliefs: propositions held with a confidence, backed by evidence, reinforced when restated,
contradicted by their negation, resolved, and reflected on (docs/beliefs.md).

A belief is a memory of kind 'belief' in the semantic tier (so recall, decay, lifecycle states,
the audit trail and forget apply to it), a row in `beliefs` (its proposition) and rows in
`evidence`. Every function takes the Engine first and returns plain JSON-able dicts.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Sequence

from sqlalchemy import Connection, exists, func, insert, select, update

from . import _reflect
from ..common import lifecycle_rules as lifecycle
from ._proposition import read_proposition, worded
from ._reflect import REFLECT_MODES, Record, auto_winner
from ..common.checks import MAX_TAGS, scope_of, tags_of
from ..common.errors import InvalidInput, UnknownMemory
from ..store.models import Belief, Evidence, Link, Memory
from ..common.plugins import run_redactors
from ..store.store import event as _event, filtered as _filtered, record as _record
from ..common.text import clean, clean_key
from ..recall.search import search
from ..retain.admission import store_note

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["REFLECT_MODES", "STRATEGIES", "set_belief", "get_belief", "resolve_conflict", "reflect",
           "read_proposition"]

STRATEGIES = ("keep_a", "keep_b", "merge", "discard_both", "auto")
STATE_FILTERS = ("candidate", "validated", "active", "stale", "archived", "superseded", "contested")
MAX_BELIEF_CHARS = 2_000
MAX_EVIDENCE_IDS = 50
MAX_LIMIT = 200
SEARCH_CANDIDATES = 200  # hybrid-search hits looked at for a text filter


# -- validation ---------------------------------------------------------------------------------


def _text(text, what: str = "A belief") -> str:
    """The text, checked; errors never quote it (it may hold a secret, and go to the audit log)."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a non-empty string, not {type(text).__name__}.")
    if not clean(text).strip():
        raise InvalidInput(f"{what} must be a non-empty string.")
    if len(text) > MAX_BELIEF_CHARS:
        raise InvalidInput(f"{what} is {len(text):,} characters; the limit is {MAX_BELIEF_CHARS:,}.")
    return text


def _sign(value, name: str) -> int:
    if isinstance(value, bool) or value not in (1, -1):
        raise InvalidInput(f"The {name} must be 1 or -1, not {value!r}.")
    return int(value)


def _fraction(value, name: str) -> Optional[float]:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not 0.0 <= value <= 1.0):
        raise InvalidInput(f"The {name} must be a number from 0 to 1, not {value!r}.")
    return value


def _count(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"The {name} must be a whole number from {low} to {high:,}, not {value!r}.")
    return value


def _ids(value, name: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) \
            or not all(isinstance(i, str) and i.strip() for i in value):
        raise InvalidInput(f"The {name} must be a list of memory ids, not {value!r}.")
    if len(value) > MAX_EVIDENCE_IDS:
        raise InvalidInput(f"At most {MAX_EVIDENCE_IDS} {name}, not {len(value)}.")
    return list(dict.fromkeys(clean_key(i) for i in value))


def _reading(text: str, polarity) -> tuple[str, str, int]:
    """The text's proposition; a given polarity asserts (1) or denies (-1) the text as written."""
    key, topic, parsed = read_proposition(text)
    if not key:
        raise InvalidInput(f"The belief ({len(text):,} characters) states nothing once hedges and negations "
                           "are removed.")
    return key, topic, parsed * (1 if polarity is None else _sign(polarity, "polarity"))


def _cited(engine: "Engine", scope: str, memory_ids, name: str = "evidence_ids") -> list[str]:
    """The memory ids, each checked to exist in the scope."""
    ids = _ids(memory_ids, name)
    found = engine.store.get(ids, scope)
    for memory_id in ids:
        if memory_id not in found:
            raise UnknownMemory(f"Unknown memory id {memory_id!r} in this scope.")
    return ids


def _replaced(conn: Connection, scope: str, supersedes) -> Optional[Record]:
    """The belief `supersedes` names (None for none); it must not be superseded already."""
    if supersedes is None:
        return None
    old = _reflect.one(conn, scope, clean_key(supersedes))
    if old.superseded_by:
        raise InvalidInput(f"Belief {old.id!r} is already superseded by {old.superseded_by!r}.")
    return old


def _holding(conn: Connection, scope: str, key: str, polarity: int) -> Optional[Record]:
    """The newest current belief of the scope with this proposition and polarity."""
    found = _reflect.load(conn, scope, _reflect.current(_reflect.query(scope)).where(
        Belief.proposition_key == key, Belief.polarity == polarity).order_by(Memory.seq.desc()).limit(1))
    return found[0] if found else None


def _before(engine: "Engine", scope: str, supersedes,
            reading: tuple[str, str, int]) -> tuple[Optional[Record], Optional[Record]]:
    """(the belief to supersede, the current belief stating the same) as stored now."""
    with engine.store.read() as conn:
        old, match = _replaced(conn, scope, supersedes), _holding(conn, scope, reading[0], reading[2])
    if old is not None and match is not None and match.id == old.id:
        raise InvalidInput(f"The belief restates {old.id!r}; set it without supersedes to reinforce it.")
    return old, match


def _source(source) -> str:
    if not isinstance(source, str):
        raise InvalidInput(f"The source must be a string, not {source!r}.")
    return source


def _redact(engine: "Engine", scope: str, text: str) -> str:
    return run_redactors(engine.pm, clean(text), scope) if text else ""


# -- writing ------------------------------------------------------------------------------------


def set_belief(engine: "Engine", scope: str, text: str, *, confidence: Optional[float] = None,
               polarity: Optional[int] = None, evidence: Optional[str] = None, evidence_ids: Sequence[str] = (),
               stance: int = 1, source: str = "", tags: Sequence[str] = (), supersedes: Optional[str] = None,
               learned_from: Sequence[str] = ()) -> dict:
    """Hold a proposition; return {"id", "action", "superseded", "belief"}.

    action is "created"; "reinforced" when a current belief of the scope states the same
    proposition with the same polarity (a stale one is renewed: a fresh copy supersedes it);
    "superseded" with `supersedes` (a belief id: it is marked superseded by this one);
    "challenged" when `stance` is -1 and the belief exists (evidence against it is recorded,
    nothing is reinforced). Its negation stays a separate, contradicting belief, and a denied
    text is stored reading as a denial. `evidence` is a note, `evidence_ids` memories of the
    scope that support (stance 1) or contradict (-1) it; each becomes an evidence row. The text
    is redacted before anything is read from it; memory, belief row and evidence are written in
    one transaction."""
    scope, tags = scope_of(scope), tags_of(tags)
    text = _redact(engine, scope, _text(text))
    reading, stance = _reading(text, polarity), _sign(stance, "stance")
    source = _redact(engine, scope, _source(source))
    _fraction(confidence, "confidence")
    note = _redact(engine, scope, _text(evidence, "The evidence note")) if evidence is not None else ""
    cited = _cited(engine, scope, evidence_ids)
    learned_from = _cited(engine, scope, learned_from, "learned_from")
    old, match = _before(engine, scope, supersedes, reading)
    if stance < 0 and match is not None and old is None:
        return _challenge(engine, scope, match, cited, note, source)
    renewing = match is not None and match.state in lifecycle.FADED  # a fresh copy carries its evidence
    rows = [*(_carried(match, 1) if renewing else []),
            *_evidence_rows(cited, note, stance, source, restated=match is not None and not renewing)]
    item = store_note(engine, scope, worded(text, reading[2]), kind="belief", tags=tags, source=source,
                              confidence=confidence, learned_from=learned_from, supersedes=[old.id] if old else (),
                              duplicate_of=match.id if match else None, judge=False, dedup=False,
                              belief=_row(reading), evidence=rows)
    superseded = [*([old.id] if old else []), *([match.id] if match and match.id != item.id else [])]
    action = "superseded" if old else "reinforced" if match else "created"
    return {"id": item.id, "action": action, "superseded": superseded,
            "belief": _show(engine, scope, [item.id])[0]}


def _row(reading: tuple[str, str, int]) -> dict:
    """The beliefs row of a reading (the store adds memory_id and scope)."""
    return dict(zip(("proposition_key", "topic", "polarity"), reading))


def _evidence_rows(cited: list[str], note: str, stance: int, source: str, restated: bool) -> list[dict]:
    """One row per cited memory; else one for the note, or for the restatement itself (the
    store adds belief_id, scope and the time)."""
    base = {"memory_id": None, "source": source, "stance": stance, "note": note}
    if cited:
        return [{**base, "memory_id": memory_id} for memory_id in cited]
    return [{**base, "note": note or "restated"}] if note or restated else []


def _carried(belief: Record, factor: int) -> list[dict]:
    """The evidence of `belief` as rows for another belief, each stance times `factor` (-1
    where the other has the opposite polarity: evidence for it is evidence against)."""
    return [{"memory_id": e["memory_id"], "source": e["source"], "stance": e["stance"] * factor,
             "note": e["note"], "at": e["at"]} for e in belief.evidence]


def _challenge(engine: "Engine", scope: str, belief: Record, cited: list[str], note: str, source: str) -> dict:
    """Record evidence against an existing belief (no reinforcement), with an audit event."""
    now = time.time()
    rows = [{**row, "belief_id": belief.id, "scope": scope, "at": now}
            for row in _evidence_rows(cited, note or "challenged", -1, source, True)]
    with engine.store.writing() as conn:
        conn.execute(insert(Evidence), rows)
        _record(conn, [_event(now, "evidence", source, scope, belief.id, stance=-1, rows=len(rows))])
    return {"id": belief.id, "action": "challenged", "superseded": [],
            "belief": _show(engine, scope, [belief.id])[0]}


# -- reading ------------------------------------------------------------------------------------


def get_belief(engine: "Engine", scope: str, *, text: Optional[str] = None, state: Optional[str] = None,
               min_confidence: Optional[float] = None, tags: Sequence[str] = (), source: Optional[str] = None,
               belief_id: Optional[str] = None, limit: int = 20, offset: int = 0) -> dict:
    """A page of the scope's beliefs matching every filter given, and how many match in all:
    {"beliefs": [...], "total"}. With `text`, best hybrid-search match first; else newest first.
    `state`: a lifecycle state, "superseded" or "contested"; `source`: a receipt prefix;
    `belief_id`: that belief only (UnknownMemory if the scope has no such belief)."""
    scope = scope_of(scope)
    q = _narrowed(scope, state, _fraction(min_confidence, "min_confidence"), tags_of(tags), source)
    limit, offset = _count(limit, "limit", 1, MAX_LIMIT), _count(offset, "offset", 0, 10 ** 9)
    ranked = _ranked(engine, scope, _text(text, "The text filter")) if text is not None else None
    with engine.store.read() as conn:
        if belief_id is not None:
            q = q.where(Memory.id == _reflect.one(conn, scope, clean_key(belief_id)).id)
        if ranked is None:
            total = conn.execute(select(func.count()).select_from(q.subquery())).scalar_one()
            records = _reflect.load(conn, scope, q.order_by(Memory.seq.desc()).limit(limit).offset(offset))
        else:
            found = {r.id: r for r in _reflect.load(conn, scope, q.where(Memory.id.in_(ranked)))}
            hits = [found[i] for i in ranked if i in found]
            total, records = len(hits), hits[offset:offset + limit]
        return {"beliefs": _reflect.dicts(conn, scope, records), "total": total}


def _narrowed(scope: str, state, min_confidence: Optional[float], tags: tuple[str, ...], source):
    """The scope's beliefs narrowed by state, confidence, tags and receipt prefix."""
    if state is not None and state not in STATE_FILTERS:
        raise InvalidInput(f"Unknown belief state {state!r}; choose one of {', '.join(STATE_FILTERS)}.")
    if source is not None and (not isinstance(source, str) or not clean(source).strip()):
        raise InvalidInput(f"The source filter must be a non-empty string, not {source!r}.")
    source = clean(source) if source is not None else None  # stored receipts are cleaned too
    q = _filtered(_reflect.query(scope), None, tags)
    if state == "superseded":
        q = q.where(Memory.superseded_by.is_not(None))
    elif state == "contested":
        q = _reflect.current(q).where(_contradicted(scope))
    elif state is not None:
        q = q.where(Memory.state == state, Memory.superseded_by.is_(None))
    if min_confidence is not None:
        q = q.where(Memory.confidence >= min_confidence)
    return q.where(Memory.source.startswith(source, autoescape=True)) if source is not None else q


def _contradicted(scope: str):
    """SQL: a current belief of the scope states the negation of this one."""
    rival, rival_memory = Belief.__table__.alias("rival"), Memory.__table__.alias("rival_memory")
    return exists(select(rival.c.memory_id).join(rival_memory, rival_memory.c.id == rival.c.memory_id).where(
        rival.c.scope == scope, rival.c.proposition_key == Belief.proposition_key,
        rival.c.polarity == -Belief.polarity, rival_memory.c.superseded_by.is_(None),
        rival_memory.c.state != "archived"))


def _ranked(engine: "Engine", scope: str, text: str) -> list[str]:
    """Belief ids by hybrid-search rank for `text` (best first)."""
    return [hit.memory.id for hit in search(engine, scope, text, SEARCH_CANDIDATES) if hit.memory.kind == "belief"]


def _show(engine: "Engine", scope: str, ids: Sequence[str]) -> list[dict]:
    with engine.store.read() as conn:
        return _reflect.dicts(conn, scope, [_reflect.one(conn, scope, i) for i in ids])


# -- conflicts ----------------------------------------------------------------------------------


def resolve_conflict(engine: "Engine", scope: str, belief_a: str, belief_b: str, strategy: str, *,
                     merged_text: Optional[str] = None, actor: str = "") -> dict:
    """Settle two current beliefs of the scope; every resolution is a 'resolve_conflict' audit
    event. keep_a / keep_b: the other is superseded by the kept one; merge: a new belief
    (`merged_text`, else a's text) carrying both one's evidence supersedes both; discard_both:
    both archived (kept, not deleted); auto: the higher confidence wins, within 0.05 the one
    with more supporting evidence, still tied the newer (the answer's "rule" says which)."""
    scope = scope_of(scope)
    if strategy not in STRATEGIES:
        raise InvalidInput(f"Unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    if belief_a == belief_b:
        raise InvalidInput(f"Resolve two different beliefs, not {belief_a!r} against itself.")
    if merged_text is not None and strategy != "merge":
        raise InvalidInput(f"A merged text is only used by the merge strategy, not by {strategy!r}.")
    if not isinstance(actor, str):
        raise InvalidInput(f"The actor must be a string, not {actor!r}.")
    if strategy == "merge":
        return _merge(engine, scope, belief_a, belief_b, merged_text, actor)
    store, now = engine.store, time.time()
    with store.writing() as conn:
        a, b = _pair(conn, scope, belief_a, belief_b)
        if strategy == "discard_both":
            winner, rule, events = None, None, _archive(conn, scope, [a, b], actor, now)
            outcome = {"kept": [], "superseded": [], "archived": [a.id, b.id]}
        else:
            winner, loser, rule = auto_winner(a, b) if strategy == "auto" else (a, b, None) \
                if strategy == "keep_a" else (b, a, None)
            events = store.supersede(conn, scope, [loser.id], winner.id, now, conflict=True)
            outcome = {"kept": [winner.id], "superseded": [loser.id], "archived": []}
        answer = {"strategy": strategy, "rule": rule, "winner": winner.id if winner else None, **outcome,
                  "merged": None, "contradiction": _contradict(a, b)}
        _record(conn, [*events, _resolution(now, actor, scope, answer, a, b)])
    return {**answer, "beliefs": _show(engine, scope, [a.id, b.id])}


def _pair(conn: Connection, scope: str, belief_a, belief_b) -> tuple[Record, Record]:
    """Both beliefs, each current in the scope."""
    pair = _reflect.one(conn, scope, clean_key(belief_a)), _reflect.one(conn, scope, clean_key(belief_b))
    for r in pair:
        if not r.current:
            raise InvalidInput(f"Belief {r.id!r} is {r.shown_state}; only current beliefs can be resolved.")
    return pair


def _contradict(a: Record, b: Record) -> bool:
    return a.proposition == b.proposition and a.polarity != b.polarity


def _archive(conn: Connection, scope: str, records: list[Record], actor: str, now: float) -> list[dict]:
    """Move the beliefs to state 'archived'; their lifecycle events."""
    conn.execute(update(Memory).where(Memory.scope == scope, Memory.id.in_([r.id for r in records]))
                 .values(state="archived", updated_at=now))
    return [_event(now, "lifecycle", actor or "cmms", scope, r.id, state_from=r.state, state_to="archived",
                   reason="discarded in a conflict resolution") for r in records]


def _resolution(now: float, actor: str, scope: str, answer: dict, a: Record, b: Record) -> dict:
    """The 'resolve_conflict' audit event of one resolution."""
    subject = answer["winner"] or answer["merged"] or a.id
    return _event(now, "resolve_conflict", actor or "cmms", scope, subject, belief_a=a.id, belief_b=b.id,
                  **{k: v for k, v in answer.items() if k != "contradiction"})


def _merge(engine: "Engine", scope: str, belief_a: str, belief_b: str, merged_text: Optional[str],
           actor: str) -> dict:
    """A new belief (merged_text, else a's text) with both one's evidence and tags (the first
    MAX_TAGS), learned from whatever either was learned from, supersedes both."""
    with engine.store.read() as conn:
        a, b = _pair(conn, scope, belief_a, belief_b)
        sources = list(conn.execute(select(Link.source_id).where(Link.memory_id.in_([a.id, b.id]))).scalars())
    text = _redact(engine, scope, _text(merged_text, "The merged text")) if merged_text is not None else a.text
    reading = _reading(text, None)
    evidence = [*_carried(a, a.polarity * reading[2]), *_carried(b, b.polarity * reading[2])]
    item = store_note(engine, scope, text, kind="belief", tags=tuple(dict.fromkeys(a.tags + b.tags))[:MAX_TAGS],
                              source=actor or "cmms:resolve", confidence=max(a.confidence, b.confidence),
                              supersedes=(a.id, b.id), learned_from=sources, judge=False, dedup=False,
                              belief=_row(reading), evidence=evidence)
    answer = {"strategy": "merge", "rule": None, "winner": None, "kept": [item.id], "superseded": [a.id, b.id],
              "archived": [], "merged": item.id, "contradiction": _contradict(a, b)}
    with engine.store.writing() as conn:
        _record(conn, [_resolution(time.time(), actor, scope, answer, a, b)])
    return {**answer, "beliefs": _show(engine, scope, [a.id, b.id, item.id])}


# -- reflection ---------------------------------------------------------------------------------


def reflect(engine: "Engine", scope: str, mode: str, *, now: Optional[float] = None) -> dict:
    """One of REFLECT_MODES computed over the scope's stored beliefs and evidence, as of `now`
    (default: the current time): {"mode", ...the view}."""
    scope = scope_of(scope)
    if mode not in REFLECT_MODES:
        raise InvalidInput(f"Unknown reflect mode {mode!r}; choose one of {', '.join(REFLECT_MODES)}.")
    if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float))):
        raise InvalidInput(f"The time now must be a Unix time in seconds, not {now!r}.")
    with engine.store.read() as conn:
        records = _reflect.load(conn, scope, _reflect.query(scope).order_by(Memory.seq))
        _reflect.mark_missing(conn, scope, records)
    return {"mode": mode, **_reflect.VIEWS[mode](records, time.time() if now is None else now)}
