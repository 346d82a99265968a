"""Retrieval: hybrid search (keyword and vector rankings fused), vector-only search, and pages."""
from __future__ import annotations

import functools
import logging
import re
import time
from concurrent.futures import Executor, Future
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence, TypeVar

from ..common import lifecycle_rules as lifecycle
from ..common.checks import scope_of, tags_of, tier_of
from ..common.errors import InvalidInput, NoVectorIndex
from ..common.text import clean
from ..store.models import Memory
from ..store.store import Filters
from ..vectors.chroma import UNITS, owner
from . import _rows
from ..vectors.indexer import query_vector
from . import when
from .rank import Hit, query_names, rank

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)
T = TypeVar("T")

CANDIDATES = 50  # per retriever, before fusion
SENTENCE_CANDIDATES = 2 * CANDIDATES  # sentence vectors asked for: a memory may have several
VECTOR_FLOOR = 0.2  # cosine below which a vector match is not a match at all (a later message
# that relates to an earlier one without naming it is often only 0.2-0.3 from it in MiniLM)
# The question is embedded and the vector views queried on the engine's query pool (VECTOR_WORKERS).
FACT_SCAN = 5_000  # newest facts a listing by source looks through (the source is not in SQL)


def search(engine: "Engine", scope: str, query: str, limit: int = 30, *, tags: Sequence[str] = (),
           source: Optional[str] = None, fact: Optional[dict] = None, explain: Optional[dict] = None,
           searched: Optional[dict] = None) -> list[Hit]:
    """Hybrid search inside one scope, best first.

    Filters: memories carrying every one of `tags`; whose source (receipt) starts with
    `source`; facts whose given parts (`subject`, `predicate`, `object`) match, ignoring case.
    With `explain` (a dict), why each candidate ranked where it did (see rank.rank). With
    `searched` (a dict), `by_meaning`: whether the query was compared by meaning at all, and
    what the vector half saw (see _vector_search).
    """
    tags = tags_of(tags)
    fact = {k: v for k, v in (fact or {}).items() if v is not None}
    for name, value in [("source", source), *fact.items()]:
        if value is not None and (not isinstance(value, str) or not clean(value).strip()):
            raise InvalidInput(f"The {name} filter must be a non-empty string.")
    source, fact = clean(source) if source is not None else None, {k: clean(v) for k, v in fact.items()}
    filters = Filters(tags=tags, source=source, fact=fact) if tags or source or fact else None
    scope = scope_of(scope)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"The result limit must be a positive whole number, not {limit!r}.")
    if filters is not None and not (isinstance(query, str) and query.strip()):
        return _newest_facts(engine, scope, filters, limit) if fact else []
    if not isinstance(query, str):
        raise InvalidInput("The query must be a string.")
    query = clean(query)
    if not query.strip():
        return []
    return _hybrid(engine, scope, query, filters, explain, searched)[:limit]


def _hybrid(engine: "Engine", scope: str, query: str, filters: Optional[Filters] = None,
            explain: Optional[dict] = None, searched: Optional[dict] = None) -> list[Hit]:
    """Every candidate for a clean, non-empty query, ranked. With `filters`, the keyword rankings
    are of the matching memories only (in SQL, so none is missed past the first hits), and the
    vector candidates are narrowed to those matching (in SQL too)."""
    store, names = engine.store, query_names(query)
    # A speaker's name matches every line they said (short ones best): the speaker boost
    # in rank() covers it, so keyword search looks for the rest of the question.
    vectors = engine.pool.submit(_vector_search, engine, scope, query, searched)
    words = _without(query, _rows.speakers(store, scope, names)) if names else query
    by_text, in_context = store.keyword_views(scope, words, CANDIDATES, filters)
    rankings = {"keyword": [m for m, _ in by_text], "keyword_context": [m for m, _ in in_context]}
    found, meaning = vectors.result()  # (after the keyword half: the two run side by side)
    rankings.update(found)
    if searched is not None:
        searched["by_meaning"] = bool(found)  # ({} when no vector index answered)
    if filters is not None:
        kept = _rows.filtered_ids(store, scope, filters, list({m for name, ids in rankings.items()
                                                               if name.startswith("vector") for m in ids}))
        rankings = {name: [m for m in ids if not name.startswith("vector") or m in kept]
                    for name, ids in rankings.items()}
    memories = store.get(list({m for ids in rankings.values() for m in ids}), scope)
    hits = rank(memories, rankings, names, during=when.spans(query, time.time()), query=words, explain=explain)
    for hit in hits:
        hit.similarity, hit.units = meaning.get(hit.memory.id, (None, ()))
    return hits


