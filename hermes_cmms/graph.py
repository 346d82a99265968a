"""The entity graph: entities and relations built from facts on write, persisted in SQL; its
reads (named entities, neighbours, paths) and its rebuild. See docs/graph.md."""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

from sqlalchemy import Connection, delete, func, insert, or_, select

from .errors import InvalidInput, UnknownEntity
from .models import Entity, Fact, Memory, Relation
from .text import STOPWORDS, clean_key, terms

if TYPE_CHECKING:
    from .service import MemoryService

MAX_DEPTH = 4  # longest path searched, in hops
MAX_LIMIT = 100  # most entities, neighbours per entity, or paths in one answer
MAX_QUERY_WORDS = 100  # a query's words beyond these are not looked up
MAX_NGRAM = 5  # longest entity name looked up in a query, in words
MAX_CANDIDATES = 500  # entities read for the whole-word fallback
MAX_PARTIAL_PATHS = 10_000  # partial paths kept per hop while searching paths
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})  # a query in the first person means "user"
USER = "user"
_CHUNK = 500

_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"
_WORD = re.compile(r"\w+", re.UNICODE)


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
    return (_ARTICLE.sub("", trimmed) or trimmed).casefold() or " ".join(name.split()).casefold()


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
    for chunk in _chunks(list(keys)):
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


def rebuild(service: "MemoryService", scope: Optional[str] = None) -> dict:
    """Rebuild the graph of `scope` (None: every scope) from its facts in one transaction: its
    entities and relations are deleted and re-added from the facts whose memory exists, oldest
    first. Returns how many scopes, entities and relations there are afterwards."""
    scope = None if scope is None else _scope(scope)
    now = time.time()
    with service.store._write_lock, service.store.write() as conn:
        scopes = [scope] if scope is not None else _graph_scopes(conn)
        relations = sum(_rebuild_scope(conn, name, now) for name in scopes)
        entities = sum(conn.execute(select(func.count()).select_from(Entity).where(Entity.scope == name))
                       .scalar_one() for name in scopes)
    return {"scopes": len(scopes), "entities": entities, "relations": relations}


def _graph_scopes(conn: Connection) -> list[str]:
    """Every scope with facts or a graph."""
    found: set[str] = set()
    for table in (Fact, Entity, Relation):
        found.update(conn.execute(select(table.scope).distinct()).scalars())
    return sorted(found)


def _rebuild_scope(conn: Connection, scope: str, now: float) -> int:
    """Replace one scope's graph with the one its facts make; return how many relations."""
    conn.execute(delete(Relation).where(Relation.scope == scope))
    conn.execute(delete(Entity).where(Entity.scope == scope))
    query = (select(Memory.seq, Fact.memory_id, Fact.scope, Fact.subject, Fact.predicate, Fact.object)
             .join(Memory, Memory.id == Fact.memory_id).where(Fact.scope == scope)
             .order_by(Memory.seq).limit(_CHUNK))
    after, added = 0, 0
    while batch := [dict(row) for row in conn.execute(query.where(Memory.seq > after)).mappings()]:
        add_facts(conn, batch, now)
        after, added = batch[-1]["seq"], added + len(batch)
    return added


# -- reads --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Edge:
    """A relation as the reads see it: ends, provenance, and whether its fact is current."""

    id: int
    source: str
    target: str
    predicate: str
    memory_id: str
    current: bool
    seq: int


class _Adjacency:
    """A scope's relations by entity, read from the store as a search reaches them."""

    def __init__(self, conn: Connection, scope: str):
        self.conn, self.scope = conn, scope
        self.edges: dict[str, list[_Edge]] = {}

    def load(self, ids: Iterable[str]) -> None:
        """Read the relations of the entities not read yet (two indexed queries per chunk)."""
        missing = {i: None for i in ids if i not in self.edges}
        for entity_id in missing:
            self.edges[entity_id] = []
        for edge in _edges(self.conn, self.scope, list(missing)):
            for end in {edge.source, edge.target}:
                if end in missing:
                    self.edges[end].append(edge)

    def steps(self, node: str) -> list[tuple[_Edge, str, bool]]:
        """(relation, entity at its other end, whether `node` is its source) for each relation."""
        found = []
        for edge in self.edges[node]:
            if edge.source == node:
                found.append((edge, edge.target, True))
            if edge.target == node and edge.source != node:
                found.append((edge, edge.source, False))
        return found


