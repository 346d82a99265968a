"""The entity graph: entities and relations built from facts on write, persisted in SQL; its
reads (named entities, neighbours, paths) and its rebuild. Its SQL is knowledge/_rows/graph.py;
the names and the rows a fact's write adds are the store's own (store/graph_rows.py). See
docs/graph.md."""
from __future__ import annotations

import re
from collections import defaultdict
from itertools import chain
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

from ..common.vocabulary import MAX_QUERY_CHARS
from ..common.checks import scope_of as _scope
from ..common.errors import InvalidInput, UnknownEntity
from ..common.ids import shown_id
from ..common.text import STOPWORDS, clean, clean_key, terms
from ._rows import graph as graph_rows
from ._rows.graph import PathRows
from ..store._forget import forgetting
from ..store.graph_rows import CHUNK as _CHUNK
from ..store.graph_rows import chunks, entity_key

if TYPE_CHECKING:
    from ..engine import Engine

MAX_DEPTH = 4  # longest path searched, in hops
MAX_LIMIT = 100  # most entities, neighbours per entity, or paths in one answer
MAX_QUERY_WORDS = 100  # a query's words beyond these are not looked up
MAX_NGRAM = 5  # longest entity name looked up in a query, in words
MAX_CANDIDATES = 500  # entities kept by the whole-word fallback
MAX_PARTIAL_PATHS = 10_000  # partial paths kept per hop from one end while searching paths
MAX_RANKED = 200  # paths of one length ranked by a path search; more: the answer says "truncated"
MAX_ROWS = 10_000  # relation rows one path search reads at most; more: "truncated"
HUB = 100  # an entity with more relations is a hub: a path search reads only those it needs
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})  # a query in the first person means "user"
USER = "user"
_WORD = re.compile(r"\w+", re.UNICODE)


# -- reads --------------------------------------------------------------------------------

_names, _degrees, _details = graph_rows.names, graph_rows.degrees, graph_rows.details


def _neighbours(conn, scope: str, node: str, limit: int) -> list[dict]:
    """The first `limit` relations of `node` whose other end is in `scope`, current facts first,
    then newest first (sorted and cut in SQL, so a hub hands back no more rows than any entity)."""
    rows = graph_rows.neighbours(conn, scope, node, limit)
    return [{"entity": {"id": r.other, "name": r.name}, "predicate": r.predicate, "forward": bool(int(r.forward)),
             "memory_id": r.memory_id, "current": r.superseded_by is None} for r in rows]


def _describe_all(conn, scope: str, ids: list[str], limit: int,
                  degrees: Optional[dict[str, int]] = None) -> list[dict]:
    """The entities `ids`, in this order, each with its degree and its first `limit` neighbours."""
    degrees = _degrees(conn, scope, ids) if degrees is None else degrees
    names = _names(conn, scope, ids)
    return [{"id": i, "name": names[i], "degree": degrees.get(i, 0), "neighbours": _neighbours(conn, scope, i, limit)}
            for i in ids]


def rebuild(engine: "Engine", scope: Optional[str] = None) -> dict:
    """The graph of `scope` (checked; None: every scope) rebuilt from its facts by
    graph_rows.rebuild; how many scopes, entities and relations there are afterwards."""
    return graph_rows.rebuild(engine.store, None if scope is None else _scope(scope))


def entity(engine: "Engine", scope: str, entity_id: str, limit: int = 20) -> dict:
    """One entity of `scope` with its neighbours; UnknownEntity if it is not in the scope."""
    return search(engine, scope, entity_id=entity_id, limit=limit)["entity"]


