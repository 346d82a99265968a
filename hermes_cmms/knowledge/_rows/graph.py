"""The SQL of the entity graph (knowledge/graph.py): its reads (names, neighbours, degrees, the
entities a query names, and the relation rows a path search reads, each read bounded by the
limit its caller gives) and its rebuild from the facts. The rows a fact's write adds are the
store's own (store/graph_rows.py)."""
from __future__ import annotations

import time
from typing import Iterable, Optional, Sequence

from sqlalchemy import Connection, delete, func, literal_column, or_, select, union_all
from sqlalchemy.orm import aliased

from ...common.text import like_literal
from ...store._forget import forgetting
from ...store.graph_rows import add_facts, chunks
from ...store.models import Entity, Fact, Memory, Relation

REBUILD_CHUNK = 2000  # facts re-added per transaction by rebuild


def _live(now: float, memory=Memory):
    """The relation's memory (joined, or an alias of it) has not expired."""
    return or_(memory.expires_at.is_(None), memory.expires_at > now)


def names(conn: Connection, scope: str, ids: Iterable[str]) -> dict[str, str]:
    """Names by id of the entities among `ids` that are in `scope`."""
    found = {}
    for chunk in chunks(list(set(ids))):
        found.update(conn.execute(select(Entity.id, Entity.name)
                                  .where(Entity.scope == scope, Entity.id.in_(chunk))).all())
    return found


def neighbours(conn: Connection, scope: str, node: str, limit: int) -> list:
    """The first `limit` relations of `node` whose other end is in `scope`, current facts first,
    then newest first: sorted and cut in SQL, so a hub hands back no more rows than any entity.
    Rows: id, predicate, memory_id, seq, superseded_by, other, name, forward ("1" or "0")."""
    now = time.time()

    def side(mine, theirs, forward: str):
        return (select(Relation.id, Relation.predicate, Relation.memory_id, Memory.seq, Memory.superseded_by,
                       Entity.id.label("other"), Entity.name, literal_column(forward).label("forward"))
                .join(Memory, Memory.id == Relation.memory_id).join(Entity, Entity.id == theirs)
                .where(Relation.scope == scope, Entity.scope == scope, mine == node, _live(now)))

    both = union_all(side(Relation.source_id, Relation.target_id, "1"),
                     side(Relation.target_id, Relation.source_id, "0").where(Relation.source_id != node)).subquery()
    return conn.execute(select(both).order_by(both.c.superseded_by.is_(None).desc(), both.c.seq.desc(), both.c.id)
                        .limit(limit)).all()


def with_keys(conn: Connection, scope: str, keys: Sequence[str]) -> list:
    """(id, key) of the scope's entities whose key is one of `keys`."""
    return [row for chunk in chunks(list(keys)) for row in conn.execute(
        select(Entity.id, Entity.key).where(Entity.scope == scope, Entity.key.in_(chunk)))]


def holding(conn: Connection, scope: str, words: Sequence[str], after: Optional[str], size: int) -> list:
    """A page of (id, key) of the scope's entities whose key holds one of `words` anywhere,
    by id after `after`."""
    page = (select(Entity.id, Entity.key).order_by(Entity.id).limit(size)
            .where(Entity.scope == scope, or_(*(Entity.key.like(f"%{like_literal(w)}%", escape="\\") for w in words))))
    return conn.execute(page if after is None else page.where(Entity.id > after)).all()


def squeezed(conn: Connection, scope: str, key: str, limit: int) -> list[str]:
    """Ids of the scope's entities whose key, spaces removed, is `key`."""
    return [i for (i,) in conn.execute(select(Entity.id).where(
        Entity.scope == scope, func.replace(Entity.key, " ", "") == key).limit(limit))]


def degrees(conn: Connection, scope: str, ids: list[str]) -> dict[str, int]:
    """How many relations (with an existing memory) touch each of `ids`; a loop counts once."""
    found: dict[str, int] = {}
    for column, loops in ((Relation.source_id, True), (Relation.target_id, False)):
        query = (select(column, func.count()).join(Memory, Memory.id == Relation.memory_id)
                 .where(Relation.scope == scope, _live(time.time())))
        if not loops:
            query = query.where(Relation.source_id != Relation.target_id)
        for chunk in chunks(ids):
            for entity_id, count in conn.execute(query.where(column.in_(chunk)).group_by(column)):
                found[entity_id] = found.get(entity_id, 0) + count
    return found


def details(conn: Connection, ids: Iterable[int]) -> dict:
    """Predicate, provenance and whether the fact is current, by relation id."""
    found = {}
    for chunk in chunks(sorted(ids)):
        found.update((r.id, r) for r in conn.execute(
            select(Relation.id, Relation.predicate, Relation.memory_id, Memory.superseded_by.is_(None).label("current"))
            .join(Memory, Memory.id == Relation.memory_id).where(Relation.id.in_(chunk))))
    return found


