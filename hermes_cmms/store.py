"""The SQL store: engine setup, migrations on open, and every read and write of rows."""
from __future__ import annotations

import json
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

from sqlalchemy import Connection, create_engine, delete, func, insert, or_, select, text, update
from sqlalchemy.engine import Engine

from . import _migrations, _sqlite
from .errors import StoreUnavailable
from .keyword import KeywordIndex, keyword_index_for
from .models import ConversationSession, Fact, IndexState, Memory, Outbox
from .text import content_hash, speaker_of

CONTEXT_CHARS = 400


def _memory(row) -> Memory:
    """A Memory from a row we wrote ourselves: no re-validation needed."""
    return Memory.model_construct(**row._mapping)


def _tail(text: Optional[str]) -> Optional[str]:
    """The end of the previous message: where a question usually sits."""
    return text[-CONTEXT_CHARS:] if text else None


@dataclass
class NewMemory:
    """What a caller hands the store to remember (already redacted and cleaned)."""

    scope: str
    content: str
    kind: str = "message"
    tier: str = "episodic"
    role: Optional[str] = None
    session_id: Optional[str] = None
    source: str = ""
    tags: Sequence[str] = ()
    confidence: float = 1.0
    expires_at: Optional[float] = None
    fact: Optional[tuple[str, str, str]] = None  # (subject, predicate, object)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite.make_engine(url)
    return create_engine(url, pool_pre_ping=True)


def _live(now: float):
    """Not past its expiry time (working memory with a TTL)."""
    return or_(Memory.expires_at.is_(None), Memory.expires_at > now)


def _filtered(query, tier: Optional[str], tags: Sequence[str]):
    """`query` narrowed to a tier and to memories carrying every one of `tags`."""
    if tier is not None:
        query = query.where(Memory.tier == tier)
    for tag in tags:  # tags are a JSON list; match the JSON-quoted tag, LIKE-escaped
        quoted = json.dumps(tag).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(Memory.tags.like(f"%{quoted}%", escape="\\"))
    return query


