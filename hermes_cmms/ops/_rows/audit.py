"""The audit's SQL (ops/audit.py): the checks that are one query each, the rows the other
checks read in pages, the confidence counts, and the deletion of orphan rows."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

from sqlalchemy import Connection, case, delete, exists, func, literal, or_, select, update

from ...common import lifecycle_rules as lifecycle
from ...store._knowledge import LEARNED_RECEIPTS
from ...store.models import AuditEvent, Belief, Entity, Evidence, Fact, Link, Memory, Outbox, Relation

if TYPE_CHECKING:
    from ...store.store import Store

LEARNED_KINDS = ("fact", "preference", "decision", "skill", "belief")

_target = Memory.__table__.alias("target")
_other = Outbox.__table__.alias("other")


@dataclass(frozen=True)
class Check:
    """One exact check as SQL: the rows of `model` matching `where` are the findings."""

    name: str
    model: type
    key: object  # the column that identifies a finding
    where: tuple
    detail: tuple = ()
    key_name: str = "id"

    def select(self, scope: Optional[str], skipped: Sequence[str] = ()):
        """The findings' rows, of `scope` (None: every scope) but those of the `skipped` scopes."""
        query = select(self.key.label("key"), self.model.scope, *self.detail).where(*self.where)
        query = query if scope is None else query.where(self.model.scope == scope)
        return query.where(self.model.scope.not_in(list(skipped))) if skipped else query

    def count(self, conn: Connection, scope: Optional[str], skipped: Sequence[str] = ()) -> int:
        return conn.execute(select(func.count()).select_from(self.select(scope, skipped).subquery())).scalar_one()

    def rows(self, conn: Connection, scope: Optional[str], skipped: Sequence[str], limit: int) -> list[dict]:
        """The first `limit` findings, by key: each row's key, scope and detail columns."""
        return [dict(row._mapping) for row in
                conn.execute(self.select(scope, skipped).order_by(self.key).limit(max(0, limit)))]


def _gone(column):
    """No memory has this id."""
    return ~exists().where(Memory.id == column)


def _kept(column):
    return exists().where(Memory.id == column)


def _no_entity(column):
    return ~exists().where(Entity.id == column)


ORPHANS = (  # order matters to reindex: relations go before the entities they leave alone
    Check("fact_without_memory", Fact, Fact.memory_id, (_gone(Fact.memory_id),), key_name="memory_id"),
    Check("link_without_memory", Link, Link.memory_id, (_gone(Link.memory_id),), (Link.source_id,), "memory_id"),
    Check("link_without_source", Link, Link.memory_id, (_gone(Link.source_id),), (Link.source_id,), "memory_id"),
    Check("belief_without_memory", Belief, Belief.memory_id, (_gone(Belief.memory_id),), key_name="memory_id"),
    Check("evidence_without_belief", Evidence, Evidence.id, (_gone(Evidence.belief_id),), (Evidence.belief_id,)),
    Check("evidence_without_memory", Evidence, Evidence.id,
          (Evidence.memory_id.is_not(None), _gone(Evidence.memory_id)), (Evidence.memory_id,)),
    Check("relation_without_memory", Relation, Relation.id, (_gone(Relation.memory_id),), (Relation.memory_id,)),
    Check("relation_without_entity", Relation, Relation.id,
          (or_(_no_entity(Relation.source_id), _no_entity(Relation.target_id)),),
          (Relation.source_id, Relation.target_id)),
    Check("entity_without_relation", Entity, Entity.id,
          (~exists().where(Relation.source_id == Entity.id), ~exists().where(Relation.target_id == Entity.id)),
          (Entity.name,)),
    Check("outbox_without_memory", Outbox, Outbox.id,  # an upsert no delete follows: never applied
          (Outbox.op == "upsert", _gone(Outbox.memory_id),
           ~exists().where(_other.c.memory_id == Outbox.memory_id, _other.c.op == "delete")), (Outbox.memory_id,)),
    Check("superseded_by_missing", Memory, Memory.id,
          (Memory.superseded_by.is_not(None), ~exists().where(_target.c.id == Memory.superseded_by)),
          (Memory.superseded_by,), "memory_id"),
)


