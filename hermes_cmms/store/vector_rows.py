"""What the vector audit reads and queues in SQL (ops/_audit_vectors.py): each scope's memory
ids a page at a time, the outbox rows queued for them, and the repairs it queues."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Sequence

from sqlalchemy import Connection, func, insert, select

from .models import AuditEvent, Memory, Outbox

if TYPE_CHECKING:
    from .store import Store

QUEUE_BATCH = 500  # outbox rows queued per transaction


def known_scopes(store: "Store") -> list[str]:
    """Every scope a memory, an outbox row or an audit event names."""
    found: set[str] = set()
    with store.read() as conn:
        for table in (Memory, Outbox, AuditEvent):
            found.update(s for s in conn.execute(select(table.scope).distinct()).scalars() if s)
    return sorted(found)


def _queued(conn: Connection, ids: Sequence[str], op: str) -> set[str]:
    return set(conn.execute(select(Outbox.memory_id).where(Outbox.op == op, Outbox.memory_id.in_(list(ids)))).scalars())


def _kept(conn: Connection, scope: str, ids: Sequence[str]) -> set[str]:
    return set(conn.execute(select(Memory.id).where(Memory.id.in_(list(ids)), Memory.scope == scope)).scalars())


def memory_page(store: "Store", scope: str, after: int, limit: int) -> tuple[list[tuple[int, str]], set[str]]:
    """The scope's (seq, id) after `after`, `limit` at most, and which of them have an upsert
    queued, read in one transaction."""
    with store.read() as conn:
        rows = [(row.seq, row.id) for row in conn.execute(select(Memory.seq, Memory.id).where(
            Memory.scope == scope, Memory.seq > after).order_by(Memory.seq).limit(limit))]
        queued = _queued(conn, [i for _, i in rows], "upsert") if rows else set()
    return rows, queued


def still_stored(store: "Store", scope: str, ids: Sequence[str]) -> list[str]:
    """The `ids` still stored in `scope` with no upsert queued, read again."""
    if not ids:
        return []
    with store.read() as conn:
        queued, kept = _queued(conn, ids, "upsert"), _kept(conn, scope, ids)
    return [i for i in ids if i in kept and i not in queued]


def not_stored(store: "Store", scope: str, ids: Sequence[str]) -> list[str]:
    """The `ids` that are no memory of `scope` and have no delete queued."""
    with store.read() as conn:
        kept, queued = _kept(conn, scope, ids), _queued(conn, ids, "delete")
    return [i for i in ids if i not in kept and i not in queued]


def outbox_lag(store: "Store", scope: Optional[str] = None) -> tuple[int, Optional[float]]:
    """How many outbox rows wait (of `scope`, or all), and the oldest one's time."""
    query = select(func.count(), func.min(Outbox.created_at))
    with store.read() as conn:
        return tuple(conn.execute(query if scope is None else query.where(Outbox.scope == scope)).one())


def queue(store: "Store", work: Sequence[tuple[str, str, str]]) -> None:
    """Queue (memory id, scope, op) rows in the outbox, QUEUE_BATCH to a transaction."""
    now = time.time()
    rows = [{"memory_id": m, "scope": s, "op": op, "created_at": now} for m, s, op in work]
    for start in range(0, len(rows), QUEUE_BATCH):
        with store.writing() as conn:
            conn.execute(insert(Outbox), rows[start:start + QUEUE_BATCH])