def _newest_facts(engine: "Engine", scope: str, filters: Filters, limit: int) -> list[Hit]:
    """No query: the facts matching `filters`, newest first."""
    rows, _ = engine.store.browse_rows(scope, replace(filters, state="live"), limit=limit, count=False)
    return [Hit(memory, 0.0) for memory, _ in rows]


def semantic_search(engine: "Engine", scope: str, query: str, top_k: int = 10,
                    score_threshold: float = 0.0) -> list[tuple[Memory, float]]:
    """Vector-only search: (memory, cosine similarity) pairs at or above the threshold."""
    scope = scope_of(scope)
    if not isinstance(query, str) or not clean(query).strip():
        raise InvalidInput("The query must be a non-empty string.")
    engine.indexer.settle(scope)
    vector = query_vector(engine.indexer, query)
    if vector is None:
        raise NoVectorIndex("Semantic search is unavailable: no embedding model or vector "
                            "index is loaded (see `hermes-cmms doctor`).")
    found = [(m, sim) for m, sim in engine.indexer.vectors.query(scope, vector, top_k)
             if sim >= score_threshold]
    memories = engine.store.get([m for m, _ in found], scope)
    return [(memories[m], sim) for m, sim in found if m in memories and memories[m].corrected_at is None]


def newest_facts(engine: "Engine", scope: str, limit: int = 50, *, fact: Optional[dict] = None,
                 source: Optional[str] = None) -> list[Memory]:
    """The scope's facts without a query, newest first: those whose given parts (`subject`,
    `predicate`, `object`) match, ignoring case, and whose source (receipt) starts with `source`
    (looked for among the newest FACT_SCAN matching facts)."""
    scope = scope_of(scope)
    parts = {k: clean(v) for k, v in (fact or {}).items() if isinstance(v, str) and clean(v).strip()}
    source = clean(source) if isinstance(source, str) and clean(source).strip() else None
    ids = _rows.facts_matching(engine.store, scope, parts.get("subject"), parts.get("predicate"), parts.get("object"),
                                limit=FACT_SCAN if source else limit)
    found = engine.store.get(ids, scope)
    return [found[i] for i in ids if i in found and (not source or found[i].source.startswith(source))][:limit]


def page(engine: "Engine", scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
         state: Optional[str] = None, limit: int = 50, offset: int = 0) -> tuple[list[Memory], int]:
    """A page of the scope's memories, newest first, with the total that match."""
    if state is not None and state not in lifecycle.LIVE_STATES:
        raise InvalidInput(f"Unknown state {state!r}; choose one of {', '.join(lifecycle.LIVE_STATES)}.")
    return engine.store.page(scope_of(scope), tier=tier_of(tier), tags=tags_of(tags), state=state,
                             limit=limit, offset=offset)


Meaning = dict[str, tuple[float, tuple[int, ...]]]  # memory id -> (best cosine, its units matched)


