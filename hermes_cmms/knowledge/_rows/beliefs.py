"""The SQL of beliefs (knowledge/beliefs.py, knowledge/_reflect.py): which beliefs a filter
selects, their rows and evidence rows, and the evidence, archive and link rows a resolution
writes. A selection is a query object the functions here build and run; the knowledge modules
only pass it along."""
from __future__ import annotations

from typing import Optional, Sequence

from sqlalchemy import Connection, exists, func, insert, or_, select, update

from ...store.models import Belief, Evidence, Forgetting, Link, Memory
from ...store.store import filtered

DECLARED = "belief"  # source_type of evidence naming another belief that contradicts this one
SETTLED = "settled"  # marker row: the contest with the belief it names (memory_id) was settled by a merge
MERGED = "merged"  # marker row: this belief was merged (resolve_conflict) from the belief it names
MARKERS = (SETTLED, MERGED)  # rows of the evidence table that are links, not evidence
CHUNK = 500


def query(scope: str):
    """Every belief of the scope (none while it is being forgotten): its memory columns and its
    proposition."""
    return (select(*Memory.__table__.columns, Belief.proposition_key, Belief.topic, Belief.polarity,
                   Belief.creator)
            .join(Belief, Belief.memory_id == Memory.id).where(Belief.scope == scope, Memory.scope == scope,
                                                                ~exists().where(Forgetting.scope == scope)))


def current(q):
    """`q` narrowed to current beliefs (neither superseded nor archived)."""
    return q.where(Memory.superseded_by.is_(None), Memory.state != "archived")


def with_id(q, belief_id: str):
    return q.where(Memory.id == belief_id)


def among(q, ids: Sequence[str]):
    return q.where(Memory.id.in_(list(ids)))


def with_keys(q, keys: Sequence[str]):
    return q.where(Belief.proposition_key.in_(list(keys)))


def holding(scope: str, key: str, polarity: int):
    """The newest current belief of the scope with this proposition and polarity."""
    return current(query(scope)).where(Belief.proposition_key == key, Belief.polarity == polarity) \
        .order_by(Memory.seq.desc()).limit(1)


def oldest_first(q):
    return q.order_by(Memory.seq)


def rows(conn: Connection, scope: str, q) -> list[tuple[dict, list]]:
    """The beliefs `q` selects, each (its row, its evidence rows oldest first, markers too)."""
    found = [(dict(row._mapping), []) for row in conn.execute(q)]
    by_id = {row["id"]: evidence for row, evidence in found}
    ids = list(by_id)
    for start in range(0, len(ids), CHUNK):
        for e in conn.execute(select(Evidence).where(Evidence.scope == scope,
                                                     Evidence.belief_id.in_(ids[start:start + CHUNK]))
                              .order_by(Evidence.id)):
            by_id[e.belief_id].append(e)
    return found


def present(conn: Connection, scope: str, ids: Sequence[str]) -> set[str]:
    """The `ids` that are memories of the scope."""
    ids, found = list(ids), set()
    for start in range(0, len(ids), CHUNK):
        found |= {i for i, s in conn.execute(select(Memory.id, Memory.scope).where(
            Memory.id.in_(ids[start:start + CHUNK]))) if s == scope}
    return found


# -- filters --------------------------------------------------------------------------------------

def narrowed(scope: str, state: Optional[str], min_confidence: Optional[float], tags: tuple[str, ...],
             source: Optional[str]):
    """The scope's beliefs narrowed by state (a lifecycle state, "superseded" or "contested"),
    confidence, tags and receipt prefix (each checked by the caller)."""
    q = filtered(query(scope), None, tags)
    if state == "superseded":
        q = q.where(Memory.superseded_by.is_not(None))
    elif state == "contested":
        q = current(q).where(_contradicted(scope))
    elif state is not None:
        q = q.where(Memory.state == state, Memory.superseded_by.is_(None))
    if min_confidence is not None:
        q = q.where(Memory.confidence >= min_confidence)
    return q.where(Memory.source.startswith(source, autoescape=True)) if source is not None else q


