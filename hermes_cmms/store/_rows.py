"""Row helpers every part of the store shares: memories read back, audit events, ids to rows."""
from __future__ import annotations

import json
from typing import Optional

from sqlalchemy import Connection, insert, select

from .models import AuditEvent, Memory, Outbox
from ..redact import redact_text
from ..common.text import map_strings


# statements made once: each execution then skips building them and their cache key
INSERT_MEMORY, INSERT_OUTBOX, INSERT_EVENT = insert(Memory), insert(Outbox), insert(AuditEvent)


def _memory(row) -> Memory:
    """A Memory from a row we wrote ourselves: no re-validation needed."""
    return Memory.model_construct(**row._mapping)


def _event(at: float, action: str, actor: str, scope: Optional[str], memory_id: Optional[str],
           snapshot: Optional[str] = None, **detail) -> dict:
    """An audit_log row, its actor and detail redacted (a tool error may echo an argument). The
    snapshot is not: it is a stored memory, redacted when it was written."""
    return {"at": at, "action": action, "actor": redact_text(actor or ""), "scope": scope, "memory_id": memory_id,
            "detail": json.dumps(map_strings(detail, redact_text), ensure_ascii=False, default=str),
            "snapshot": snapshot}


def _redact_item(item) -> None:
    """The store's own guard: a NewMemory's text fields pass the built-in redactor here unless
    admission (MemoryService._retain) already ran it; role, kind and speaker always do (they are short)."""
    item.role = redact_text(item.role) if item.role else item.role
    item.kind = redact_text(item.kind)
    item.speaker = redact_text(item.speaker) if item.speaker else item.speaker
    if item.redacted:
        return
    item.content, item.source = redact_text(item.content), redact_text(item.source or "")
    item.tags = tuple(redact_text(tag) for tag in item.tags)
    item.detail = map_strings(item.detail, redact_text) if item.detail else item.detail
    item.fact = tuple(redact_text(part) for part in item.fact) if item.fact else item.fact
    item.belief = map_strings(item.belief, redact_text) if item.belief else item.belief
    item.evidence = tuple(map_strings(dict(e), redact_text) for e in item.evidence)
    item.redacted = True


def _move(at: float, memory: Memory, state: str, why: str) -> dict:
    """The audit row of a lifecycle transition."""
    return _event(at, "lifecycle", "cmms", memory.scope, memory.id, state_from=memory.state,
                  state_to=state, reason=why)


def _record(conn: Connection, events: list[dict]) -> None:
    if events:
        conn.execute(INSERT_EVENT, events)


def _by_ids(conn: Connection, scope: Optional[str], ids) -> dict[str, Memory]:
    """Rows by id, kept only if in `scope` (None: any). The scope is checked here, not in SQL:
    a scope filter beside three or more ids makes SQLite scan the whole scope."""
    ids = list(ids)
    found = {}
    for start in range(0, len(ids), 500):
        for row in conn.execute(select(Memory).where(Memory.id.in_(ids[start:start + 500]))):
            if scope is None or row.scope == scope:
                found[row.id] = _memory(row)
    return found


def _add_rows(conn: Connection, items, now: float) -> list[str]:
    """Imported memories (NewMemory.row): the rows whose id is not stored inserted, with their
    outbox rows; each item's `id` set and `present` when it was stored already; the ids inserted."""
    stored = set(conn.execute(select(Memory.id).where(Memory.id.in_([item.row["id"] for item in items]))).scalars())
    for item in items:
        item.id, item.present = item.row["id"], item.row["id"] in stored
    fresh = [item.row for item in items if not item.present]
    if fresh:
        conn.execute(INSERT_MEMORY, fresh)
        conn.execute(INSERT_OUTBOX, [{"memory_id": row["id"], "scope": row["scope"], "op": "upsert",
                                       "created_at": now} for row in fresh])
    return [row["id"] for row in fresh]
