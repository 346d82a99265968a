"""Beliefs: propositions held with a confidence, backed by evidence, reinforced when restated,
contradicted by their negation, resolved, and reflected on (docs/beliefs.md).

A belief is a memory of kind 'belief' in the semantic tier (so recall, decay, lifecycle states,
the audit trail and forget apply to it), a row in `beliefs` (its proposition) and rows in
`evidence`. Every function takes the Engine first and returns plain JSON-able dicts.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Sequence

from . import _reflect
from ..common import lifecycle_rules as lifecycle
from ._proposition import read_proposition, worded
from ..common.vocabulary import (BELIEF_STATES, LIFECYCLE_STATES, MAX_BELIEF_CHARS, REFLECT_MODES, SOURCE_TYPES,
                                 STRATEGIES)
from ._reflect import AUTO_RESOLVE_GAP, DECLARED, SETTLED, Record, auto_winner, confidence_gap, negation
from ._rows.beliefs import MERGED
from ..common.checks import MAX_TAGS, scope_of, tags_of
from ..common.errors import InvalidInput, UnknownMemory
from ..common.ids import shown_id, stored_id
from ._rows import beliefs as belief_rows
from ..store.models import Memory
from ..common.plugins import run_redactors
from ..store.store import event as _event, record as _record
from ..common.text import clean, clean_key
from ..recall.search import search
from ..common.answers import receipt_response
from ..retain.admission import store_note

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["REFLECT_MODES", "STRATEGIES", "set_belief", "get_belief", "resolve_conflict", "reflect",
           "read_proposition"]

MAX_EVIDENCE_IDS = 50
MAX_SOURCE_ID_CHARS = 256
SOURCE_KEYS = ("source_type", "source_id", "weight")
SOURCE_WEIGHT = 0.5  # a source's weight when none is given (the contract's default)
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


def _cited(engine: "Engine", scope: str, memory_ids, name: str = "evidence_ids") -> dict[str, Memory]:
    """The memories, by id in the order given, each checked to exist in the scope."""
    ids = _ids(memory_ids, name)
    found = engine.store.get(ids, scope)
    for memory_id in ids:
        if memory_id not in found:
            raise UnknownMemory(f"Unknown memory id {memory_id!r} in this scope.")
    return {memory_id: found[memory_id] for memory_id in ids}


def source_type(memory: Memory) -> str:
    """The contract's source type of a cited memory: a fact, a decision, what a user said, or
    else an observation."""
    if memory.kind in ("fact", "decision"):
        return memory.kind
    return "user_statement" if memory.role == "user" else "observation"


def _source_entry(engine: "Engine", scope: str, entry) -> dict:
    """One of set_belief's `sources`, checked: {source_type, source_id, weight (default 0.5)}."""
    if not isinstance(entry, dict):
        raise InvalidInput(f"Each source must be an object with source_type and source_id, not {type(entry).__name__}.")
    unknown = [key for key in entry if key not in SOURCE_KEYS]
    if unknown:
        raise InvalidInput(f"A source takes {', '.join(SOURCE_KEYS)}; {str(unknown[0])[:80]!r} is not one of them.")
    if entry.get("source_type") not in SOURCE_TYPES:
        raise InvalidInput(f"A source's source_type must be one of {', '.join(SOURCE_TYPES)}, "
                           f"not {str(entry.get('source_type'))[:80]!r}.")
    ref = entry.get("source_id")
    if not isinstance(ref, str) or not clean(ref).strip():
        raise InvalidInput("A source's source_id must be a non-empty string.")
    if len(ref) > MAX_SOURCE_ID_CHARS:
        raise InvalidInput(f"A source's source_id is {len(ref):,} characters; the limit is {MAX_SOURCE_ID_CHARS}.")
    weight = entry.get("weight", SOURCE_WEIGHT)
    if _fraction(weight, "source weight") is None:
        raise InvalidInput("The source weight must be a number from 0 to 1, not None.")
    return {"source_type": entry["source_type"], "source_ref": _redact(engine, scope, ref), "weight": float(weight)}


