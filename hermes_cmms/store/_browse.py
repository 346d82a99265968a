"""The store's browsing rows: filtered pages of memories (every filter in SQL, a keyword match
among them), which a browse and a filtered search read. The counts of each scope and what a
memory's page shows beside it are ops/_rows/browse.py."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sqlalchemy import Connection, func, or_, select

from ..common.text import bounded_key, like_literal
from ._forget import forgetting
from ._rows import _memory
from .models import Fact, Memory

SORTS = ("newest", "oldest", "confidence", "relevance")


@dataclass(frozen=True)
class Filters:
    """What a page of memories is narrowed to; every field applies in SQL. `state`: None (any),
    'active' (current: neither superseded nor expired), 'superseded', 'expired', 'all', or a
    lifecycle state (current memories in it); `source` a receipt prefix; `fact` the parts of a
    fact ({subject, predicate, object}: those given, matched folded as Store.facts_matching)."""

    tier: Optional[str] = None
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    state: Optional[str] = None
    since: Optional[float] = None
    until: Optional[float] = None
    source: Optional[str] = None
    fact: dict = field(default_factory=dict)


def clauses(scope: str, filters: Filters, now: float) -> list:
    """The WHERE clauses of `filters` on the memories of `scope`."""
    where = [Memory.scope == scope]
    if filters.tier is not None:
        where.append(Memory.tier == filters.tier)
    if filters.kinds:
        where.append(Memory.kind.in_(list(filters.kinds)))
    for tag in filters.tags:  # tags are a JSON list: the JSON-quoted tag, LIKE-escaped
        where.append(Memory.tags.like(f"%{like_literal(json.dumps(tag))}%", escape="\\"))
    if filters.since is not None:
        where.append(Memory.created_at >= filters.since)
    if filters.until is not None:
        where.append(Memory.created_at < filters.until)
    if filters.source:  # a prefix, exactly (LIKE ignores case in SQLite)
        where.append(func.substr(Memory.source, 1, len(filters.source)) == filters.source)
    if filters.fact:
        where.append(Memory.id.in_(_fact_ids(scope, filters.fact)))
    return where + _state(filters.state, now)


def _state(state: Optional[str], now: float) -> list:
    live = or_(Memory.expires_at.is_(None), Memory.expires_at > now)
    if state in (None, "all"):
        return []
    if state == "live":  # (search: superseded or not, not expired)
        return [live]
    if state == "expired":
        return [Memory.expires_at.is_not(None), Memory.expires_at <= now]
    if state == "superseded":
        return [Memory.superseded_by.is_not(None), live]
    current = [Memory.superseded_by.is_(None), live]
    return current if state == "active" else [*current, Memory.state == state]


def _fact_ids(scope: str, parts: dict):
    query = select(Fact.memory_id).where(Fact.scope == scope)
    for column, name in ((Fact.subject_key, "subject"), (Fact.predicate_key, "predicate"),
                         (Fact.object_key, "object")):
        if parts.get(name) is not None:
            query = query.where(column == bounded_key(" ".join(parts[name].split()).casefold()))  # as _fold
    return query


def _order(sort: str, score=None) -> list:
    if sort == "oldest":
        return [Memory.created_at.asc(), Memory.seq.asc()]
    if sort == "confidence":
        return [Memory.confidence.desc(), Memory.seq.desc()]
    if sort == "relevance" and score is not None:
        return [score.desc(), Memory.seq.desc()]
    return [Memory.created_at.desc(), Memory.seq.desc()]


class BrowseRows:
    """Store methods of browsing. Mixed into Store: they use its read() connections and its
    keyword index."""

    def browse_rows(self, scope: str, filters: Filters, *, query: Optional[str] = None, every: bool = True,
                    ids: Optional[Sequence[str]] = None, with_context: bool = False, sort: str = "newest",
                    offset: int = 0, limit: int = 50, count: bool = True
                    ) -> tuple[list[tuple[Memory, Optional[float]]], int]:
        """One page of the memories of `scope` matching `filters` (and, with `query`, the keyword
        index: every one of its words, or any with `every` false; with `ids`, only those), sorted,
        with the keyword score of each (None without a query), and how many match in all. A scope
        being forgotten has none. Without `count`, the total is not counted (-1).

        The page is chosen by seq alone (the sort keys and the filters read from indexes where
        they can) and only its rows are read whole. Sorted other than by relevance, the keyword
        matches are not scored: only the page's rows are (one range of the index)."""
        now = time.time()
        with self.read() as conn:
            if forgetting(conn, scope):
                return [], 0
            where = clauses(scope, filters, now)
            if ids is not None:
                where.append(Memory.id.in_(list(ids)))
            scored = query is not None and sort == "relevance"
            found, score = None, None
            if query is not None:
                matches = self.keyword.matches(conn, scope, query, with_context, every, scored=scored)
                if matches is None:
                    return [], 0
                found = _matched(conn, matches, walk=not scored and _common(conn, matches))
                if found is None:  # many matches, newest (or oldest ...) first: walk the sort's index
                    where.append(Memory.seq.in_(select(matches.subquery().c.seq)))
                score = found.c.score if scored else None
            joined = Memory.__table__ if found is None else Memory.__table__.join(found, found.c.seq == Memory.seq)
            counted = select(func.count()).select_from(joined).where(*where)
            # ranked by relevance, every match is scored and sorted anyway: counted in the same pass
            columns = [score, func.count().over().label("total")] if scored and count else [score] if scored else []
            page = conn.execute(select(Memory.seq, *columns).select_from(joined).where(*where)
                                .order_by(*_order(sort, score)).offset(offset).limit(limit)).all()
            if not count:
                total = -1
            elif scored and (page or not offset):
                total = page[0].total if page else 0
            else:
                total = conn.execute(counted).scalar_one()
            rows = _by_seq(conn, [row.seq for row in page])
            scores = ({row.seq: row.score for row in page} if scored else
                      _scores(conn, self.keyword, scope, query, with_context, every, list(rows)) if query is not None
                      else {})
            return [(rows[row.seq], scores.get(row.seq) if query is not None else None)
                    for row in page if row.seq in rows], total