def search(engine: "Engine", scope: str, *, query: Optional[str] = None,
           entity_id: Optional[str] = None, source_id: Optional[str] = None,
           target_id: Optional[str] = None, max_depth: int = MAX_DEPTH, limit: int = 20) -> dict:
    """Read the scope's graph in one mode, chosen by precedence (an argument that is None or ""
    is not given): `source_id` with `target_id` (simple paths of at most `max_depth` hops
    between them, shortest first), else `entity_id` (that entity and its neighbours), else
    `query` (the entities it names, each with its neighbours, best first), else nothing (mode
    "none", with a `note`). The arguments set aside are listed in `ignored`; an entity given by
    its name rather than its id is listed in `resolved`."""
    scope = _scope(scope)
    max_depth, limit = _bounded("max_depth", max_depth, MAX_DEPTH), _bounded("limit", limit, MAX_LIMIT)
    mode, ignored = _mode(query, entity_id, source_id, target_id)
    resolved: list[dict] = []
    with engine.store.read() as conn:
        if mode == "none":
            answer = {"mode": "none", "note": NOTHING}
        elif mode == "query":
            text = _text(query)
            answer = {"mode": "query", "query": text, "entities": _by_query(conn, scope, text, limit)}
        elif mode == "entity":
            found = _require(conn, scope, _id("entity_id", entity_id), "entity_id", resolved)
            answer = {"mode": "entity", "entity": _describe_all(conn, scope, [found], limit)[0]}
        else:
            ends = [_require(conn, scope, _id(name, value), name, resolved)
                    for name, value in (("source_id", source_id), ("target_id", target_id))]
            answer = {"mode": "paths", **_paths(conn, scope, *ends, max_depth, limit)}
    return {**answer, **({"ignored": ignored} if ignored else {}), **({"resolved": resolved} if resolved else {})}


NOTHING = "Nothing to search: give query, entity_id, or source_id with target_id."


# -- query mode ---------------------------------------------------------------------------

def _by_query(conn, scope: str, query: str, limit: int) -> list[dict]:
    """The entities the query names (longest name first), else those whose name holds one of
    its content words (most words first); ties go to the better connected."""
    if forgetting(conn, scope):  # being forgotten (forget --all): an empty graph
        return []
    scores = _named(conn, scope, query) or _mentioned(conn, scope, query)
    degrees = _degrees(conn, scope, list(scores))
    names = _names(conn, scope, scores)
    best = sorted(scores, key=lambda i: (-scores[i], -degrees.get(i, 0), names[i].casefold(), i))
    return _describe_all(conn, scope, best[:limit], limit, degrees)


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


def _named(conn, scope: str, query: str) -> dict[str, int]:
    """Entity ids whose key is one of the query's word runs, with the run's length."""
    grams = _grams(query)
    return {row.id: grams[row.key] for row in graph_rows.with_keys(conn, scope, list(grams))}


def _mentioned(conn, scope: str, query: str) -> dict[str, int]:
    """Entity ids whose key holds one of the query's content words as a whole word, with how
    many of them it holds (the first MAX_CANDIDATES such entities). The keys holding a word
    anywhere are read a page at a time and kept only when they hold it whole, so names that
    merely contain it ("Satoshi" for "sato") never crowd out those that hold it."""
    words = list(dict.fromkeys(w.casefold() for w in terms(query)))
    if not words:
        return {}
    whole = [re.compile(rf"(?<!\w){re.escape(w)}(?!\w)") for w in words]
    found: dict[str, int] = {}
    after = None
    while len(found) < MAX_CANDIDATES:
        rows = graph_rows.holding(conn, scope, words, after, _CHUNK)
        for row in rows:
            hits = sum(1 for pattern in whole if pattern.search(row.key))
            if hits and len(found) < MAX_CANDIDATES:
                found[row.id] = hits
        if len(rows) < _CHUNK:
            break
        after = rows[-1].id
    return found


# -- paths mode ---------------------------------------------------------------------------

_Step = tuple[int, str, bool, bool]  # (relation id, entity at its other end, followed forward, fact current)
_Hop = tuple[int, bool, bool]  # one step of a path: (relation id, followed forward, fact current)
_Path = tuple[tuple[str, ...], tuple[_Hop, ...]]  # (entities, hops)
_Link = tuple[str, _Hop, str, _Hop, str]  # two hops x -> m -> y: (x, hop, m, hop, y)


class _Cut(Exception):
    """The path search has read MAX_ROWS relation rows."""