def _sources(engine: "Engine", scope: str, sources) -> list[dict]:
    """set_belief's `sources` as evidence parts: one naming a memory of the scope cites it
    (`memory_id`), any other keeps its reference (`source_ref`); each with its type and weight."""
    if isinstance(sources, (str, dict)) or not isinstance(sources, (list, tuple)):
        raise InvalidInput(f"The sources must be a list of objects, not {type(sources).__name__}.")
    if len(sources) > MAX_EVIDENCE_IDS:
        raise InvalidInput(f"At most {MAX_EVIDENCE_IDS} sources, not {len(sources)}.")
    entries = [_source_entry(engine, scope, entry) for entry in sources]
    found = engine.store.get(list({_memory_key(e["source_ref"]) for e in entries}), scope)
    for entry in entries:
        if _memory_key(entry["source_ref"]) in found:
            entry["memory_id"], entry["source_ref"] = _memory_key(entry["source_ref"]), ""
    unique: dict[tuple, dict] = {}  # the same source (once normalised) once
    for entry in entries:
        unique.setdefault(tuple(sorted(entry.items())), entry)
    return list(unique.values())


def _memory_key(ref: str) -> str:
    """The stored id a source_id names if it is a memory id (dashed, hex, any case)."""
    return clean_key(stored_id(ref))


def _replaced(conn, scope: str, supersedes) -> Optional[Record]:
    """The belief `supersedes` names (None for none); it must not be superseded already."""
    if supersedes is None:
        return None
    old = _reflect.one(conn, scope, clean_key(supersedes))
    if old.superseded_by:
        raise InvalidInput(f"Belief {old.id!r} is already superseded by {old.superseded_by!r}.")
    return old


def _holding(conn, scope: str, key: str, polarity: int) -> Optional[Record]:
    """The newest current belief of the scope with this proposition and polarity."""
    found = _reflect.load(conn, scope, belief_rows.holding(scope, key, polarity))
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
               learned_from: Sequence[str] = (), sources: Sequence[dict] = (), creator: Optional[str] = None) -> dict:
    """Hold a proposition; return {"id", "action", "superseded_ids", "belief", "receipt"}, and
    "superseded" (the replaced belief, as it reads now) when `supersedes` replaced one.

    action is "created"; "reinforced" when a current belief of the scope states the same
    proposition with the same polarity (a stale one is renewed: a fresh copy supersedes it);
    "superseded" with `supersedes` (a belief id: it is marked superseded by this one);
    "challenged" when `stance` is -1 and the belief exists (evidence against it is recorded,
    nothing is reinforced). Its negation stays a separate, contradicting belief, and a denied
    text is stored reading as a denial. `evidence` is a note, `evidence_ids` memories of the
    scope that support (stance 1) or contradict (-1) it; `sources` the contract's
    [{source_type, source_id, weight}] (a source_id naming a memory of the scope cites it, any
    other is kept as an outside reference); each becomes an evidence row. `creator` is the door
    that writes it (default: the receipt `source`); a reinforcement keeps the first one's. The
    text is redacted before anything is read from it; memory, belief row and evidence are
    written in one transaction."""
    scope, tags = scope_of(scope), tags_of(tags)
    text = _redact(engine, scope, _text(text))
    reading, stance = _reading(text, polarity), _sign(stance, "stance")
    source = _redact(engine, scope, _source(source))
    creator = source if creator is None else _redact(engine, scope, _source(creator))
    _fraction(confidence, "confidence")
    note = _redact(engine, scope, _text(evidence, "The evidence note")) if evidence is not None else ""
    cited, given = _cited(engine, scope, evidence_ids), _sources(engine, scope, sources)
    learned_from = list(_cited(engine, scope, learned_from, "learned_from"))
    old, match = _before(engine, scope, supersedes, reading)
    if stance < 0 and match is not None and old is None:
        return _challenge(engine, scope, match, _evidence_rows(cited, note or "challenged", -1, source, True, given),
                          source, creator)
    renewing = match is not None and match.state in lifecycle.FADED  # a fresh copy carries its evidence
    rows = [*(_carried(match, 1) + _marks(match) if renewing else []),
            *_evidence_rows(cited, note, stance, source, match is not None and not renewing, given)]
    item = store_note(engine, scope, worded(text, reading[2]), kind="belief", tags=tags, source=source,
                              confidence=confidence, learned_from=learned_from, supersedes=[old.id] if old else (),
                              duplicate_of=match.id if match else None, judge=False, dedup=False,
                              belief=_row(reading, creator), evidence=rows)
    superseded = [*([old.id] if old else []), *([match.id] if match and match.id != item.id else [])]
    action = "superseded" if old else "reinforced" if match else "created"
    shown = _show(engine, scope, [item.id, *([old.id] if old else [])])
    answer = {"id": item.id, "action": action, "superseded_ids": superseded, "belief": shown[0],
              "receipt": _receipt(engine, scope, item.id, creator)}
    return {**answer, "superseded": shown[1]} if old else answer


