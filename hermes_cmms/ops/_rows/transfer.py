"""The SQL of export and import (ops/transfer.py): each kind's rows of a scope read in one
snapshot, the owners of memory ids, and the rows an import writes (but its memories: the retain
hook writes those, through Store.add). A kind is described by
ops/_transfer_records.Kind (its `name`, `model`, `columns`, `key`, `count_key`, `key_of`)."""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Sequence

from sqlalchemy import Connection, and_, false, func, insert, or_, select, tuple_
from sqlalchemy.exc import SQLAlchemyError

from ...common.errors import StoreUnavailable
from ...store import graph_rows
from ...store._forget import forgetting
from ...store.models import AuditEvent, Belief, ConversationSession, Evidence, Fact, Link, Memory

if TYPE_CHECKING:
    from ...store.store import Store


def _export_queries(scope: str, kinds: dict) -> dict:
    """The select of each kind's rows of `scope`, in file order. Rows pointing at a memory the
    scope does not hold (orphans, which `hermes-cmms audit` reports) are left out."""
    ids = select(Memory.id).where(Memory.scope == scope)

    def columns(name):
        kind = kinds[name]
        return select(*(kind.model.__table__.c[column] for column in kind.columns))

    by_seq = lambda name, model: (columns(name).join(Memory, Memory.id == model.memory_id)  # noqa: E731
                                  .where(model.scope == scope, Memory.scope == scope).order_by(Memory.seq))
    return {
        "session": columns("session").where(ConversationSession.scope == scope)
        .order_by(ConversationSession.started_at, ConversationSession.session_id),
        "memory": columns("memory").where(Memory.scope == scope).order_by(Memory.seq),
        "fact": by_seq("fact", Fact),
        "belief": by_seq("belief", Belief),
        "evidence": columns("evidence").where(Evidence.scope == scope, Evidence.belief_id.in_(ids),
                                              or_(Evidence.memory_id.is_(None), Evidence.memory_id.in_(ids)))
        .order_by(Evidence.id),
        "link": columns("link").where(Link.scope == scope, Link.memory_id.in_(ids), Link.source_id.in_(ids))
        .order_by(Link.memory_id, Link.source_id),
        "audit": columns("audit").where(AuditEvent.scope == scope).order_by(AuditEvent.id),
    }


def exported(store: "Store", scope: str, kinds: dict, chunk: int) -> Iterator:
    """First {kind name: how many rows}, then (kind name, row mapping) for every row of `scope`,
    in file order, all read in one snapshot (also on PostgreSQL). A scope being forgotten
    reads as empty."""
    queries = _export_queries(scope, kinds)
    with store.snapshot() as conn:
        if forgetting(conn, scope):  # being forgotten: nothing of it is read out
            queries = {name: query.where(false()) for name, query in queries.items()}
        yield {name: conn.execute(select(func.count()).select_from(query.subquery())).scalar_one()
               for name, query in queries.items()}
        for name, query in queries.items():
            for row in conn.execute(query.execution_options(yield_per=chunk)):
                yield name, row._mapping


def owners(conn: Connection, ids: Sequence[str], chunk: int) -> dict[str, str]:
    """The scope of each of these memory ids that is stored."""
    ids, found = list(ids), {}
    for start in range(0, len(ids), chunk):
        found.update(conn.execute(select(Memory.id, Memory.scope).where(Memory.id.in_(ids[start:start + chunk]))).all())
    return found


def contents(conn: Connection, scope: str, ids: Sequence[str], chunk: int) -> dict[str, str]:
    """The text of each of these memory ids that `scope` holds (another scope's: none), as an
    export writes it: `<role>: <text>` for a message."""
    ids, found = list(ids), {}
    for start in range(0, len(ids), chunk):
        found.update((memory_id, f"{role}: {content}" if role else content) for memory_id, role, content in conn.execute(
            select(Memory.id, Memory.role, Memory.content).where(
                Memory.scope == scope, Memory.id.in_(ids[start:start + chunk]))))
    return found


@contextmanager
def writing(store: "Store") -> Iterator[Connection]:
    """One write transaction of an import; a failure as `failing` says."""
    with failing(), store.writing() as conn:
        yield conn


@contextmanager
def failing() -> Iterator[None]:
    """A failure of the store or of its SQL in an import's write (its own transaction, or the
    retain hook's) raised as StoreUnavailable saying, in one line, what failed and how (its
    cause is the original error)."""
    try:
        yield
    except (SQLAlchemyError, StoreUnavailable) as exc:
        raise StoreUnavailable(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc


def not_stored(conn: Connection, kind, rows: list[dict], scope: str) -> list[dict]:
    """The rows whose key is not stored yet (ids are unique store-wide; sessions per scope)."""
    columns = [kind.model.__table__.c[name] for name in kind.key]
    query = select(*columns).where(tuple_(*columns).in_([kind.key_of(row) for row in rows])
                                   if len(columns) > 1 else columns[0].in_([row[kind.key[0]] for row in rows]))
    if kind.name == "session":
        query = query.where(ConversationSession.scope == scope)
    stored = {tuple(row) for row in conn.execute(query)}
    return [row for row in rows if kind.key_of(row) not in stored]


def stored_copies(conn: Connection, kind, keys: set[tuple], scope: str) -> Counter:
    """How many rows of a kind without a key (evidence, audit events) are stored in `scope` with
    each of these count keys; looked up by their belief (evidence) or time (audit events)."""
    model = kind.model
    near = (model.belief_id.in_({key[0] for key in keys}) if kind.name == "evidence"
            else model.at.in_({key[0] for key in keys}))
    columns = [model.__table__.c[name] for name in kind.count_key]
    return Counter(tuple(row) for row in conn.execute(select(*columns).where(and_(model.scope == scope, near))))


def add(conn: Connection, kind, rows: list[dict], scope: str, now: float) -> None:
    """Insert the rows (no memory's: the retain hook writes those, Store.add); a fact's graph
    rows are written with them."""
    conn.execute(insert(kind.model), rows)
    if kind.name == "fact":
        graph_rows.add_facts(conn, rows, now)