def _vector_search(engine: "Engine", scope: str, query: str,
                   searched: Optional[dict] = None) -> tuple[dict[str, list[str]], Meaning]:
    """Rankings by cosine similarity: of the memories alone, in context, and by their best
    sentence; and each memory found's best cosine in any view with the sentences (units.py) it
    matched by, best first; ({}, {}) if no index. With `searched` (a dict), `no_index` when there
    is none, else `nearest`: the best cosine of every memory the views gave, below the floor too
    (what why-not says of a memory no ranking found)."""
    try:
        engine.indexer.settle(scope)  # this process's own last writes first (bounded)
        vector = query_vector(engine.indexer, query)
        if vector is None:
            if searched is not None:
                searched["no_index"] = True
            return {}, {}
        nearest = {} if searched is not None else None
        # an embedded index's views side by side (Chroma answers outside the GIL, and a fresh
        # process's first query of a view reads its HNSW index from disk); a server's one after
        # another, as before (a server that is away fails the first, and its back-off counts once)
        vectors = engine.indexer.vectors
        found = _vector_rankings(vectors, scope, vector, nearest, engine.pool if vectors.embedded else None)
        if searched is not None:
            searched["nearest"] = nearest
        return found
    except Exception as exc:  # noqa: BLE001 - a failing index degrades recall only
        log.warning("hermes-cmms: vector search failed, keyword-only for this query: %s", exc)
        return {}, {}


VIEW_QUERIES = (("vector", "content", CANDIDATES), ("vector_context", "context", CANDIDATES),
                ("vector_sentences", UNITS, SENTENCE_CANDIDATES))  # several sentences a memory


def _vector_rankings(vectors, scope: str, vector, nearest: Optional[dict] = None,
                     pool: Optional[Executor] = None) -> tuple[dict[str, list[str]], Meaning]:
    """The three vector rankings of one query vector, each cut at VECTOR_FLOOR, and each
    memory's best cosine with the units (sentence runs, by position) it matched by, best first;
    `nearest` (a dict) gets every memory's best cosine, those below the floor too. With `pool`,
    the three views are asked side by side on it (see _vector_search); else one after another."""
    best: dict[str, float] = {}
    units: dict[str, list[int]] = {}
    found = {}
    answers = side_by_side(pool, [functools.partial(vectors.query, scope, vector, many, view)
                                  for _, view, many in VIEW_QUERIES])
    for (name, view, _), answer in zip(VIEW_QUERIES, answers):
        ranked = []
        for item, similarity in answer:
            memory_id, position = (owner(item), item.rpartition(":")[2]) if view == UNITS else (item, "")
            if nearest is not None:
                nearest[memory_id] = max(nearest.get(memory_id, similarity), similarity)
            if similarity < VECTOR_FLOOR:
                continue
            best[memory_id] = max(best.get(memory_id, similarity), similarity)
            if position.isdigit():
                units.setdefault(memory_id, []).append(int(position))
            ranked.append(memory_id)
        found[name] = list(dict.fromkeys(ranked))[:CANDIDATES]
    return found, {m: (similarity, tuple(units.get(m, ()))) for m, similarity in best.items()}


def side_by_side(pool: Optional[Executor], calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's answer, in order: the first made on this thread, the others on `pool` meanwhile.
    A call no worker has started by the time its answer is wanted is made here instead, so a
    pool whose every worker waits this way (searches at once on a pool task each) never
    deadlocks; without a pool, or once it is shut down, every call is made here."""
    futures: list[Optional[Future]] = []
    for call in calls[1:]:
        try:
            futures.append(pool.submit(call) if pool is not None else None)
        except RuntimeError:  # (shut down: the service is closing)
            futures.append(None)
    answers = [calls[0]()] if calls else []
    for call, future in zip(calls[1:], futures):
        answers.append(call() if future is None or future.cancel() else future.result())
    return answers


def _without(query: str, words: set[str]) -> str:
    """The query less the given (lower-case) words, matched as whole words in any case."""
    for word in words:
        query = re.sub(rf"\b{re.escape(word)}\b", " ", query, flags=re.IGNORECASE)
    return query