def _receipt(engine: "Engine", scope: str, belief_id: str, created_by: str) -> dict:
    """The contract's receipt of a write that left `belief_id` standing."""
    return receipt_response(engine.store.get([belief_id], scope)[belief_id], "belief", created_by or "cmms")


def _row(reading: tuple[str, str, int], creator: str) -> dict:
    """The beliefs row of a reading (the store adds memory_id and scope)."""
    return {**dict(zip(("proposition_key", "topic", "polarity"), reading)), "creator": creator}


def _evidence_rows(cited: dict[str, Memory], note: str, stance: int, source: str, restated: bool,
                   given: Sequence[dict] = ()) -> list[dict]:
    """One row per cited memory and per given source; with neither, one for the note, or for the
    restatement itself (the store adds belief_id, scope and the time)."""
    base = {"memory_id": None, "source": source, "stance": stance, "note": note, "source_type": "observation",
            "source_ref": "", "weight": 1.0}
    rows = [{**base, "memory_id": memory_id, "source_type": source_type(memory)} for memory_id, memory in cited.items()]
    rows += [{**base, **entry} for entry in given]
    if rows:
        return rows
    return [{**base, "note": note or "restated"}] if note or restated else []


def _carried(belief: Record, factor: int) -> list[dict]:
    """The evidence of `belief` as rows for another belief, each stance times `factor` (-1
    where the other has the opposite polarity: evidence for it is evidence against)."""
    return [{"memory_id": e["memory_id"], "source": e["source"], "stance": e["stance"] * factor,
             "note": e["note"], "at": e["at"], "source_type": e["source_type"], "source_ref": e["source_ref"],
             "weight": e["weight"]} for e in belief.evidence if e["source_type"] != DECLARED]


def _marks(belief: Record) -> list[dict]:
    """The marker rows of `belief` as rows for a fresh copy of it (a settled contest stays settled)."""
    return [*(_marker(SETTLED, rival, merged, belief.source, "settled by a merge") for rival, merged in belief.settled.items()),
            *(_marker(MERGED, original, "", belief.source, "merged from it") for original in belief.merged_from)]


def _challenge(engine: "Engine", scope: str, belief: Record, rows: list[dict], source: str, creator: str) -> dict:
    """Record evidence against an existing belief (no reinforcement), with an audit event."""
    now = time.time()
    rows = [{**row, "belief_id": belief.id, "scope": scope, "at": now} for row in rows]
    with engine.store.writing() as conn:
        belief_rows.add_evidence(conn, rows)
        _record(conn, [_event(now, "evidence", source, scope, belief.id, stance=-1, rows=len(rows))])
    return {"id": belief.id, "action": "challenged", "superseded_ids": [],
            "belief": _show(engine, scope, [belief.id])[0], "receipt": _receipt(engine, scope, belief.id, creator)}


# -- reading ------------------------------------------------------------------------------------


