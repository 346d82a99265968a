"""The recall's SQL: its events (which memories each recall put in the block, at which rank:
ids and ranks only, never text; kept for a bounded time and count), the sessions and timelines
the history reads, and the rows a search narrows its candidates by (speakers, filters, facts).
The tables, and their rows gone with a forget, are the store's (store/recall_events.py)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

from sqlalchemy import Connection, delete, func, insert, select

from ..store._browse import Filters, clauses
from ..store._forget import forgetting
from ..store._rows import _memory
from ..store.models import ConversationSession, Fact, Memory
from ..store.recall_events import RecalledMemory, RecallEvent
from ..store.store import fold, live

if TYPE_CHECKING:
    from ..store.store import Store

KEEP_DAYS = 30  # an event older than this goes at the next pruning
PRUNE_EVERY = 32  # a scope's old events are pruned when its newest event id is a multiple of this


def record(store: Store, scope: str, session_id: Optional[str], memory_ids: Sequence[str], keep: int,
           at: Optional[float] = None, kind: str = "turn") -> None:
    """One recall's event of `kind` (RECALL_KINDS), made `at` (now): `memory_ids` in block order
    (rank 1 first), those still stored (a memory forgotten meanwhile is never named; none left,
    no event), with the turn it was recalled for (the one after the session's last turn stored
    before `at`). Every PRUNE_EVERY events the scope keeps only its newest `keep` of KEEP_DAYS."""
    now = time.time() if at is None else at
    turn = (select(func.coalesce(func.max(Memory.turn), 0) + 1)
            .where(Memory.scope == scope, Memory.session_id == session_id, Memory.created_at < now)
            .scalar_subquery()) if session_id else None
    with store.writing([scope]) as conn:
        # (ids are unique store-wide, and were read from this scope)
        kept = set(conn.execute(select(Memory.id).where(Memory.id.in_(list(memory_ids)))).scalars())
        if not kept:
            return
        event = conn.execute(insert(RecallEvent).values(scope=scope, session_id=session_id, turn=turn, at=now, kind=kind)
                             .returning(RecallEvent.id)).scalar_one()
        conn.execute(insert(RecalledMemory), [{"event_id": event, "rank": rank, "memory_id": m}
                                              for rank, m in enumerate(memory_ids, 1) if m in kept])
        if event % PRUNE_EVERY == 0:
            prune(conn, scope, keep, now - KEEP_DAYS * 86400)


def prune(conn: Connection, scope: str, keep: int, before: float) -> None:
    """Drop the scope's events beyond its newest `keep`, and those older than `before`."""
    last = conn.execute(select(RecallEvent.id).where(RecallEvent.scope == scope)
                        .order_by(RecallEvent.id.desc()).offset(keep).limit(1)).scalar()
    old = RecallEvent.scope == scope
    old = old & ((RecallEvent.id <= last) | (RecallEvent.at < before)) if last is not None else old & (
        RecallEvent.at < before)
    ids = select(RecallEvent.id).where(old)
    conn.execute(delete(RecalledMemory).where(RecalledMemory.event_id.in_(ids)))
    conn.execute(delete(RecallEvent).where(old))


# -- reads -------------------------------------------------------------------------------


def _items(conn: Connection, event_ids: Sequence[int]) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = {e: [] for e in event_ids}
    if event_ids:
        for event_id, rank, memory_id in conn.execute(
                select(RecalledMemory.event_id, RecalledMemory.rank, RecalledMemory.memory_id)
                .where(RecalledMemory.event_id.in_(list(event_ids))).order_by(RecalledMemory.rank)):
            found[event_id].append({"memory_id": memory_id, "rank": rank})
    return found


def _shown(event: RecallEvent, items: list[dict]) -> dict:
    return {"scope": event.scope, "session_id": event.session_id, "turn": event.turn, "at": event.at,
            "kind": event.kind, "recalled": items}


def recent(store: Store, scope: Optional[str], limit: int) -> list[dict]:
    """The newest `limit` recall events (of `scope`, or of every scope), newest first."""
    query = select(RecallEvent).order_by(RecallEvent.id.desc()).limit(limit)
    with store.read() as conn:
        events = list(conn.execute(query.where(RecallEvent.scope == scope) if scope is not None else query))
        items = _items(conn, [e.id for e in events])
    return [_shown(e, items[e.id]) for e in events]


def of_session(store: Store, scope: str, session_id: str) -> list[dict]:
    """A session's recall events, oldest first by when each recall began (a turn's early recall
    that ended after the one its prompt made again comes first)."""
    with store.read() as conn:
        events = list(conn.execute(select(RecallEvent).where(
            RecallEvent.scope == scope, RecallEvent.session_id == session_id).order_by(RecallEvent.at, RecallEvent.id)))
        items = _items(conn, [e.id for e in events])
    return [_shown(e, items[e.id]) for e in events]


