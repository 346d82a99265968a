"""The one JSON shape of a memory at every door: the Hermes tools, the MCP tools and the CLI.

Each field has one name and one meaning everywhere; a door picks which fields it answers
(`HIT_KEYS`, `ITEM_KEYS`) and may add its own beside them (a `score`, a `similarity`).
`date` is the Hermes tools' name for `created_at` (the same ISO time, UTC). `reinforced`
is never a field of a memory: it is a write's answer (true when the write repeated a stored
memory); how often a memory was reinforced is `reinforcements`. The transfer file keeps its
own stored format (ops/transfer.py).
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Optional, Sequence

from ..store.models import Memory
from .rank import Hit


def iso(ts: float) -> str:
    """A Unix time as the doors show it: ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


FIELDS: dict[str, Callable[[Memory], Any]] = {
    "id": lambda m: m.id, "content": lambda m: m.content, "kind": lambda m: m.kind,
    "tier": lambda m: m.tier, "role": lambda m: m.role, "tags": lambda m: json.loads(m.tags or "[]"),
    "source": lambda m: m.source, "session_id": lambda m: m.session_id,
    "confidence": lambda m: m.confidence, "state": lambda m: m.state,
    "superseded_by": lambda m: m.superseded_by, "reinforcements": lambda m: m.access_count,
    "created_at": lambda m: iso(m.created_at), "date": lambda m: iso(m.created_at),
    "expires_at": lambda m: iso(m.expires_at) if m.expires_at else None,
    "pinned": lambda m: bool(m.pinned), "corrected_at": lambda m: iso(m.corrected_at) if m.corrected_at else None,
}
HIT_KEYS = ("id", "content", "kind", "role", "session_id", "source", "date")  # Hermes tools, CLI search
ITEM_KEYS = ("id", "content", "kind", "tier", "role", "tags", "source", "session_id", "confidence",
             "state", "superseded_by", "reinforcements", "created_at", "expires_at")  # MCP tools


def memory_dict(memory: Memory, keys: Sequence[str] = ITEM_KEYS,
                facts: Optional[Mapping[str, tuple]] = None, **extra) -> dict:
    """`memory` as a JSON object of the fields `keys`, then its fact's subject, predicate and
    object when `facts` (Store.facts) holds it, then `extra`."""
    item = {key: FIELDS[key](memory) for key in keys}
    if facts and memory.id in facts:
        item["subject"], item["predicate"], item["object"] = facts[memory.id]
    return {**item, **extra}


def hit_dict(hit: Hit, keys: Sequence[str] = HIT_KEYS, facts: Optional[Mapping[str, tuple]] = None) -> dict:
    """A search hit: its memory's fields `keys`, then its `score` (5 decimals)."""
    return memory_dict(hit.memory, keys, facts, score=round(hit.score, 5))


# -- the CMMS 0.11 contracts' shapes (docs/contracts/cmms-0.11/common.schema.json) --------------

VERIFICATION = {"candidate": "candidate", "validated": "validated", "active": "trusted", "stale": "deprecated",
                "archived": "archived", "forgotten": "archived"}  # our state -> the contract's status


def verification_status(memory: Memory) -> str:
    """The contract's verification_status of a memory (or a belief's record: anything with a
    `state` and a `superseded_by`): a superseded one is deprecated."""
    return "deprecated" if memory.superseded_by else VERIFICATION.get(memory.state, "unverified")


def fact_response(memory: Memory, facts: Mapping[str, tuple]) -> dict:
    """A stored fact as the contract's `fact_response`: its id, subject, predicate, object,
    confidence, receipt (`source`) and times; `facts` is Store.facts of it."""
    subject, predicate, obj = facts.get(memory.id, ("", "", memory.content))
    return {"id": memory.id, "subject": subject, "predicate": predicate, "object": obj,
            "confidence": memory.confidence, "source": memory.source,
            "created_at": iso(memory.created_at), "updated_at": iso(memory.updated_at)}


def receipt_response(memory: Memory, memory_type: str, created_by: str) -> dict:
    """The contract's `receipt_response` of one write: a fresh id naming this operation (it is not
    stored; the memory's own id and audit trail are), the kind of item, its stored receipt, who
    wrote it (`mcp:<tool>`), when, how sure, and its verification status."""
    return {"id": uuid.uuid4().hex, "memory_type": memory_type, "source": memory.source,
            "created_by": created_by, "timestamp": iso(memory.updated_at), "confidence": memory.confidence,
            "verification_status": verification_status(memory), "memory_id": memory.id}


DECISION_PARTS = ("choice", "context", "reason")  # a learned decision's parts (Memory.detail) shown


def decision_response(memory: Memory) -> dict:
    """A stored decision as get_context shows it: its id, text, the parts it was learned with
    (choice, context, reason: those known), receipt, confidence and time."""
    parts = json.loads(memory.detail or "{}")
    return {"id": memory.id, "content": memory.content,
            **{name: parts[name] for name in DECISION_PARTS if isinstance(parts.get(name), str) and parts[name]},
            "source": memory.source, "confidence": memory.confidence, "created_at": iso(memory.created_at)}