class _Adjacency:
    """A scope's live relations as light rows, read as the search reaches them: every relation
    of an entity (`steps`, read once), only those between two sets of entities (`between`), or
    the two-hop links between two hubs (`links`). It reads at most MAX_ROWS rows (then raises
    _Cut); `truncated` says whether a read was cut short."""

    def __init__(self, conn, scope: str, parallel: int):
        self.sql = PathRows(conn, scope, parallel)
        self.full: dict[str, list[_Step]] = {}
        self.counts: dict[str, tuple[int, int]] = {}
        self.left, self.truncated = MAX_ROWS, False

    def _read(self, read, room: Optional[int] = None) -> list:
        """The rows `read(limit)` gives, at most `room` (more: `truncated`), counted against MAX_ROWS."""
        room = self.left if room is None else room
        rows = read(min(room, self.left) + 1)
        self.left -= len(rows)
        if self.left < 0:
            self.truncated = True
            raise _Cut
        self.truncated |= len(rows) > room
        return rows[:room]

    def _rows(self, **ends) -> list:
        """The relations between the given `sources` / `targets`, but of those from one entity to
        another only the first `parallel` (current first, then oldest): a path through a later
        one ranks below `parallel` paths through the same entities, so it is never shown."""
        return self._read(lambda limit: self.sql.relations(limit, **ends))

    def degrees(self, nodes: Iterable[str], side: Optional[int] = None) -> dict[str, int]:
        """How many relations each of `nodes` is the source (`side` 0) or target (1) of, or
        either: counted in the indexes, in any scope, expired ones too (an estimate that reads no
        relation rows)."""
        nodes = set(nodes)
        missing = sorted(nodes - set(self.counts))
        self.counts.update((n, (0, 0)) for n in missing)
        for at in (0, 1):
            for node, count in self.sql.counts(missing, at):
                self.counts[node] = (count, self.counts[node][1]) if at == 0 else (self.counts[node][0], count)
        return {n: sum(self.counts[n]) if side is None else self.counts[n][side] for n in nodes}

    def steps(self, nodes: Iterable[str]) -> dict[str, list[_Step]]:
        """Every relation of each of `nodes`, current facts first (a loop is never a step)."""
        nodes = list(dict.fromkeys(nodes))
        missing = [n for n in nodes if n not in self.full]
        read = {n: [] for n in missing}
        for chunk in chunks(missing):
            for r in self._rows(sources=chunk):
                read[r.source_id].append((r.id, r.target_id, True, bool(r.current)))
            for r in self._rows(targets=chunk):
                read[r.target_id].append((r.id, r.source_id, False, bool(r.current)))
        self.full.update((n, sorted(found, key=lambda s: (not s[3], s[0]))) for n, found in read.items())
        return {n: self.full[n] for n in nodes}

    def between(self, ends: Iterable[str], others: set[str]) -> dict[str, list[_Step]]:
        """The relations from each of `ends` to an entity of `others`; only those rows are read
        (for an entity whose relations were all read, they are filtered instead)."""
        found = {n: [s for s in self.full.get(n, ()) if s[1] in others] for n in ends}
        unread = [n for n in found if n not in self.full]
        for forward in (True, False):
            for r in self._joining(unread, others, forward):
                end, other = (r.source_id, r.target_id) if forward else (r.target_id, r.source_id)
                found[end].append((r.id, other, forward, bool(r.current)))
        for n in unread:
            found[n].sort(key=lambda s: (not s[3], s[0]))
        return found

    def _joining(self, ends: list[str], others: set[str], forward: bool) -> Iterator:
        """The relations from one of `ends` (their source if `forward`, else their target) to one
        of `others`. SQLite walks the index of the side with fewer entries; the other column is
        hidden from it (`|| ''`), else it may walk a hub's thousands of entries to find a few."""
        if not ends or not others:
            return
        side = 0 if forward else 1
        hide_mine = sum(self.degrees(ends, side).values()) > sum(self.degrees(others, 1 - side).values())
        hidden = ("source", "target")[side if hide_mine else 1 - side]
        for chunk in chunks(ends):
            for known in chunks(sorted(others)):
                mine, theirs = ("sources", "targets") if forward else ("targets", "sources")
                yield from self._rows(**{mine: chunk, theirs: known}, hidden=hidden)

    def links(self, x: str, y: str, room: int) -> list[_Link]:
        """Up to `room` two-hop links x -> m -> y, joined in SQL from x's relations to y's
        through m (m's own index, never y's: `|| ''` keeps SQLite off it), so neither hub's
        relations are all read and the join stops at the limit."""
        return [(x, (r[0], r[2] == 1, bool(r[3])), r[1], (r[4], r[5] == 1, bool(r[6])), y)
                for r in self._read(lambda limit: self.sql.links(x, y, limit), room)]


