"""What the knowledge layer holds about memories being deleted: what was learned only from
them, and their links, beliefs, evidence and graph edges."""
from __future__ import annotations

import json

from sqlalchemy import Connection, and_, delete, or_, select

from ._rows import _by_ids
from .models import Belief, Entity, Evidence, Link, Memory, Relation


LEARNED_RECEIPTS = ("learn:", "extract:")  # the receipts learning writes; any other is a person's


def _learned_only_from(conn: Connection, scope: str, ids: set[str]) -> list[Memory]:
    """The memories learned from `ids` (links) that were learned from nothing else and that
    nobody stored or repeated on their own: a memory someone remembered explicitly stays."""
    derived = {row[0] for row in conn.execute(select(Link.memory_id).where(Link.source_id.in_(list(ids))))} - ids
    if not derived:
        return []
    other = {row[0] for row in conn.execute(select(Link.memory_id).where(
        Link.memory_id.in_(list(derived)), Link.source_id.not_in(list(ids))))}
    return [m for m in _by_ids(conn, scope, derived - other).values() if _only_learned(m)]


def _only_learned(memory: Memory) -> bool:
    """Whether learning alone wrote this memory and every repeat of it."""
    receipts = [memory.source, *(r.get("source") or "" for r in json.loads(memory.receipts or "[]"))]
    return all(receipt.startswith(LEARNED_RECEIPTS) for receipt in receipts)


def knowledge_clauses(scope: str, ids: list[str]) -> list[tuple[type, object]]:
    """(table, where) of the rows the knowledge layer holds about the memories `ids` of `scope`:
    their links, belief rows and evidence, and the graph edges they are the provenance of. The
    one reading a forget deletes (_drop_knowledge) and its preview counts."""
    return [(Link, or_(Link.memory_id.in_(ids), Link.source_id.in_(ids))),
            (Belief, Belief.memory_id.in_(ids)),
            (Evidence, or_(Evidence.belief_id.in_(ids), Evidence.memory_id.in_(ids),
                           and_(Evidence.source_ref.in_(ids), Evidence.scope == scope))),  # a marker naming a
            (Relation, Relation.memory_id.in_(ids))]  # merge; another scope's outside source naming the same id stays


def orphaned_entities(conn: Connection, ids: list[str]) -> list[str]:
    """The entities whose every edge comes from the memories `ids`: none is left once they go."""
    ends = conn.execute(select(Relation.source_id, Relation.target_id).where(Relation.memory_id.in_(ids))).all()
    touched = list({entity for pair in ends for entity in pair})
    if not touched:
        return []
    others = Relation.memory_id.not_in(ids)
    still = {row[0] for row in conn.execute(select(Relation.source_id).where(Relation.source_id.in_(touched), others))}
    still |= {row[0] for row in conn.execute(select(Relation.target_id).where(Relation.target_id.in_(touched), others))}
    return [e for e in touched if e not in still]


def _drop_knowledge(conn: Connection, scope: str, ids: list[str]) -> None:
    """Remove what the knowledge layer holds about these (deleted) memories (knowledge_clauses),
    with every entity left without an edge."""
    orphans = orphaned_entities(conn, ids)
    for table, clause in knowledge_clauses(scope, ids):
        conn.execute(delete(table).where(clause))
    if orphans:
        conn.execute(delete(Entity).where(Entity.id.in_(orphans)))
