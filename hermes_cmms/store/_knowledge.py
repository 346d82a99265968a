"""What the knowledge layer holds about memories being deleted: what was learned only from
them, and their links, beliefs, evidence and graph edges."""
from __future__ import annotations

import json

from sqlalchemy import Connection, delete, or_, select

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


def _drop_knowledge(conn: Connection, ids: list[str]) -> None:
    """Remove what the knowledge layer holds about these (deleted) memories: their links,
    belief rows and evidence, and the graph edges they are the provenance of, with every
    entity left without an edge."""
    conn.execute(delete(Link).where(or_(Link.memory_id.in_(ids), Link.source_id.in_(ids))))
    conn.execute(delete(Belief).where(Belief.memory_id.in_(ids)))
    conn.execute(delete(Evidence).where(or_(Evidence.belief_id.in_(ids), Evidence.memory_id.in_(ids),
                                            Evidence.source_ref.in_(ids))))  # a marker naming a merge
    ends = conn.execute(select(Relation.source_id, Relation.target_id).where(Relation.memory_id.in_(ids))).all()
    if ends:
        conn.execute(delete(Relation).where(Relation.memory_id.in_(ids)))
        touched = list({entity for pair in ends for entity in pair})
        still = {row[0] for row in conn.execute(select(Relation.source_id).where(Relation.source_id.in_(touched)))}
        still |= {row[0] for row in conn.execute(select(Relation.target_id).where(Relation.target_id.in_(touched)))}
        conn.execute(delete(Entity).where(Entity.id.in_([e for e in touched if e not in still])))