COMMON_MATCHES = 2000  # above this many keyword matches, a sorted page walks the sort's index instead


def _common(conn: Connection, matches) -> bool:
    """Whether the keyword index holds more than COMMON_MATCHES rows for these matches (it
    counts its own rows without reading the table: ~10 ms for 40,000)."""
    sub = select(matches.subquery().c.seq).limit(COMMON_MATCHES + 1).subquery()
    return conn.execute(select(func.count()).select_from(sub)).scalar_one() > COMMON_MATCHES


def _matched(conn: Connection, matches, walk: bool):
    """The keyword matches as a table to join, read once (else SQLite reads the index again
    for every row of the scope); None when a page should rather walk the sort's index (the
    matches are then a `seq IN` filter)."""
    if walk:
        return None
    found = matches.cte("kw")
    if conn.dialect.server_version_info >= ((3, 35) if conn.dialect.name == "sqlite" else (12,)):
        found = found.prefix_with("MATERIALIZED")  # (older versions know no such hint)
    return found


def _by_seq(conn: Connection, seqs: list[int]) -> dict[int, Memory]:
    if not seqs:
        return {}
    return {row.seq: _memory(row) for row in conn.execute(select(Memory).where(Memory.seq.in_(seqs)))}


def _scores(conn: Connection, keyword, scope: str, query: str, with_context: bool, every: bool,
            seqs: list[int]) -> dict[int, float]:
    """The keyword scores of these rows (one page), read from one range of the index."""
    if not seqs:
        return {}
    ranged = keyword.matches(conn, scope, query, with_context, every, between=(min(seqs), max(seqs)))
    wanted = set(seqs)
    return {seq: score for seq, score in conn.execute(ranged) if seq in wanted}
