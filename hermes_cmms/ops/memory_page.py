"""A memory's page: the memory whole, where it came from, its confidence now and what decay would
make of it, what it superseded and what superseded it, what was learned from it (facts, beliefs,
the entity graph) and its audit events."""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from ..common import lifecycle_rules as lifecycle
from ..common.checks import scope_of
from ..common.errors import UnknownMemory
from ..common.ids import stored_id
from ..common.text import brief, clean_key
from ..common.answers import iso
from ._rows import browse as browse_rows
from .browse import item

if TYPE_CHECKING:
    from ..engine import Engine
    from ..store.models import Memory

AUDIT_MOST = 100  # audit events a page shows, newest first


def memory_page(engine: "Engine", scope: str, memory_id: str) -> dict:
    """Everything known about one memory of `scope`; UnknownMemory (the same sentence for a
    missing id and for one of another scope) otherwise."""
    scope = scope_of(scope)
    key = clean_key(stored_id(memory_id)) if isinstance(memory_id, str) else None
    memory = browse_rows.memory_in(engine.store, scope, key) if key else None
    if memory is None:
        raise UnknownMemory(f"No memory {brief(repr(memory_id), 80)} in this scope.")
    older, newer = browse_rows.supersede_chains(engine.store, scope, memory)
    known = browse_rows.knowledge_of(engine.store, scope, memory.id)
    events = engine.store.audit_events(scope, memory_id=memory.id, limit=AUDIT_MOST)
    return {"memory": item(memory, engine.store.facts([memory.id]), turn=memory.turn),
            "provenance": provenance(memory), "confidence": confidence(memory, time.time()),
            "supersedes": [_brief(m) for m in older], "superseded_by": [_brief(m) for m in newer],
            **_knowledge(known),
            "audit": [{"at": iso(e.at), "action": e.action, "actor": e.actor,
                       "detail": json.loads(e.detail or "{}")} for e in events]}


def provenance(memory: "Memory") -> dict:
    """Which door and event wrote it, in which session and turn, when, and every repeat since."""
    return {"source": memory.source, "door": memory.source.split(":", 1)[0] if memory.source else "",
            "session_id": memory.session_id, "turn": memory.turn, "created_at": iso(memory.created_at),
            "updated_at": iso(memory.updated_at), "reinforcements": memory.access_count,
            "receipts": [{**r, "at": iso(r["at"])} if isinstance(r.get("at"), (int, float)) else r
                         for r in json.loads(memory.receipts or "[]")]}


def confidence(memory: "Memory", now: float) -> dict:
    """Its confidence as stored, its reliability (where decay starts), when it was last seen, and
    what the next decay would make of it now (confidence and state), with the kind's TTL."""
    seen = memory.last_seen_at or memory.created_at
    pinned = bool(getattr(memory, "pinned", 0))
    conflicted = memory.superseded_by is not None and memory.tier != "episodic"
    decayed = lifecycle.confidence(memory.reliability, memory.access_count, memory.kind,
                                   0.0 if pinned else now - seen, conflicted)
    state = memory.state if pinned else lifecycle.aged_state(memory.state, memory.kind, now - seen)
    return {"now": memory.confidence, "reliability": memory.reliability, "last_seen_at": iso(seen),
            "ttl_days": lifecycle.ttl_days(memory.kind), "decay_floor": lifecycle.DECAY_FLOOR,
            "after_decay": {"confidence": decayed, "state": state}, "pinned": pinned}


def _brief(memory: "Memory") -> dict:
    return {"id": memory.id, "content": memory.content, "kind": memory.kind, "state": memory.state,
            "superseded_by": memory.superseded_by, "created_at": iso(memory.created_at)}


def _knowledge(known: dict) -> dict:
    fact, belief = known["fact"], known["belief"]
    return {
        "fact": {"subject": fact.subject, "predicate": fact.predicate, "object": fact.object} if fact else None,
        "learned_from": [_brief(m) for m in known["learned_from"]],
        "learned_into": [_brief(m) for m in known["learned_into"]],
        "belief": ({"proposition_key": belief.proposition_key, "topic": belief.topic, "polarity": belief.polarity,
                    "creator": belief.creator, "evidence": [_evidence(e) for e in known["evidence"]]}
                   if belief else None),
        "evidence_for": [{**_brief(b), "stance": e.stance, "note": e.note} for e, b in known["evidence_for"]],
        "entities": {"nodes": [{"id": i, "name": name} for i, name in sorted(known["entities"].items())],
                     "edges": [{"source_id": r.source_id, "predicate": r.predicate, "target_id": r.target_id}
                               for r in known["edges"]]},
    }


def _evidence(e) -> dict:
    return {"memory_id": e.memory_id, "source": e.source, "stance": e.stance, "note": e.note,
            "source_type": e.source_type, "source_ref": e.source_ref, "weight": e.weight, "at": iso(e.at)}
