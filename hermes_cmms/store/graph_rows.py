"""The entity graph's rows as the store writes them: entity names and keys, the entities and
relations of new facts (added inside the store's own write), and a rebuild from the facts.
The graph's reads are hermes_cmms.knowledge.graph. See docs/graph.md."""
from __future__ import annotations

import re
import time
import uuid
from typing import Iterator, Optional

from sqlalchemy import Connection, delete, func, insert, select

from ..common.text import bounded_key
from ._forget import forgetting
from .models import Entity, Fact, Memory, Relation

CHUNK = 500  # ids per IN (...) list
REBUILD_CHUNK = 2000  # facts re-added per transaction by rebuild

_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"


# -- names --------------------------------------------------------------------------------

def _trimmed(name: str) -> str:
    """The name with spaces collapsed and outer punctuation and a possessive "'s" dropped."""
    name = " ".join(name.split()).strip(_EDGE_PUNCTUATION).strip()
    return _POSSESSIVE.sub("", name).strip(_EDGE_PUNCTUATION).strip()


def entity_key(name: str) -> str:
    """The key that deduplicates entity names: spaces collapsed, outer punctuation (a trailing
    dot too), a possessive "'s" and a leading article dropped, case-folded ("The Lisbon office",
    "lisbon office." and "Lisbon office's" are one entity)."""
    trimmed = _trimmed(name)
    return bounded_key((_ARTICLE.sub("", trimmed) or trimmed).casefold() or " ".join(name.split()).casefold())


def display_name(name: str) -> str:
    """The name an entity is shown by: its first spelling, spaces collapsed, outer punctuation
    dropped."""
    return " ".join(name.split()).strip(_EDGE_PUNCTUATION).strip() or " ".join(name.split())


# -- writes -------------------------------------------------------------------------------

def _entities(conn: Connection, scope: str, names: list[str], now: float) -> dict[str, str]:
    """Entity ids by key for these names in `scope`, creating the missing ones (named by the
    first spelling met)."""
    keys: dict[str, str] = {}
    for name in names:
        keys.setdefault(entity_key(name), display_name(name))
    found = {}
    for chunk in chunks(list(keys)):
        found.update({row.key: row.id for row in conn.execute(
            select(Entity.key, Entity.id).where(Entity.scope == scope, Entity.key.in_(chunk)))})
    fresh = [{"id": uuid.uuid4().hex, "scope": scope, "name": name, "key": key, "created_at": now}
             for key, name in keys.items() if key not in found]
    if fresh:
        conn.execute(insert(Entity), fresh)
        found.update({row["key"]: row["id"] for row in fresh})
    return found


def add_facts(conn: Connection, facts: list[dict], now: float) -> None:
    """Add the entities and relation of each new fact row (memory_id, scope, subject,
    predicate, object) inside the caller's transaction."""
    for scope in {fact["scope"] for fact in facts}:
        mine = [fact for fact in facts if fact["scope"] == scope]
        ids = _entities(conn, scope, [n for f in mine for n in (f["subject"], f["object"])], now)
        conn.execute(insert(Relation), [
            {"scope": scope, "source_id": ids[entity_key(f["subject"])], "target_id": ids[entity_key(f["object"])],
             "predicate": " ".join(f["predicate"].split()), "memory_id": f["memory_id"], "created_at": now}
            for f in mine])


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


def chunks(items: list) -> Iterator[list]:
    """`items` in lists of CHUNK (for IN (...) lists)."""
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