def _edges(conn: Connection, scope: str, ids: list[str]) -> list[_Edge]:
    """The relations of `scope` touching any of `ids` whose memory exists and has not expired."""
    now = time.time()
    base = (select(Relation.id, Relation.source_id, Relation.target_id, Relation.predicate,
                   Relation.memory_id, Memory.superseded_by, Memory.seq)
            .join(Memory, Memory.id == Relation.memory_id)
            .where(Relation.scope == scope, or_(Memory.expires_at.is_(None), Memory.expires_at > now)))
    found: dict[int, _Edge] = {}
    for column in (Relation.source_id, Relation.target_id):
        for chunk in _chunks(ids):
            for r in conn.execute(base.where(column.in_(chunk))):
                found[r.id] = _Edge(r.id, r.source_id, r.target_id, r.predicate, r.memory_id,
                                    r.superseded_by is None, r.seq)
    return list(found.values())


def _names(conn: Connection, scope: str, ids: Iterable[str]) -> dict[str, str]:
    """Names by id of the entities among `ids` that are in `scope`."""
    found = {}
    for chunk in _chunks(list(set(ids))):
        found.update(conn.execute(select(Entity.id, Entity.name)
                                  .where(Entity.scope == scope, Entity.id.in_(chunk))).all())
    return found


def _described(adj: _Adjacency, names: dict[str, str], node: str, limit: int) -> dict:
    """An entity with its degree and its neighbours: current facts first, then newest first."""
    steps = sorted(adj.steps(node), key=lambda s: (not s[0].current, -s[0].seq, s[0].id))
    return {"id": node, "name": names[node], "degree": len(adj.edges[node]), "neighbours": [
        {"entity": {"id": other, "name": names[other]}, "predicate": edge.predicate, "forward": forward,
         "memory_id": edge.memory_id, "current": edge.current}
        for edge, other, forward in steps if other in names][:limit]}


def _describe_all(conn: Connection, scope: str, ids: list[str], limit: int) -> list[dict]:
    """The entities `ids`, in this order, each with its neighbours."""
    adj = _Adjacency(conn, scope)
    adj.load(ids)
    names = _names(conn, scope, [*ids, *(other for i in ids for _, other, _ in adj.steps(i))])
    return [_described(adj, names, i, limit) for i in ids]


def entity(service: "MemoryService", scope: str, entity_id: str, limit: int = 20) -> dict:
    """One entity of `scope` with its neighbours; UnknownEntity if it is not in the scope."""
    return search(service, scope, entity_id=entity_id, limit=limit)["entity"]


def search(service: "MemoryService", scope: str, *, query: Optional[str] = None,
           entity_id: Optional[str] = None, source_id: Optional[str] = None,
           target_id: Optional[str] = None, max_depth: int = MAX_DEPTH, limit: int = 20) -> dict:
    """Read the scope's graph in exactly one mode: `query` (the entities it names, each with its
    neighbours, best first), `entity_id` (that entity and its neighbours) or `source_id` with
    `target_id` (simple paths of at most `max_depth` hops between them, shortest first)."""
    scope = _scope(scope)
    max_depth, limit = _bounded("max_depth", max_depth, MAX_DEPTH), _bounded("limit", limit, MAX_LIMIT)
    mode = _mode(query, entity_id, source_id, target_id)
    with service.store.read() as conn:
        if mode == "query":
            text = _text(query)
            return {"mode": "query", "query": text, "entities": _by_query(conn, scope, text, limit)}
        if mode == "entity":
            found = _require(conn, scope, _id("entity_id", entity_id))
            return {"mode": "entity", "entity": _describe_all(conn, scope, [found], limit)[0]}
        return {"mode": "paths", **_paths(conn, scope, _id("source_id", source_id),
                                          _id("target_id", target_id), max_depth, limit)}