def recalled_ids(store: Store, scope: str, session_id: str) -> set[str]:
    """Every memory the session's turns were given in a block (not a compaction's summary)."""
    with store.read() as conn:
        return set(conn.execute(select(RecalledMemory.memory_id).join(
            RecallEvent, RecallEvent.id == RecalledMemory.event_id).where(
            RecallEvent.scope == scope, RecallEvent.session_id == session_id, RecallEvent.kind == "turn")).scalars())


def sessions(store: Store, scope: str, offset: int, limit: int) -> list[dict]:
    """The scope's sessions, newest first: when each started, its turns, when flushed, and how
    many of its turns were given a block."""
    with store.read() as conn:
        rows = list(conn.execute(select(ConversationSession).where(ConversationSession.scope == scope)
                                 .order_by(ConversationSession.started_at.desc(), ConversationSession.session_id)
                                 .offset(offset).limit(limit)))
        counts = dict(conn.execute(select(RecallEvent.session_id, func.count(func.distinct(RecallEvent.turn))).where(
            RecallEvent.scope == scope, RecallEvent.kind == "turn",
            RecallEvent.session_id.in_([r.session_id for r in rows]))
            .group_by(RecallEvent.session_id)).all()) if rows else {}
        firsts = _first_messages(conn, scope, [r.session_id for r in rows]) if rows else {}
    return [{"session_id": r.session_id, "started_at": r.started_at, "turns": r.last_turn,
             "flushed_at": r.flushed_at, "recalls": counts.get(r.session_id, 0),
             "first": firsts.get(r.session_id)} for r in rows]


FIRST_CHARS = 120  # of a session's first user message, as a list of sessions shows it


def _first_messages(conn: Connection, scope: str, session_ids: list[str]) -> dict[str, str]:
    """Each session's first user message (its start), as Hermes' own list of sessions shows it."""
    seqs = select(func.min(Memory.seq)).where(Memory.scope == scope, Memory.session_id.in_(session_ids),
                                              Memory.role == "user").group_by(Memory.session_id)
    return {sid: content[:FIRST_CHARS] for sid, content in conn.execute(
        select(Memory.session_id, Memory.content).where(Memory.seq.in_(seqs)))}


def session_memories(store: Store, scope: str, session_id: str) -> list[Memory]:
    """The memories stored in a session, in the order written."""
    with store.read() as conn:
        return [_memory(row) for row in conn.execute(select(Memory).where(
            Memory.scope == scope, Memory.session_id == session_id).order_by(Memory.seq))]


def expired_at(store: Store, scope: str, memory_id: str) -> Optional[float]:
    """When a memory of `scope` that reads as gone expired (working memory past its time),
    None if it is not such a memory (absent, of another scope, or not expired)."""
    with store.read() as conn:
        row = conn.execute(select(Memory.scope, Memory.expires_at).where(Memory.id == memory_id)).first()
    return row.expires_at if row is not None and row.scope == scope and row.expires_at is not None \
        and row.expires_at <= time.time() else None


# -- a search's candidates ---------------------------------------------------------------

def speakers(store: Store, scope: str, names: Iterable[str]) -> set[str]:
    """The `names` that speak in transcript-style memories of `scope` ("Name: ...")."""
    names = list(names)
    if not names:
        return set()
    with store.read() as conn:
        if forgetting(conn, scope):
            return set()
        return set(conn.execute(select(Memory.speaker).distinct()
                                .where(Memory.scope == scope, Memory.speaker.in_(names))).scalars())


def filtered_ids(store: Store, scope: str, filters: Filters, ids: Sequence[str]) -> set[str]:
    """Those of `ids` (memories of `scope`) that match `filters`."""
    if not ids:
        return set()
    now = time.time()
    with store.read() as conn:
        if forgetting(conn, scope):
            return set()
        found = set()
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            found |= set(conn.execute(select(Memory.id).where(
                Memory.id.in_(part), *clauses(scope, filters, now))).scalars())
        return found


def facts_matching(store: Store, scope: str, subject: Optional[str] = None, predicate: Optional[str] = None,
                   obj: Optional[str] = None, limit: int = 500) -> list[str]:
    """Ids of the scope's facts whose given parts equal these (ignoring case, in any script),
    newest first."""
    query = select(Fact.memory_id).join(Memory, Memory.id == Fact.memory_id).where(
        Fact.scope == scope, live(time.time()))
    for column, value in ((Fact.subject_key, subject), (Fact.predicate_key, predicate),
                          (Fact.object_key, obj)):
        if value is not None:
            query = query.where(column == fold(value))
    with store.read() as conn:
        if forgetting(conn, scope):
            return []
        return list(conn.execute(query.order_by(Memory.seq.desc()).limit(limit)).scalars())