def get_belief(engine: "Engine", scope: str, *, text: Optional[str] = None, state: Optional[str] = None,
               lifecycle_state: Optional[str] = None, min_confidence: Optional[float] = None,
               tags: Sequence[str] = (), source: Optional[str] = None, creator: Optional[str] = None,
               source_id: Optional[str] = None, belief_id: Optional[str] = None, limit: int = 20,
               offset: int = 0) -> dict:
    """A page of the scope's beliefs matching every filter given, how many it holds (the
    contract's total), how many match in all (for paging with `offset`), and the filters used:
    {"beliefs": [...], "total", "matched", "query"}. With `text`, best hybrid-search match
    first; else newest first. `state`: a lifecycle state, "superseded", "contested" or "all" (any);
    `lifecycle_state`: the contract's coarse one (LIFECYCLE_STATES); `source`: a receipt prefix;
    `creator`: the writing door, whole or up to a colon ("mcp" finds "mcp:set_belief");
    `source_id`: beliefs whose evidence cites it (a memory id or an outside reference);
    `belief_id`: that belief only (UnknownMemory if the scope has no such belief)."""
    scope = scope_of(scope)
    filters = {"state": state, "lifecycle_state": lifecycle_state, "min_confidence": min_confidence,
               "tags": list(tags_of(tags)) or None, "source": source, "creator": creator, "source_id": source_id,
               "belief_id": belief_id}
    q = _narrowed(scope, state, _fraction(min_confidence, "min_confidence"), tags_of(tags), source)
    q = _coarse_narrowed(scope, q, lifecycle_state, creator, source_id)
    limit, offset = _count(limit, "limit", 1, MAX_LIMIT), _count(offset, "offset", 0, 10 ** 9)
    ranked = _ranked(engine, scope, _text(text, "The text filter")) if text is not None else None
    with engine.store.read() as conn:
        if belief_id is not None:
            q = belief_rows.with_id(q, _reflect.one(conn, scope, clean_key(belief_id)).id)
        if ranked is None:
            matched = belief_rows.count(conn, q)
            records = _reflect.load(conn, scope, belief_rows.newest_page(q, limit, offset))
        else:
            found = {r.id: r for r in _reflect.load(conn, scope, belief_rows.among(q, ranked))}
            hits = [found[i] for i in ranked if i in found]
            matched, records = len(hits), hits[offset:offset + limit]
        used = {"proposition": text or "", **{k: v for k, v in filters.items() if v is not None},
                "limit": limit, "offset": offset}
        return {"beliefs": _reflect.dicts(conn, scope, records), "total": len(records), "matched": matched,
                "query": used}


def _narrowed(scope: str, state, min_confidence: Optional[float], tags: tuple[str, ...], source):
    """The scope's beliefs narrowed by state ("all", as a page of memories takes it: any state, as
    none), confidence, tags and receipt prefix."""
    if state is not None and state not in (*BELIEF_STATES, "all"):
        raise InvalidInput(f"Unknown belief state {state!r}; choose one of {', '.join(BELIEF_STATES)} or all.")
    state = None if state == "all" else state
    return belief_rows.narrowed(scope, state, min_confidence, tags, _prefix(source, "source"))


def _prefix(value, name: str) -> Optional[str]:
    """A text filter, checked and cleaned as stored values are."""
    if value is not None and (not isinstance(value, str) or not clean(value).strip()):
        raise InvalidInput(f"The {name} filter must be a non-empty string, not {value!r}.")
    return clean(value) if value is not None else None


def _coarse_narrowed(scope: str, q, lifecycle_state, creator, source_id):
    """`q` narrowed by the contract's lifecycle state, creator and cited source."""
    if lifecycle_state is not None and lifecycle_state not in LIFECYCLE_STATES:
        raise InvalidInput(f"Unknown lifecycle state {lifecycle_state!r}; choose one of "
                           f"{', '.join(LIFECYCLE_STATES)}.")
    creator, source_id = _prefix(creator, "creator"), _prefix(source_id, "source_id")
    cited = None if source_id is None else (_memory_key(source_id), list({source_id, shown_id(source_id)}))
    return belief_rows.coarse_narrowed(scope, q, lifecycle_state, creator, cited)  # (a dashed UUID as stored too)


def _ranked(engine: "Engine", scope: str, text: str) -> list[str]:
    """Belief ids by hybrid-search rank for `text` (best first)."""
    return [hit.memory.id for hit in search(engine, scope, text, SEARCH_CANDIDATES) if hit.memory.kind == "belief"]


def _show(engine: "Engine", scope: str, ids: Sequence[str]) -> list[dict]:
    with engine.store.read() as conn:
        return _reflect.dicts(conn, scope, [_reflect.one(conn, scope, i) for i in ids])


# -- conflicts ----------------------------------------------------------------------------------