# -- query mode ---------------------------------------------------------------------------

def _by_query(conn: Connection, scope: str, query: str, limit: int) -> list[dict]:
    """The entities the query names (longest name first), else those whose name holds one of
    its content words (most words first); ties go to the better connected."""
    scores = _named(conn, scope, query) or _mentioned(conn, scope, query)
    degrees = _degrees(conn, scope, list(scores))
    names = _names(conn, scope, scores)
    best = sorted(scores, key=lambda i: (-scores[i], -degrees.get(i, 0), names[i].casefold(), i))
    return _describe_all(conn, scope, best[:limit], limit)


def _grams(query: str) -> dict[str, int]:
    """The keys of the query's 1- to 5-word runs (not those of stopwords only), each with its
    length in words; "user" too when the query speaks in the first person."""
    words = query.split()[:MAX_QUERY_WORDS]
    grams: dict[str, int] = {}
    for size in range(1, MAX_NGRAM + 1):
        for start in range(len(words) - size + 1):
            key = entity_key(" ".join(words[start:start + size]))
            if key and not all(w in STOPWORDS for w in _WORD.findall(key)):
                grams[key] = size
    if FIRST_PERSON & set(_WORD.findall(query.casefold())):
        grams.setdefault(USER, 1)
    return grams


def _named(conn: Connection, scope: str, query: str) -> dict[str, int]:
    """Entity ids whose key is one of the query's word runs, with the run's length."""
    grams = _grams(query)
    found = {}
    for chunk in _chunks(list(grams)):
        for row in conn.execute(select(Entity.id, Entity.key).where(Entity.scope == scope, Entity.key.in_(chunk))):
            found[row.id] = grams[row.key]
    return found