class PathRows:
    """The rows a path search reads from one scope's live relations: each read is given the most
    rows it may return (the search counts them against its own cap)."""

    def __init__(self, conn: Connection, scope: str, parallel: int):
        self.conn, self.scope, self.now, self.parallel = conn, scope, time.time(), parallel

    def relations(self, limit: int, *, sources: Sequence[str] = (), targets: Sequence[str] = (),
                  hidden: Optional[str] = None) -> list:
        """Rows (id, source_id, target_id, current) of the relations from one of `sources` and/or
        to one of `targets` (an empty side: any), but of those from one entity to another only
        the first `parallel` (current first, then oldest). `hidden` ("source" or "target") keeps
        SQLite off that column's index (`|| ''`), so it walks the side with fewer entries."""
        source, target = Relation.source_id, Relation.target_id
        source, target = (source.concat(""), target) if hidden == "source" else \
            (source, target.concat("")) if hidden == "target" else (source, target)
        where = [*((source.in_(list(sources)),) if sources else ()), *((target.in_(list(targets)),) if targets else ())]
        current = Memory.superseded_by.is_(None)
        rank = func.row_number().over(partition_by=(Relation.source_id, Relation.target_id),
                                      order_by=(current.desc(), Relation.id))
        rows = (select(Relation.id, Relation.source_id, Relation.target_id, current.label("current"),
                       rank.label("rank"))
                .join(Memory, Memory.id == Relation.memory_id)
                .where(Relation.scope == self.scope, _live(self.now), Relation.source_id != Relation.target_id, *where)
                .subquery())
        return self.conn.execute(select(rows.c.id, rows.c.source_id, rows.c.target_id, rows.c.current)
                                 .where(rows.c.rank <= self.parallel).limit(limit)).all()

    def counts(self, nodes: Sequence[str], side: int) -> list[tuple[str, int]]:
        """(node, how many relations it is the source (`side` 0) or target (1) of): counted in
        the indexes, in any scope, expired ones too (an estimate that reads no relation rows)."""
        column = (Relation.source_id, Relation.target_id)[side]
        return [tuple(row) for chunk in chunks(list(nodes))
                for row in self.conn.execute(select(column, func.count()).where(column.in_(chunk)).group_by(column))]

    def links(self, x: str, y: str, limit: int) -> list:
        """Up to `limit` two-hop links x -> m -> y, joined in SQL from x's relations to y's
        through m (m's own index, never y's: `|| ''` keeps SQLite off it), so neither hub's
        relations are all read and the join stops at the limit. Rows: id, m, f1, c1, id2, f2, c2."""
        r1, r2, m1, m2 = aliased(Relation), aliased(Relation), aliased(Memory), aliased(Memory)
        parts = [select(r1.id, middle.label("m"), literal_column(f1).label("f1"),
                        m1.superseded_by.is_(None).label("c1"), r2.id.label("id2"),
                        literal_column(f2).label("f2"), m2.superseded_by.is_(None).label("c2"))
                 .join(m1, m1.id == r1.memory_id).join(r2, near == middle).join(m2, m2.id == r2.memory_id)
                 .where(r1.scope == self.scope, r2.scope == self.scope, mine == x, far.concat("") == y,
                        middle != x, middle != y, _live(self.now, m1), _live(self.now, m2))
                 for mine, middle, f1 in ((r1.source_id, r1.target_id, "1"), (r1.target_id, r1.source_id, "0"))
                 for near, far, f2 in ((r2.source_id, r2.target_id, "1"), (r2.target_id, r2.source_id, "0"))]
        return self.conn.execute(union_all(*parts).limit(limit)).all()


# -- the rebuild --------------------------------------------------------------------------

def rebuild(store, scope: Optional[str] = None) -> dict:
    """Rebuild the graph of `scope` (None: every scope) in `store` (a Store) from its facts:
    its entities and relations are deleted and re-added from the facts whose memory exists,
    oldest first. Each scope is rebuilt in transactions of REBUILD_CHUNK facts (the first also
    deletes its old graph), so writers wait at most one chunk; a reader may see a scope's graph
    partly rebuilt meanwhile. `scope` is taken as stored (the caller checked it). Returns how
    many scopes, entities and relations there are afterwards."""
    if scope is not None:
        scopes = [scope]
    else:
        with store.read() as conn:
            scopes = _graph_scopes(conn)
    relations = sum(_rebuild_scope(store, name) for name in scopes)
    with store.read() as conn:
        entities = sum(conn.execute(select(func.count()).select_from(Entity).where(Entity.scope == name))
                       .scalar_one() for name in scopes)
    return {"scopes": len(scopes), "entities": entities, "relations": relations}


def _graph_scopes(conn: Connection) -> list[str]:
    """Every scope with facts or a graph."""
    found: set[str] = set()
    for table in (Fact, Entity, Relation):
        found.update(conn.execute(select(table.scope).distinct()).scalars())
    return sorted(found)


def _rebuild_scope(store, scope: str) -> int:
    """Replace one scope's graph with the one its facts make, REBUILD_CHUNK facts per
    transaction; return how many relations. Only facts older than the rebuild are re-added: a
    fact written meanwhile got its relation when it was written. A scope being forgotten is
    left to its forget."""
    after, last, added = 0, None, 0
    while True:
        with store.writing() as conn:
            if last is None and forgetting(conn, scope):  # its forget deletes its graph
                return 0
            if last is None:
                conn.execute(delete(Relation).where(Relation.scope == scope))
                conn.execute(delete(Entity).where(Entity.scope == scope))
                last = conn.execute(select(func.coalesce(func.max(Memory.seq), 0))).scalar_one()
            batch = _readd(conn, scope, after, last)
        added += len(batch)
        if len(batch) < REBUILD_CHUNK:
            return added
        after = batch[-1]["seq"]


def _readd(conn: Connection, scope: str, after: int, last: int) -> list[dict]:
    """Add the graph of the next REBUILD_CHUNK facts of `scope` whose memory's seq is in
    (after, last]; return those facts."""
    query = (select(Memory.seq, Fact.memory_id, Fact.scope, Fact.subject, Fact.predicate, Fact.object)
             .join(Memory, Memory.id == Fact.memory_id)
             .where(Fact.scope == scope, Memory.seq > after, Memory.seq <= last)
             .order_by(Memory.seq).limit(REBUILD_CHUNK))
    batch = [dict(row) for row in conn.execute(query).mappings()]
    if batch:
        add_facts(conn, batch, time.time())
    return batch