def resolve_conflict(engine: "Engine", scope: str, belief_a: str, belief_b: str, strategy: str, *,
                     merged_text: Optional[str] = None, actor: str = "", auto_resolve: bool = False) -> dict:
    """Settle two current beliefs of the scope; every resolution is a 'resolve_conflict' audit
    event. keep_a / keep_b: the other is discarded (archived); merge: both stay as they
    are and a new belief (`merged_text`, required) carrying both one's evidence is created;
    discard_both: both archived (kept, not deleted); auto: the higher confidence wins, within
    0.05 the one with more supporting evidence, still tied the newer (the answer's "rule" says
    which). `auto_resolve` (the contract's rule, whatever the strategy): a confidence gap above
    0.5 supersedes the lower belief, else both are declared contradicted (evidence against each
    other); nothing is archived. The answer: the contract's belief_a, belief_b, resolution (the
    one applied), created (merge only), events (each belief's coarse state move) and receipt;
    and ours: strategy, rule, winner, kept, superseded, archived, merged, contradiction, beliefs."""
    scope = scope_of(scope)
    if strategy not in STRATEGIES:
        raise InvalidInput(f"Unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    for name, value in (("belief_a_id", belief_a), ("belief_b_id", belief_b)):
        if value is None or isinstance(value, str) and not value.strip():
            raise InvalidInput(f"Missing required argument {name!r}.")
    if belief_a == belief_b:
        raise InvalidInput(f"Resolve two different beliefs, not {belief_a!r} against itself.")
    if not isinstance(auto_resolve, bool):
        raise InvalidInput(f"auto_resolve must be true or false, not {auto_resolve!r}.")
    if merged_text is not None and (strategy != "merge" or auto_resolve):
        raise InvalidInput("A merged text (new_proposition) is only used by the merge strategy without auto_resolve.")
    if merged_text is None and strategy == "merge" and not auto_resolve:
        raise InvalidInput("A merge needs the text of the merged belief (new_proposition).")
    if not isinstance(actor, str):
        raise InvalidInput(f"The actor must be a string, not {actor!r}.")
    with engine.store.read() as conn:
        a, b = _pair(conn, scope, belief_a, belief_b)
        before = {d["id"]: d["lifecycle_state"] for d in _reflect.dicts(conn, scope, [a, b])}
    if auto_resolve:
        answer, reasons = _auto_resolve(engine, scope, a, b, actor, strategy)
    elif strategy == "merge":
        answer, reasons = _merge(engine, scope, a, b, merged_text, actor)
    else:
        answer, reasons = _settle(engine, scope, a, b, strategy, actor)
    reasons = {k: v for k, v in reasons.items() if k not in (a.id, b.id) or strategy != "merge" or auto_resolve
               or before[k] == "contradicted"}  # a merge names only the originals it moved
    shown = _show(engine, scope, [a.id, b.id, *([answer["merged"]] if answer["merged"] else [])])
    standing = answer["merged"] or answer["winner"] or a.id
    out = {"belief_a": shown[0], "belief_b": shown[1], "resolution": answer.pop("resolution"),
           **({"created": shown[2]} if answer["merged"] else {}),
           "events": _moves(before, shown, reasons), "receipt": _receipt(engine, scope, standing, actor),
           "auto_resolve": auto_resolve, **answer, "beliefs": shown}
    return out


def _moves(before: dict[str, str], shown: list[dict], reasons: dict[str, str]) -> list[dict]:
    """The contract's events: each belief whose coarse state moved (a created one from "none"),
    and each the resolution names a reason for even where its state stayed."""
    moves = []
    for belief in shown:
        was, now = before.get(belief["id"], "none"), belief["lifecycle_state"]
        if was != now or belief["id"] in reasons:
            moves.append({"belief_id": belief["id"], "from_state": was, "to_state": now,
                          "reason": reasons.get(belief["id"], "its rival was settled")})
    return moves


def _settle(engine: "Engine", scope: str, a: Record, b: Record, strategy: str, actor: str,
            discard: bool = True) -> tuple[dict, dict]:
    """keep_a, keep_b, auto or discard_both: (our answer with the resolution applied, reasons).
    As the contract says, keep_a / keep_b discard (archive) the other; our auto, and the
    contract's auto_resolve (`discard` false), supersede it by the kept one."""
    store, now = engine.store, time.time()
    with store.writing() as conn:
        a, b = _pair(conn, scope, a.id, b.id)
        if strategy == "discard_both":
            winner, rule, events = None, None, _archive(conn, scope, [a, b], actor, now)
            outcome = {"kept": [], "superseded": [], "archived": [a.id, b.id]}
            reasons = {r.id: "discarded (discard_both)" for r in (a, b)}
        elif discard and strategy in ("keep_a", "keep_b"):
            winner, loser, rule = (a, b, None) if strategy == "keep_a" else (b, a, None)
            events = _archive(conn, scope, [loser], actor, now)
            outcome = {"kept": [winner.id], "superseded": [], "archived": [loser.id]}
            reasons = {loser.id: f"discarded ({strategy})"}
        else:
            winner, loser, rule = auto_winner(a, b) if strategy == "auto" else (a, b, None) \
                if strategy == "keep_a" else (b, a, None)
            events = store.supersede(conn, scope, [loser.id], winner.id, now, conflict=True)
            outcome = {"kept": [winner.id], "superseded": [loser.id], "archived": []}
            reasons = {loser.id: f"superseded by the kept belief ({strategy}{f', by {rule}' if rule else ''})"}
        answer = {"strategy": strategy, "rule": rule, "winner": winner.id if winner else None, **outcome,
                  "merged": None, "contradiction": negation(a, b)}
        _record(conn, [*events, _resolution(now, actor, scope, answer, a, b)])
    applied = strategy if strategy != "auto" else "keep_a" if winner.id == a.id else "keep_b"
    return {**answer, "resolution": applied}, reasons


def _auto_resolve(engine: "Engine", scope: str, a: Record, b: Record, actor: str,
                  strategy: str) -> tuple[dict, dict]:
    """The contract's auto_resolve: a confidence gap above AUTO_RESOLVE_GAP supersedes the lower
    belief (resolution keep_a / keep_b); else both are left current and contradicted, a pair
    that does not negate each other by an evidence row against each other naming the other."""
    gap = confidence_gap(a, b)
    if gap > AUTO_RESOLVE_GAP:
        answer, reasons = _settle(engine, scope, a, b, "keep_a" if a.confidence > b.confidence else "keep_b", actor,
                                  discard=False)
        return {**answer, "strategy": strategy, "auto_resolve": True, "rule": "confidence gap"}, reasons
    now, why = time.time(), f"the confidence gap {gap} is not above {AUTO_RESOLVE_GAP}"
    with engine.store.writing() as conn:
        a, b = _pair(conn, scope, a.id, b.id)
        rows = [{"belief_id": mine.id, "scope": scope, "memory_id": other.id, "source": actor or "cmms",
                 "stance": -1, "note": f"contradicted: {why}", "at": now, "source_type": DECLARED,
                 "source_ref": "", "weight": 1.0}
                for mine, other in ((a, b), (b, a)) if not negation(a, b)
                and not any(e["source_type"] == DECLARED and e["memory_id"] == other.id for e in mine.evidence)]
        belief_rows.add_evidence(conn, rows)
        answer = {"strategy": strategy, "auto_resolve": True, "rule": "confidence gap", "winner": None,
                  "kept": [a.id, b.id], "superseded": [], "archived": [], "merged": None,
                  "contradiction": True}
        _record(conn, [_resolution(now, actor, scope, answer, a, b)])
    return {**answer, "resolution": "contradicted"}, {r.id: f"contradicted: {why}" for r in (a, b)}


def _pair(conn, scope: str, belief_a, belief_b) -> tuple[Record, Record]:
    """Both beliefs, each current in the scope."""
    pair = _reflect.one(conn, scope, clean_key(belief_a)), _reflect.one(conn, scope, clean_key(belief_b))
    for r in pair:
        if not r.current:
            raise InvalidInput(f"Belief {r.id!r} is {r.shown_state}; only current beliefs can be resolved.")
    if _reflect.settled(*pair):
        a, b = pair
        raise InvalidInput(f"Beliefs {shown_id(a.id)} and {shown_id(b.id)} were settled already, by the merge "
                           f"into {shown_id(a.settled.get(b.id) or b.settled.get(a.id))}.")
    return pair


def _archive(conn, scope: str, records: list[Record], actor: str, now: float) -> list[dict]:
    """Move the beliefs to state 'archived'; their lifecycle events."""
    belief_rows.archive(conn, scope, [r.id for r in records], now)
    return [_event(now, "lifecycle", actor or "cmms", scope, r.id, state_from=r.state, state_to="archived",
                   reason="discarded in a conflict resolution") for r in records]


def _resolution(now: float, actor: str, scope: str, answer: dict, a: Record, b: Record) -> dict:
    """The 'resolve_conflict' audit event of one resolution."""
    subject = answer["winner"] or answer["merged"] or a.id
    return _event(now, "resolve_conflict", actor or "cmms", scope, subject, belief_a=a.id, belief_b=b.id,
                  **{k: v for k, v in answer.items() if k != "contradiction"})


def _merge(engine: "Engine", scope: str, a: Record, b: Record, merged_text: str, actor: str) -> tuple[dict, dict]:
    """A new belief (merged_text) with both one's evidence and tags (the first MAX_TAGS),
    learned from whatever either was learned from; a and b stay as they are (the contract's
    merge). A text that restates a or b is refused: keep_a or keep_b says that."""
    sources = belief_rows.learned_from(engine.store, [a.id, b.id])
    text = _redact(engine, scope, _text(merged_text, "The merged text"))
    reading = _reading(text, None)
    for r in (a, b):
        if (r.proposition, r.polarity) == (reading[0], reading[2]):
            raise InvalidInput(f"The merged text restates belief {r.id!r}; keep it with keep_a or keep_b.")
    evidence = [*_carried(a, a.polarity * reading[2]), *_carried(b, b.polarity * reading[2]),
                *(_marker(MERGED, r.id, "", actor, "merged from it") for r in (a, b))]
    item = store_note(engine, scope, text, kind="belief", tags=tuple(dict.fromkeys(a.tags + b.tags))[:MAX_TAGS],
                              source=actor or "cmms:resolve", confidence=max(a.confidence, b.confidence),
                              learned_from=sources, judge=False, dedup=False,
                              belief=_row(reading, actor or "cmms:resolve"), evidence=evidence)
    answer = {"strategy": "merge", "rule": None, "winner": None, "kept": [a.id, b.id, item.id], "superseded": [],
              "archived": [], "merged": item.id, "contradiction": negation(a, b)}
    now = time.time()
    with engine.store.writing() as conn:
        belief_rows.add_evidence(conn, [{**_marker(SETTLED, other.id, item.id, actor, "settled by a merge"),
                                         "belief_id": mine.id, "scope": scope, "at": now}
                                        for mine, other in ((a, b), (b, a))])
        _record(conn, [_resolution(now, actor, scope, answer, a, b)])
    reasons = {r.id: f"its conflict was settled by the merge into {shown_id(item.id)}" for r in (a, b)}
    return {**answer, "resolution": "merge"}, {**reasons, item.id: f"merged from {shown_id(a.id)} and {shown_id(b.id)}"}


def _marker(kind: str, belief_id: str, merged_id: str, actor: str, note: str) -> dict:
    """A marker row (not evidence) naming another belief: SETTLED (the contest with it was
    settled by the merge into `merged_id`) or MERGED (merged from it)."""
    return {"memory_id": belief_id, "source": actor or "cmms:resolve", "stance": 0, "note": note,
            "source_type": kind, "source_ref": merged_id, "weight": 0.0}


# -- reflection ---------------------------------------------------------------------------------


def reflect(engine: "Engine", scope: str, mode: str, *, now: Optional[float] = None, topic: Optional[str] = None,
            min_confidence: float = 0.0, limit: int = 0, context: Optional[str] = None,
            strict_same_context: bool = True) -> dict:
    """One of REFLECT_MODES computed over the scope's stored beliefs and evidence, as of `now`
    (default: the current time): {"mode", "analysed", ...the view}. It analyses the beliefs
    about `topic` (their topic or a tag) at least `min_confidence` sure, the newest `limit` of
    them (0: all); `context` and `strict_same_context` gate the relations mode (see
    _reflect.relations)."""
    scope = scope_of(scope)
    if mode not in REFLECT_MODES:
        raise InvalidInput(f"Unknown reflect mode {mode!r}; choose one of {', '.join(REFLECT_MODES)}.")
    if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float))):
        raise InvalidInput(f"The time now must be a Unix time in seconds, not {now!r}.")
    topic, context = _prefix(topic, "topic"), _prefix(context, "context")
    if _fraction(min_confidence, "min_confidence") is None:
        raise InvalidInput("The min_confidence must be a number from 0 to 1, not None.")
    limit = _count(limit, "limit", 0, 10 ** 9)
    if not isinstance(strict_same_context, bool):
        raise InvalidInput(f"strict_same_context must be true or false, not {strict_same_context!r}.")
    with engine.store.read() as conn:
        records = _reflect.load(conn, scope, belief_rows.oldest_first(_reflect.query(scope)))
        records = _reflect.narrowed(records, topic, min_confidence, limit)
        _reflect.mark_missing(conn, scope, records)
    at = time.time() if now is None else now
    gate = {"context": context, "strict": strict_same_context} if mode == "relations" else {}
    return {"mode": mode, "analysed": len(records), **_reflect.VIEWS[mode](records, at, **gate)}