class Store:
    """Row-level access to the memories, sessions and outbox tables."""

    def __init__(self, url: str):
        self.url = url
        try:
            self.engine = make_engine(url)
            self.keyword: KeywordIndex = keyword_index_for(self.engine.dialect.name)
            with self.write() as conn:
                _migrations.apply(conn, _migrations.CORE_MIGRATIONS + self.keyword.migrations)
        except Exception as exc:  # noqa: BLE001 - one clear message for any driver failure
            raise StoreUnavailable(f"Cannot open the memory store at {url}: {exc}") from exc
        self._write_lock = threading.Lock()  # one writer per process; others wait on busy_timeout

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self.engine.connect().execution_options(cmms_write=True) as conn, conn.begin():
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    # -- writes ---------------------------------------------------------------------------

    def add(self, items: Sequence[NewMemory], *, turn_of: Optional[tuple[str, str]] = None) -> list[str]:
        """Insert memories and their outbox rows in one transaction; return their ids.

        With `turn_of=(scope, session_id)` the session's turn counter advances by one and the
        items are stamped with that turn number.
        """
        now = time.time()
        rows = [self._row(item, now) for item in items]
        with self._write_lock, self.write() as conn:
            if turn_of:
                turn = self._next_turn(conn, *turn_of, now)
                previous = self._last_message(conn, *turn_of)
                for row in rows:
                    row["turn"], row["context"] = turn, _tail(previous)
                    previous = row["content"]
            facts = [{"memory_id": row["id"], "scope": item.scope, "subject": item.fact[0],
                      "predicate": item.fact[1], "object": item.fact[2]}
                     for item, row in zip(items, rows) if item.fact]
            if rows:
                conn.execute(insert(Memory), rows)
                if facts:
                    conn.execute(insert(Fact), facts)
                conn.execute(insert(Outbox), [
                    {"memory_id": r["id"], "scope": r["scope"], "op": "upsert", "created_at": now}
                    for r in rows])
        return [row["id"] for row in rows]

    @staticmethod
    def _row(item: NewMemory, now: float) -> dict:
        return {
            "id": uuid.uuid4().hex, "scope": item.scope, "tier": item.tier, "kind": item.kind,
            "role": item.role, "content": item.content, "content_hash": content_hash(item.content),
            "session_id": item.session_id, "turn": None, "context": None, "source": item.source,
            "tags": json.dumps(list(item.tags)), "confidence": item.confidence, "state": "active",
            "superseded_by": None, "created_at": now, "updated_at": now,
            "expires_at": item.expires_at, "speaker": speaker_of(item.content),
        }

    @staticmethod
    def _next_turn(conn: Connection, scope: str, session_id: str, now: float) -> int:
        key = {"scope": scope, "session_id": session_id}
        current = conn.execute(select(ConversationSession.last_turn).filter_by(**key)).scalar()
        if current is None:
            conn.execute(insert(ConversationSession).values(**key, started_at=now, last_turn=1))
            return 1
        conn.execute(update(ConversationSession).filter_by(**key)
                     .values(last_turn=current + 1, flushed_at=None))
        return current + 1

    @staticmethod
    def _last_message(conn: Connection, scope: str, session_id: str) -> Optional[str]:
        return conn.execute(select(Memory.content)
                            .where(Memory.scope == scope, Memory.session_id == session_id,
                                   Memory.kind == "message")
                            .order_by(Memory.seq.desc()).limit(1)).scalar()

    def previous_message_ids(self, scope: str, memories: Sequence[Memory]) -> dict[str, str]:
        """For each memory, the id of the message before it in its session (when there is one)."""
        query = (select(Memory.id).where(Memory.scope == scope, Memory.kind == "message")
                 .order_by(Memory.seq.desc()).limit(1))
        found = {}
        with self.read() as conn:
            for m in memories:
                if m.session_id is not None and m.seq is not None:
                    before = conn.execute(query.where(Memory.session_id == m.session_id,
                                                      Memory.seq < m.seq)).scalar()
                    if before:
                        found[m.id] = before
        return found

    def delete(self, scope: str, memory_id: str) -> bool:
        """Delete one memory of `scope` and queue its vector removal; False if absent."""
        return bool(self.delete_where(scope, ids=[memory_id]))

    def delete_where(self, scope: str, *, ids: Optional[Sequence[str]] = None,
                     tier: Optional[str] = None, tags: Sequence[str] = ()) -> list[str]:
        """Delete the memories of `scope` matching every filter given (at least one); return
        their ids. Their facts go too, and their vectors are queued for removal."""
        if ids is None and tier is None and not tags:
            raise ValueError("delete_where needs a filter")
        query = _filtered(select(Memory.id).where(Memory.scope == scope), tier, tags)
        if ids is not None:
            query = query.where(Memory.id.in_(list(ids)))
        with self._write_lock, self.write() as conn:
            gone = list(conn.execute(query).scalars())
            for start in range(0, len(gone), 500):
                part = gone[start:start + 500]
                conn.execute(delete(Fact).where(Fact.memory_id.in_(part)))
                conn.execute(delete(Memory).where(Memory.id.in_(part)))
                conn.execute(insert(Outbox), [{"memory_id": i, "scope": scope, "op": "delete",
                                               "created_at": time.time()} for i in part])
        return gone

    def mark_flushed(self, scope: str, session_id: str) -> bool:
        """Record that a session was flushed; False when it was already flushed or unknown."""
        with self._write_lock, self.write() as conn:
            done = conn.execute(update(ConversationSession)
                                .where(ConversationSession.scope == scope,
                                       ConversationSession.session_id == session_id,
                                       ConversationSession.flushed_at.is_(None))
                                .values(flushed_at=time.time()))
            return bool(done.rowcount)

    # -- outbox ---------------------------------------------------------------------------

    def pending(self, limit: int) -> list[Outbox]:
        with self.read() as conn:
            rows = conn.execute(select(Outbox).order_by(Outbox.id).limit(limit))
            return [Outbox.model_validate(row._mapping) for row in rows]

    def done(self, outbox_ids: Sequence[int]) -> None:
        """Forget finished outbox rows and bump the index generation other processes watch."""
        if outbox_ids:
            with self._write_lock, self.write() as conn:
                conn.execute(delete(Outbox).where(Outbox.id.in_(list(outbox_ids))))
                conn.execute(update(IndexState).where(IndexState.name == "vectors")
                             .values(generation=IndexState.generation + 1))

    def index_generation(self) -> int:
        with self.read() as conn:
            return conn.execute(select(IndexState.generation)
                                .where(IndexState.name == "vectors")).scalar() or 0

    def failed(self, outbox_ids: Sequence[int], error: str) -> None:
        if outbox_ids:
            with self._write_lock, self.write() as conn:
                conn.execute(update(Outbox).where(Outbox.id.in_(list(outbox_ids)))
                             .values(attempts=Outbox.attempts + 1, last_error=error[:500]))

    # -- reads ----------------------------------------------------------------------------

    def get(self, ids: Sequence[str], scope: str) -> dict[str, Memory]:
        """The memories among `ids` that belong to `scope` (never any other scope)."""
        if not ids:
            return {}
        with self.read() as conn:
            # Look up by the unique id index alone (a scope filter in SQL tempts the planner into
            # scanning the whole scope), then keep only this scope's rows.
            rows = conn.execute(select(Memory).where(Memory.id.in_(list(ids))))
            now = time.time()
            return {row.id: _memory(row) for row in rows
                    if row.scope == scope and (row.expires_at is None or row.expires_at > now)}

    def page(self, scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
             limit: int = 50, offset: int = 0) -> tuple[list[Memory], int]:
        """One page of a scope's live memories, newest first, and how many match in all."""
        live = _filtered(select(Memory).where(Memory.scope == scope, _live(time.time())), tier, tags)
        with self.read() as conn:
            total = conn.execute(select(func.count()).select_from(live.subquery())).scalar_one()
            rows = conn.execute(live.order_by(Memory.seq.desc()).limit(limit).offset(offset))
            return [_memory(row) for row in rows], total

    def facts(self, ids: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """(subject, predicate, object) of the fact memories among `ids`."""
        if not ids:
            return {}
        with self.read() as conn:
            rows = conn.execute(select(Fact).where(Fact.memory_id.in_(list(ids))))
            return {row.memory_id: (row.subject, row.predicate, row.object) for row in rows}

    def facts_matching(self, scope: str, subject: Optional[str] = None, predicate: Optional[str] = None,
                       obj: Optional[str] = None, limit: int = 500) -> list[str]:
        """Ids of the scope's facts whose given parts equal these (ignoring case), newest first."""
        query = select(Fact.memory_id).join(Memory, Memory.id == Fact.memory_id).where(
            Fact.scope == scope, _live(time.time()))
        for column, value in ((Fact.subject, subject), (Fact.predicate, predicate), (Fact.object, obj)):
            if value is not None:
                query = query.where(func.lower(column) == value.lower())
        with self.read() as conn:
            return list(conn.execute(query.order_by(Memory.seq.desc()).limit(limit)).scalars())

    def keyword_search(self, scope: str, query: str, limit: int,
                       with_context: bool = False) -> list[tuple[str, float]]:
        with self.read() as conn:
            return self.keyword.search(conn, scope, query, limit, with_context)

    def speakers(self, scope: str, names: Iterable[str]) -> set[str]:
        """The `names` that speak in transcript-style memories of `scope` ("Name: ...")."""
        names = list(names)
        if not names:
            return set()
        with self.read() as conn:
            return set(conn.execute(select(Memory.speaker).distinct()
                                    .where(Memory.scope == scope, Memory.speaker.in_(names))).scalars())

    def recent(self, scope: str, limit: int) -> list[Memory]:
        with self.read() as conn:
            rows = conn.execute(select(Memory).where(Memory.scope == scope, Memory.state == "active")
                                .order_by(Memory.created_at.desc()).limit(limit))
            return [_memory(row) for row in rows]

    def unflushed_sessions(self, scope: Optional[str] = None,
                           session_id: Optional[str] = None) -> list[tuple[str, str]]:
        query = select(ConversationSession.scope, ConversationSession.session_id).where(
            ConversationSession.flushed_at.is_(None))
        if scope is not None:
            query = query.where(ConversationSession.scope == scope)
        if session_id is not None:
            query = query.where(ConversationSession.session_id == session_id)
        with self.read() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def counts(self) -> dict[str, int]:
        with self.read() as conn:
            return {
                "memories": conn.execute(select(func.count()).select_from(Memory)).scalar_one(),
                "scopes": conn.execute(select(func.count(func.distinct(Memory.scope)))).scalar_one(),
                "sessions": conn.execute(select(func.count()).select_from(ConversationSession)).scalar_one(),
                "outbox": conn.execute(select(func.count()).select_from(Outbox)).scalar_one(),
            }

    def integrity(self) -> str:
        """'ok' or the database's own description of what is wrong."""
        with self.read() as conn:
            if self.engine.dialect.name == "sqlite":
                return _sqlite.quick_check(conn)
            conn.execute(text("SELECT 1"))
            return "ok"