def _paths(conn, scope: str, source: str, target: str, depth: int, limit: int) -> dict:
    """The simple paths between two entities of `scope` (ids, checked), shortest and most
    current first."""
    if source == target:
        raise InvalidInput(f"Paths need two different entities; source_id and target_id are both {source!r}.")
    adjacency = _Adjacency(conn, scope, limit)
    found = _search(adjacency, source, target, depth, limit)
    edges = _details(conn, {edge for _, hops in found for edge, _, _ in hops})
    names = _names(conn, scope, [n for nodes, _ in found for n in nodes] + [source, target])
    return {"source": {"id": source, "name": names[source]}, "target": {"id": target, "name": names[target]},
            "max_depth": depth, "truncated": adjacency.truncated,
            "path_steps": [_shown(path, edges, names) for path in found]}


def _search(adj: _Adjacency, source: str, target: str, depth: int, limit: int) -> list[_Path]:
    """Up to `limit` paths of 1, 2, ... `depth` hops: all paths of one length (at most
    MAX_RANKED of them) are found and ranked before the next length is looked at, and the
    search stops once it has `limit`, when no longer path can exist, or when a cap is hit."""
    found: list[_Path] = []
    sides = ([[((source,), ())]], [[((target,), ())]])  # partial paths from each end, by length
    for length in range(1, depth + 1):
        batch: list[_Path] = []
        try:
            for path in _of_length(adj, sides, source, target, length):
                if len(batch) == MAX_RANKED:
                    adj.truncated = True
                    break
                batch.append(path)
        except _Cut:
            pass
        found += sorted(batch, key=_rank)[:limit - len(found)]
        if len(found) >= limit or adj.truncated or not (sides[0][-1] and sides[1][-1]):
            break
    return found


def _rank(path: _Path) -> tuple:
    """Shorter first, then fewer superseded facts, then older relations."""
    return len(path[1]), sum(not current for _, _, current in path[1]), [edge for edge, _, _ in path[1]]


def _of_length(adj: _Adjacency, sides: tuple[list, list], source: str, target: str,
               length: int) -> Iterator[_Path]:
    """The simple paths of exactly `length` hops. One hop: the relations between the ends.
    Longer: the partial paths from both ends, grown one hop on the cheaper side (by degree)
    until they are `length` - 2 hops long together, joined by every two-hop link between their
    last entities."""
    if length == 1:
        yield from (((source, target), ((edge, forward, current),))
                    for edge, _, forward, current in adj.between([source], {target})[source])
        return
    while len(sides[0]) + len(sides[1]) < length:
        side = min((0, 1), key=lambda i: sum(adj.degrees({nodes[-1] for nodes, _ in sides[i][-1]}).values()))
        sides[side].append(_longer(adj, sides[side][-1], (target, source)[side]))
    before, after = _by_end(sides[0][-1]), _by_end(sides[1][-1])
    if not before or not after:
        return
    for x, first, middle, second, y in _two_hops(adj, set(before), set(after)):
        for nodes, hops in before[x]:
            for back, returns in after[y]:
                path = nodes + (middle,) + back[::-1]
                if len(set(path)) == len(path):
                    yield path, hops + (first, second) + _backwards(returns)


def _longer(adj: _Adjacency, partial: list[_Path], away: str) -> list[_Path]:
    """The partial paths one hop longer (at most MAX_PARTIAL_PATHS), never through `away` (the
    other end) nor back through themselves."""
    steps = adj.steps(nodes[-1] for nodes, _ in partial)
    grown = [(nodes + (other,), hops + ((edge, forward, current),)) for nodes, hops in partial
             for edge, other, forward, current in steps[nodes[-1]] if other != away and other not in nodes]
    adj.truncated |= len(grown) > MAX_PARTIAL_PATHS
    return grown[:MAX_PARTIAL_PATHS]


def _by_end(partial: list[_Path]) -> dict[str, list[_Path]]:
    found: dict[str, list[_Path]] = {}
    for path in partial:
        found.setdefault(path[0][-1], []).append(path)
    return found


def _backwards(hops: tuple[_Hop, ...]) -> tuple[_Hop, ...]:
    """Hops walked the other way round."""
    return tuple((edge, not forward, current) for edge, forward, current in reversed(hops))


