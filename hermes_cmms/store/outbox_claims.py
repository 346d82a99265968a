"""The vector writer's next outbox rows, claimed a scope at a time on PostgreSQL so that every
process sharing the database writes vectors, each its own scopes.

A claim is a transaction that holds the INDEXER advisory lock of each scope whose rows it took
(pg_try_advisory_xact_lock: a scope another process holds is passed over, not waited for). The
rows go when the vectors are written, in that transaction; if the process dies first, the
server ends its session, which releases the locks and keeps the rows, and another process
writes them again (by memory id: the same vectors, not second ones). Since one process at a
time writes a scope, its deletions still come before its upserts. On SQLite (one vector
writer, chosen by a lock file or a lease) a claim is the next rows, deletions first."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from sqlalchemy import Connection, delete, select, update

from . import _postgres
from .models import IndexState, Outbox

LOOK_AHEAD = 1000  # the scopes of the first this-many rows are candidates for a claim


class Claim:
    """Outbox rows one process writes vectors for; `done` or `failed` before the claim ends."""

    def __init__(self, store, conn: Connection | None, rows: list[Outbox]):
        self.store, self.rows, self._conn = store, rows, conn

    def done(self) -> None:
        if self._conn is None:
            self.store.done([row.id for row in self.rows])
        else:
            _held_alone(self._conn)
            _done(self._conn, [row.id for row in self.rows])

    def failed(self, error: str) -> None:
        if self._conn is None:
            self.store.failed([row.id for row in self.rows], error)
        else:
            _held_alone(self._conn)
            self._conn.execute(update(Outbox).where(Outbox.id.in_([row.id for row in self.rows]))
                               .values(attempts=Outbox.attempts + 1, last_error=error[:500]))


@contextmanager
def claim(store, limit: int, by_scope: bool) -> Iterator[Claim]:
    """Up to `limit` outbox rows to write vectors for: with `by_scope` (PostgreSQL), those of
    scopes no other process has claimed, held until the end of the block; else the next ones."""
    if not by_scope:
        yield Claim(store, None, store.pending(limit))
        return
    with store.read() as conn:
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{_postgres.LOCK_TIMEOUT}'")
        yield Claim(store, conn, _claimed(conn, limit))


def _claimed(conn: Connection, limit: int) -> list[Outbox]:
    ahead = conn.execute(select(Outbox.scope).order_by(Outbox.op != "delete", Outbox.id).limit(LOOK_AHEAD)).scalars()
    rows: list[Outbox] = []
    for scope in dict.fromkeys(ahead):
        if len(rows) >= limit:
            break
        key = _postgres.scope_lock(scope, _postgres.INDEXER)
        if conn.exec_driver_sql(f"SELECT pg_try_advisory_xact_lock({_postgres.SCOPE_LOCKS}, {key})").scalar():
            found = conn.execute(select(Outbox).where(Outbox.scope == scope)
                                 .order_by(Outbox.op != "delete", Outbox.id).limit(limit - len(rows)))
            rows += [Outbox.model_validate(row._mapping) for row in found]
    return rows


def _held_alone(conn: Connection) -> None:
    """Writes of a claim wait for a write across scopes (a reindex, a migration) as a scope's
    writer does (_postgres.make_engine)."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared({_postgres.WRITER_LOCK})")


def _done(conn: Connection, outbox_ids: Sequence[int]) -> None:
    conn.execute(delete(Outbox).where(Outbox.id.in_(list(outbox_ids))))
    conn.execute(update(IndexState).where(IndexState.name == "vectors").values(generation=IndexState.generation + 1))
