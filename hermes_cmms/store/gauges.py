"""What the Prometheus gauges read from SQL (ops/metrics.py): counts by tier and state, the
outbox's lag, the last full audit."""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

from sqlalchemy import func, select

from ._forget import forgetting
from .models import AuditEvent, Memory, Outbox

if TYPE_CHECKING:
    from .store import Store


class Counts(NamedTuple):
    """Of the whole store, or of one scope: `gone` when the scope is being forgotten (its
    memories then read as none), (tier, state, count) rows, outbox rows and the oldest one's time."""

    gone: bool
    by_state: list
    pending: int
    oldest: Optional[float]


def counts(store: "Store", scope: Optional[str] = None) -> Counts:
    def in_scope(query, table):
        return query if scope is None else query.where(table.scope == scope)

    with store.read() as conn:
        gone = scope is not None and forgetting(conn, scope)
        by_state = [] if gone else [tuple(row) for row in conn.execute(in_scope(
            select(Memory.tier, Memory.state, func.count()), Memory).group_by(Memory.tier, Memory.state))]
        pending, oldest = conn.execute(in_scope(select(func.count(), func.min(Outbox.created_at)), Outbox)).one()
    return Counts(gone, by_state, pending, oldest)


def last_full_audit(store: "Store") -> Optional[tuple[float, str]]:
    """(when, detail) of the newest audit of every scope, by any process; None if none ran."""
    with store.read() as conn:
        last = conn.execute(select(AuditEvent.at, AuditEvent.detail).where(
            AuditEvent.action == "audit", AuditEvent.scope.is_(None)).order_by(AuditEvent.id.desc()).limit(1)).first()
    return (last.at, last.detail) if last else None