def _two_hops(adj: _Adjacency, starts: set[str], ends: set[str]) -> Iterator[_Link]:
    """Every two-hop link x -> m -> y from `starts` to `ends` (x != y). Entities with at most
    HUB relations have them all read, the hubs only those to the entities next to those; a link
    whose middle is next to none of them joins two hubs and is asked of SQL (`links`)."""
    degrees = adj.degrees(starts | ends)
    hubs = sorted(n for n in starts | ends if degrees.get(n, 0) > HUB)
    read = adj.steps(sorted((starts | ends) - set(hubs)))
    near = {other for steps in read.values() for _, other, _, _ in steps}
    touching: dict[str, list[tuple[str, _Hop]]] = defaultdict(list)  # middle: (entity, hop middle -> it)
    for node, steps in chain(read.items(), adj.between(hubs, near).items()):
        for edge, middle, forward, current in steps:
            touching[middle].append((node, (edge, not forward, current)))
    for middle, around in touching.items():
        for x, (edge, forward, current) in around:
            if x in starts:
                yield from ((x, (edge, not forward, current), middle, hop, y) for y, hop in around
                            if y in ends and y != x)
    for x, y in ((x, y) for x in hubs for y in hubs if x in starts and y in ends and x != y):
        yield from (link for link in adj.links(x, y, MAX_RANKED) if link[2] not in near)


def _shown(path: _Path, edges: dict, names: dict[str, str]) -> dict:
    """A path as JSON: its length and each step from one entity to the next."""
    nodes, steps = path
    return {"length": len(steps), "steps": [
        {"from": {"id": a, "name": names[a]}, "predicate": edges[edge].predicate, "to": {"id": b, "name": names[b]},
         "memory_id": edges[edge].memory_id, "forward": forward, "current": bool(edges[edge].current)}
        for a, b, (edge, forward, _) in zip(nodes, nodes[1:], steps)]}


# -- arguments ----------------------------------------------------------------------------

MODES = {"paths": ("source_id", "target_id"), "entity": ("entity_id",), "query": ("query",), "none": ()}


def _mode(query, entity_id, source_id, target_id) -> tuple[str, list[str]]:
    """Which search the arguments ask for, by precedence, and the given arguments it sets
    aside; InvalidInput for a path with one end only."""
    given = [name for name, value in (("query", query), ("entity_id", entity_id), ("source_id", source_id),
                                      ("target_id", target_id)) if value is not None and value != ""]
    ends = [name for name in MODES["paths"] if name in given]
    if len(ends) == 1:
        missing = next(name for name in MODES["paths"] if name not in ends)
        raise InvalidInput(f"A path search needs both source_id and target_id; it got {ends[0]} without {missing}.")
    mode = next(mode for mode, names in MODES.items() if all(name in given for name in names))
    return mode, [name for name in given if name not in MODES[mode]]


def _require(conn, scope: str, value: str, argument: str = "entity_id",
             resolved: Optional[list] = None) -> str:
    """The id of the entity of `scope` that `value` names: its id, else its name ("Server Alpha"
    finds "server alpha"), else its name without spaces ("serveralpha"); of several entities
    so named, the best connected. A name resolved is added to `resolved`. UnknownEntity if
    none is in the scope (or the scope is being forgotten)."""
    if forgetting(conn, scope):
        raise UnknownEntity(f"Unknown entity id {value!r} in this scope (no entity has that id or name).")
    if _names(conn, scope, [value]):
        return value
    keys = {entity_key(value), entity_key(shown_id(value))}  # a name that is a UUID reaches here stored
    candidates = [row.id for row in graph_rows.with_keys(conn, scope, sorted(keys))]
    key = entity_key(value)
    if not candidates and key:
        candidates = graph_rows.squeezed(conn, scope, key.replace(" ", ""), MAX_CANDIDATES)
    if not candidates:
        raise UnknownEntity(f"Unknown entity id {value!r} in this scope (no entity has that id or name).")
    degrees = _degrees(conn, scope, candidates)
    best = min(candidates, key=lambda i: (-degrees.get(i, 0), i))
    if resolved is not None:
        resolved.append({"argument": argument, "given": value, "id": best, "name": _names(conn, scope, [best])[best],
                         "matches": len(candidates)})
    return best


def _text(query) -> str:
    if not isinstance(query, str) or not clean(query).strip():
        raise InvalidInput(f"The graph query must be a non-empty string, not {query!r}.")
    if len(query) > MAX_QUERY_CHARS:  # a longer word is more than a LIKE pattern may hold
        raise InvalidInput(f"The graph query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}.")
    return clean(query)


def _id(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"The {name} must be a non-empty string, not {value!r}.")
    return clean_key(value.strip())


def _bounded(name: str, value, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidInput(f"{name} must be a whole number from 1 to {top}, not {value!r}.")
    return value