def coarse_narrowed(scope: str, q, lifecycle_state: Optional[str], creator: Optional[str],
                    cited: Optional[tuple[str, Sequence[str]]]):
    """`q` narrowed by the contract's lifecycle state, the creator (whole or up to a colon) and
    a cited source: (a memory id, the outside references it may be written as)."""
    if lifecycle_state in ("active", "contradicted"):
        contested = _contradicted(scope)
        q = current(q).where(contested if lifecycle_state == "contradicted" else ~contested)
    elif lifecycle_state == "superseded":
        q = q.where(Memory.superseded_by.is_not(None))
    elif lifecycle_state == "discarded":
        q = q.where(Memory.superseded_by.is_(None), Memory.state == "archived")
    if creator is not None:
        q = q.where(or_(Belief.creator == creator, Belief.creator.startswith(f"{creator}:", autoescape=True)))
    if cited is not None:
        memory_key, refs = cited
        q = q.where(exists(select(Evidence.id).where(
            Evidence.belief_id == Memory.id, Evidence.scope == scope, Evidence.source_type.not_in((DECLARED, *MARKERS)),
            or_(Evidence.memory_id == memory_key, Evidence.source_ref.in_(list(refs))))))
    return q


def _contradicted(scope: str):
    """SQL: a current belief of the scope states the negation of this one, or was declared to
    contradict it (resolve_conflict's auto_resolve), and no merge settled the two."""
    rival, rival_memory = Belief.__table__.alias("rival"), Memory.__table__.alias("rival_memory")
    negated = exists(select(rival.c.memory_id).join(rival_memory, rival_memory.c.id == rival.c.memory_id).where(
        rival.c.scope == scope, rival.c.proposition_key == Belief.proposition_key,
        rival.c.polarity == -Belief.polarity, rival_memory.c.superseded_by.is_(None),
        rival_memory.c.state != "archived", ~_settled(scope, rival.c.memory_id)))
    cited, cited_memory = Evidence.__table__.alias("declared"), Memory.__table__.alias("declared_memory")
    declared = exists(select(cited.c.id).join(cited_memory, cited_memory.c.id == cited.c.memory_id).where(
        cited.c.belief_id == Memory.id, cited.c.scope == scope, cited.c.source_type == DECLARED,
        cited.c.stance < 0, cited_memory.c.superseded_by.is_(None), cited_memory.c.state != "archived",
        ~_settled(scope, cited.c.memory_id)))
    return or_(negated, declared)


def _settled(scope: str, rival):
    """SQL: a merge settled the contest between this belief and `rival` (a marker row on either)."""
    mark = Evidence.__table__.alias("settled")
    return exists(select(mark.c.id).where(mark.c.scope == scope, mark.c.source_type == SETTLED, or_(
        (mark.c.belief_id == Memory.id) & (mark.c.memory_id == rival),
        (mark.c.belief_id == rival) & (mark.c.memory_id == Memory.id))))


def count(conn: Connection, q) -> int:
    return conn.execute(select(func.count()).select_from(q.subquery())).scalar_one()


def newest_page(q, limit: int, offset: int):
    return q.order_by(Memory.seq.desc()).limit(limit).offset(offset)


# -- writes ---------------------------------------------------------------------------------------

def add_evidence(conn: Connection, evidence: list[dict]) -> None:
    if evidence:
        conn.execute(insert(Evidence), evidence)


def archive(conn: Connection, scope: str, ids: Sequence[str], now: float) -> None:
    """Move these memories of the scope to state 'archived'."""
    conn.execute(update(Memory).where(Memory.scope == scope, Memory.id.in_(list(ids)))
                 .values(state="archived", updated_at=now))


def learned_from(store, ids: Sequence[str]) -> list[str]:
    """The memories these were learned from (their links' sources)."""
    with store.read() as conn:
        return list(conn.execute(select(Link.source_id).where(Link.memory_id.in_(list(ids)))).scalars())