def _mentioned(conn: Connection, scope: str, query: str) -> dict[str, int]:
    """Entity ids whose key holds one of the query's content words as a whole word, with how
    many of them it holds."""
    words = list(dict.fromkeys(w.casefold() for w in terms(query)))
    if not words:
        return {}
    likes = [Entity.key.like(f"%{_escaped(w)}%", escape="\\") for w in words]
    rows = conn.execute(select(Entity.id, Entity.key).where(Entity.scope == scope, or_(*likes))
                        .limit(MAX_CANDIDATES))
    found = {}
    for row in rows:
        hits = sum(1 for w in words if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", row.key))
        if hits:
            found[row.id] = hits
    return found


def _degrees(conn: Connection, scope: str, ids: list[str]) -> dict[str, int]:
    """How many relations (with an existing memory) touch each of `ids`; a loop counts once."""
    found: dict[str, int] = {}
    for column, loops in ((Relation.source_id, True), (Relation.target_id, False)):
        query = (select(column, func.count()).join(Memory, Memory.id == Relation.memory_id)
                 .where(Relation.scope == scope, or_(Memory.expires_at.is_(None), Memory.expires_at > time.time())))
        if not loops:
            query = query.where(Relation.source_id != Relation.target_id)
        for chunk in _chunks(ids):
            for entity_id, count in conn.execute(query.where(column.in_(chunk)).group_by(column)):
                found[entity_id] = found.get(entity_id, 0) + count
    return found


# -- paths mode ---------------------------------------------------------------------------

_Path = tuple[tuple[str, ...], tuple[tuple[_Edge, bool], ...]]  # (entities, (relation, forward) steps)


def _paths(conn: Connection, scope: str, source: str, target: str, depth: int, limit: int) -> dict:
    """The simple paths between two entities of `scope`, shortest and most current first."""
    source, target = _require(conn, scope, source), _require(conn, scope, target)
    if source == target:
        raise InvalidInput(f"Paths need two different entities; source_id and target_id are both {source!r}.")
    adj = _Adjacency(conn, scope)
    found = _walk(adj, source, target, depth, _distances(adj, target, depth), limit)
    names = _names(conn, scope, [n for nodes, _ in found for n in nodes] + [source, target])
    return {"source": {"id": source, "name": names[source]}, "target": {"id": target, "name": names[target]},
            "max_depth": depth, "paths": [_shown(path, names) for path in found]}


def _distances(adj: _Adjacency, target: str, depth: int) -> dict[str, int]:
    """Hops from `target` to every entity at most depth - 1 hops away (breadth first)."""
    distance, frontier = {target: 0}, [target]
    for hops in range(1, depth):
        adj.load(frontier)
        frontier = list(dict.fromkeys(o for n in frontier for _, o, _ in adj.steps(n) if o not in distance))
        distance.update((o, hops) for o in frontier)
    return distance


def _walk(adj: _Adjacency, source: str, target: str, depth: int, distance: dict[str, int],
          limit: int) -> list[_Path]:
    """Simple paths from `source` to `target`, grown one hop at a time, in either direction
    along each relation; a step is only taken if `target` is still reachable in time."""
    found: list[_Path] = []
    partial: list[_Path] = [((source,), ())]
    for length in range(1, depth + 1):
        adj.load(nodes[-1] for nodes, _ in partial)
        grown: list[_Path] = []
        for nodes, steps in partial:
            for edge, other, forward in adj.steps(nodes[-1]):
                if other not in nodes and distance.get(other, depth + 1) <= depth - length:
                    path = (nodes + (other,), steps + ((edge, forward),))
                    (found if other == target else grown).append(path)
        if len(found) >= limit or not grown:
            break
        partial = grown[:MAX_PARTIAL_PATHS]
    rank = lambda p: (len(p[1]), sum(not e.current for e, _ in p[1]), [e.id for e, _ in p[1]])  # noqa: E731
    return sorted(found, key=rank)[:limit]


def _shown(path: _Path, names: dict[str, str]) -> dict:
    """A path as JSON: its length and each step from one entity to the next."""
    nodes, steps = path
    return {"length": len(steps), "steps": [
        {"from": {"id": a, "name": names[a]}, "predicate": edge.predicate, "to": {"id": b, "name": names[b]},
         "memory_id": edge.memory_id, "forward": forward, "current": edge.current}
        for a, b, (edge, forward) in zip(nodes, nodes[1:], steps)]}


# -- arguments ----------------------------------------------------------------------------

def _mode(query, entity_id, source_id, target_id) -> str:
    """Which search the arguments ask for; InvalidInput unless exactly one."""
    given = [name for name, value in (("query", query), ("entity_id", entity_id), ("source_id", source_id),
                                      ("target_id", target_id)) if value is not None]
    modes = {("query",): "query", ("entity_id",): "entity", ("source_id", "target_id"): "paths"}
    if tuple(given) not in modes:
        raise InvalidInput("Graph search takes exactly one of: query, entity_id, or source_id with "
                           f"target_id; it got {', '.join(given) or 'none of them'}.")
    return modes[tuple(given)]


def _require(conn: Connection, scope: str, entity_id: str) -> str:
    """`entity_id` if it is an entity of `scope`; UnknownEntity otherwise."""
    if not _names(conn, scope, [entity_id]):
        raise UnknownEntity(f"Unknown entity id {entity_id!r} in this scope.")
    return entity_id


def _text(query) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"The graph query must be a non-empty string, not {query!r}.")
    return query


def _id(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"The {name} must be a non-empty string, not {value!r}.")
    return clean_key(value.strip())


def _bounded(name: str, value, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidInput(f"{name} must be a whole number from 1 to {top}, not {value!r}.")
    return value


def _scope(scope) -> str:
    """The scope as stored (as MemoryService does it); InvalidInput unless a non-empty string."""
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInput(f"A scope must be a non-empty string, not {scope!r}.")
    return clean_key(scope)


def _escaped(word: str) -> str:
    """A word made literal inside a LIKE pattern (escape character: backslash)."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _chunks(items: list) -> Iterator[list]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]