def _receipt_starts(*prefixes: str):
    """The source starts with one of `prefixes`, case-sensitively (SQLite's LIKE ignores case)."""
    return or_(*(func.substr(Memory.source, 1, len(p)) == p for p in prefixes))


RECEIPTS = (
    Check("empty_receipt", Memory, Memory.id, (func.coalesce(func.trim(Memory.source), "") == "",),
          (Memory.kind,), "memory_id"),
    Check("learned_without_link", Memory, Memory.id,
          (Memory.kind.in_(LEARNED_KINDS), _receipt_starts(*LEARNED_RECEIPTS),
           ~exists().where(Link.memory_id == Memory.id)),
          (Memory.kind, Memory.source), "memory_id"),
    Check("belief_without_row", Memory, Memory.id,  # written half: a person judges it, reindex keeps it
          (Memory.kind == "belief", ~exists().where(Belief.memory_id == Memory.id)), (Memory.source,), "memory_id"),
)

GRAPH = (
    Check("fact_without_relation", Fact, Fact.memory_id,
          (_kept(Fact.memory_id), ~exists().where(Relation.memory_id == Fact.memory_id)),
          (Fact.subject, Fact.predicate, Fact.object), "memory_id"),
    Check("relation_without_fact", Relation, Relation.id,
          (_kept(Relation.memory_id), ~exists().where(Fact.memory_id == Relation.memory_id)), (Relation.memory_id,)),
)


def lifecycle_checks(now: float, grace: float) -> tuple[Check, ...]:
    return (
        Check("unknown_state", Memory, Memory.id, (Memory.state.not_in(lifecycle.LIVE_STATES),),
              (Memory.state,), "memory_id"),
        Check("expired_not_swept", Memory, Memory.id,
              (Memory.expires_at.is_not(None), Memory.expires_at <= now - grace),
              (Memory.expires_at, (literal(now) - Memory.expires_at).label("overdue_s")), "memory_id"),
        Check("superseded_by_self", Memory, Memory.id, (Memory.superseded_by == Memory.id,), (), "memory_id"),
    )


# -- rows read in pages ---------------------------------------------------------------------

def _scoped(query, column, scope: Optional[str]):
    return query if scope is None else query.where(column == scope)


def _pages(store: "Store", query, key, size: int) -> Iterator[list]:
    """Rows of `query` in pages ordered by `key`, its first column (keyset paging: each page is
    its own read)."""
    after = None
    while True:
        page = query if after is None else query.where(key > after)
        with store.read() as conn:
            rows = conn.execute(page.order_by(key).limit(size)).all()
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def lifecycle_events(store: "Store", scope: Optional[str], size: int) -> Iterator[list]:
    """Pages of lifecycle events: id, scope, memory_id, detail."""
    query = select(AuditEvent.id, AuditEvent.scope, AuditEvent.memory_id, AuditEvent.detail).where(
        AuditEvent.action == "lifecycle")
    return _pages(store, _scoped(query, AuditEvent.scope, scope), AuditEvent.id, size)


def supersede_links(store: "Store", scope: Optional[str], size: int) -> Iterator[list]:
    """Pages of the memories superseded by a memory that is itself superseded (only these can
    be in a cycle): seq, id, scope, superseded_by."""
    query = (select(Memory.seq, Memory.id, Memory.scope, Memory.superseded_by)
             .join(_target, _target.c.id == Memory.superseded_by)
             .where(_target.c.superseded_by.is_not(None), Memory.superseded_by != Memory.id))
    return _pages(store, _scoped(query, Memory.scope, scope), Memory.seq, size)


