"""What the verbs answer: plain values every door prints, never a database row.

A memory is answered as an `Item`: its stored JSON already read (tags, detail), its fact's parts
beside it, the times as Unix times. `Item.as_dict` is the one JSON shape of a memory at every
door (the Hermes tools, the MCP tools, the CLI): each field has one name and one meaning
everywhere; a door picks which fields it answers (`HIT_KEYS`, `ITEM_KEYS`) and may add its own
beside them. `date` is the Hermes tools' name for `created_at` (the same ISO time, UTC).
`reinforced` is never a field of a memory: it is a write's answer (`Stored`); how often a memory
was reinforced is `reinforcements`. The transfer file keeps its own stored format (ops/transfer.py).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Sequence


def iso(ts: float) -> str:
    """A Unix time as the doors show it: ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Item:
    """A memory as a verb answers it (search and similarity when a search found it)."""

    id: str
    scope: str
    content: str
    kind: str
    tier: str
    role: Optional[str]
    tags: tuple[str, ...]
    source: str
    session_id: Optional[str]
    confidence: float
    state: str
    superseded_by: Optional[str]
    reinforcements: int
    created_at: float
    updated_at: float
    expires_at: Optional[float] = None
    pinned: bool = False
    corrected_at: Optional[float] = None
    speaker: Optional[str] = None
    turn: Optional[int] = None  # a message's turn in its session
    detail: dict = field(default_factory=dict)  # a learned item's parts (decision, skill, ...)
    fact: Optional[tuple[str, str, str]] = None  # (subject, predicate, object) of a fact
    score: Optional[float] = None  # a search's fused score
    similarity: Optional[float] = None  # a search by meaning's cosine similarity

    def as_dict(self, keys: Sequence[str] = (), **extra) -> dict:
        """The fields `keys` (default ITEM_KEYS), then the fact's subject, predicate and object,
        then the score or similarity a search gave it (5 decimals), then `extra`."""
        item = {key: FIELDS[key](self) for key in (keys or ITEM_KEYS)}
        if self.fact is not None:
            item["subject"], item["predicate"], item["object"] = self.fact
        if self.score is not None:
            item["score"] = round(self.score, 5)
        if self.similarity is not None:
            item["similarity"] = round(self.similarity, 5)
        return {**item, **extra}


FIELDS: dict[str, Callable[[Item], Any]] = {
    "id": lambda m: m.id, "content": lambda m: m.content, "kind": lambda m: m.kind,
    "tier": lambda m: m.tier, "role": lambda m: m.role, "tags": lambda m: list(m.tags),
    "source": lambda m: m.source, "session_id": lambda m: m.session_id,
    "confidence": lambda m: m.confidence, "state": lambda m: m.state,
    "superseded_by": lambda m: m.superseded_by, "reinforcements": lambda m: m.reinforcements,
    "created_at": lambda m: iso(m.created_at), "date": lambda m: iso(m.created_at),
    "expires_at": lambda m: iso(m.expires_at) if m.expires_at else None,
    "pinned": lambda m: m.pinned, "corrected_at": lambda m: iso(m.corrected_at) if m.corrected_at else None,
}
HIT_KEYS = ("id", "content", "kind", "role", "session_id", "source", "date")  # Hermes tools, CLI search
ITEM_KEYS = ("id", "content", "kind", "tier", "role", "tags", "source", "session_id", "confidence",
             "state", "superseded_by", "reinforcements", "created_at", "expires_at")  # MCP tools


@dataclass(frozen=True)
class Stored:
    """A write's answer: the memory's id (the earlier one's, when this write repeated it)."""

    id: str
    reinforced: bool  # an existing memory was reinforced instead of inserting
    tier: str
    kind: str
    supersedes: tuple[str, ...] = ()  # the ids this write replaced


@dataclass(frozen=True)
class Event:
    """One entry of the audit trail, its detail read; `snapshot` (a forget's copy of the row,
    while the snapshot days keep it) only for who asks for it."""

    at: float
    action: str
    actor: str
    scope: Optional[str]
    memory_id: Optional[str]
    detail: dict
    snapshot: Optional[dict] = None

    def as_dict(self) -> dict:
        """As the doors list it: the time in ISO, and whether a snapshot is kept."""
        return {"at": iso(self.at), "action": self.action, "actor": self.actor, "memory_id": self.memory_id,
                "detail": self.detail, "snapshot_kept": self.snapshot is not None}


# -- the receipt of a write, as the CMMS 0.11 contracts name it (every door answers it) ---------

VERIFICATION = {"candidate": "candidate", "validated": "validated", "active": "trusted", "stale": "deprecated",
                "archived": "archived", "forgotten": "archived"}  # our state -> the contract's status


def verification_status(item) -> str:
    """The contract's verification_status of a memory (or a belief's record: anything with a
    `state` and a `superseded_by`): a superseded one is deprecated."""
    return "deprecated" if item.superseded_by else VERIFICATION.get(item.state, "unverified")


def receipt_response(item, memory_type: str, created_by: str) -> dict:
    """The contract's `receipt_response` of one write of `item` (an Item, or a stored row): a
    fresh id naming this operation (it is not stored; the memory's own id and audit trail are),
    the kind of item, its stored receipt, who wrote it (`mcp:<tool>`), when, how sure, and its
    verification status."""
    return {"id": uuid.uuid4().hex, "memory_type": memory_type, "source": item.source,
            "created_by": created_by, "timestamp": iso(item.updated_at), "confidence": item.confidence,
            "verification_status": verification_status(item), "memory_id": item.id}