def confidences(store: "Store", scope: Optional[str], size: int) -> Iterator[list]:
    """Pages of seq, id, scope, kind, tier, confidence, reliability, access_count, superseded_by."""
    query = select(Memory.seq, Memory.id, Memory.scope, Memory.kind, Memory.tier, Memory.confidence,
                   Memory.reliability, Memory.access_count, Memory.superseded_by)
    return _pages(store, _scoped(query, Memory.scope, scope), Memory.seq, size)


def supersede_events(store: "Store", memory_ids: Sequence[str]) -> list:
    """The supersede events of these memories, oldest first: memory_id, detail."""
    with store.read() as conn:
        return conn.execute(select(AuditEvent.memory_id, AuditEvent.detail).where(
            AuditEvent.action == "supersede", AuditEvent.memory_id.in_(list(memory_ids))).order_by(AuditEvent.id)).all()


def relations_with_facts(store: "Store", scope: Optional[str], size: int) -> Iterator[list]:
    """Pages of relations beside their fact: id, scope, memory_id, predicate, source_key,
    target_key, fact_scope, subject, fact_predicate, object."""
    source, target = Entity.__table__.alias("source"), Entity.__table__.alias("target_entity")
    query = (select(Relation.id, Relation.scope, Relation.memory_id, Relation.predicate,
                    source.c.key.label("source_key"), target.c.key.label("target_key"),
                    Fact.scope.label("fact_scope"), Fact.subject, Fact.predicate.label("fact_predicate"), Fact.object)
             .join(Fact, Fact.memory_id == Relation.memory_id)
             .join(source, source.c.id == Relation.source_id)
             .join(target, target.c.id == Relation.target_id))
    return _pages(store, _scoped(query, Relation.scope, scope), Relation.id, size)


def confidence_counts(store: "Store", scope: Optional[str], buckets: int, low: float, most_low: int
                      ) -> tuple[dict[int, int], list[str], int]:
    """How many memories fall in each of `buckets` equal parts of the confidence range (a value
    outside 0..1 in the nearest), the ids of the first `most_low` current ones below `low`
    (least sure first), and how many memories there are: all counted in SQL."""
    bucket = case(*((Memory.confidence < (n + 1) / buckets, n) for n in range(buckets - 1)),
                  else_=buckets - 1).label("bucket")
    with store.read() as conn:
        counts = dict(conn.execute(_scoped(select(bucket, func.count()), Memory.scope, scope)
                                   .where(Memory.confidence.is_not(None)).group_by(bucket)).all())
        found = conn.execute(_scoped(select(Memory.id), Memory.scope, scope)
                             .where(Memory.confidence < low, Memory.superseded_by.is_(None))
                             .order_by(Memory.confidence, Memory.id).limit(most_low)).scalars().all()
        total = conn.execute(_scoped(select(func.count()).select_from(Memory), Memory.scope, scope)).scalar_one()
    return counts, list(found), total


def delete_orphans(store: "Store", scope: Optional[str], skipped: Sequence[str]) -> dict[str, int]:
    """Delete every orphan row (a dangling superseded_by is cleared instead), one transaction;
    the rows of the `skipped` scopes are left alone."""
    done, skipped = {}, list(skipped)
    with store.writing() as conn:
        for check in ORPHANS:
            where = (*check.where, *(() if scope is None else (check.model.scope == scope,)),
                     *((check.model.scope.not_in(skipped),) if skipped else ()))
            if check.model is Memory:
                statement = update(Memory).where(*where).values(superseded_by=None, updated_at=time.time())
            else:
                statement = delete(check.model).where(*where)
            done[check.name] = conn.execute(statement).rowcount
    return done


def indexed_scopes(store: "Store") -> list[str]:
    """The scopes holding a memory whose vectors are written (none of its rows waits in the
    outbox): those whose collections the vector index must have (what `doctor` reads)."""
    queued = exists().where(Outbox.memory_id == Memory.id)
    with store.read() as conn:
        return list(conn.execute(select(Memory.scope).where(~queued).distinct()).scalars())
