"""Recall events' tables: which memories each recall put in the block, at which rank (ids and
ranks only, never text), per scope, session and turn; their migration, and their rows gone with
a forgotten memory (drop_memories) or a forgotten scope (drop_scope). What a recall writes and
the history reads are recall/_rows.py."""
from __future__ import annotations

from typing import Optional, Sequence

from sqlalchemy import Connection, delete, select, text
from sqlmodel import Field, SQLModel


class RecallEvent(SQLModel, table=True):
    """One recall (a Hermes prefetch, a recall verb): when, in which session and turn."""

    __tablename__ = "recall_events"

    id: Optional[int] = Field(default=None, primary_key=True)
    scope: str
    session_id: Optional[str] = None
    turn: Optional[int] = None  # the turn the block was recalled for (the session's next turn)
    at: float
    kind: str = "turn"  # "turn": in front of the model for that turn; "summary": a compaction's (RECALL_KINDS)


class RecalledMemory(SQLModel, table=True):
    """A memory one recall put in its block, at its rank (1: the block's first line)."""

    __tablename__ = "recalled_memories"

    event_id: int = Field(primary_key=True)
    rank: int = Field(primary_key=True)
    memory_id: str = Field(max_length=32)


def migrate(conn: Connection) -> None:
    """Migration 0012_recall_events."""
    serial = "BIGSERIAL PRIMARY KEY" if conn.dialect.name == "postgresql" else "INTEGER PRIMARY KEY AUTOINCREMENT"
    for statement in (
            f"""CREATE TABLE recall_events (
                id {serial},
                scope TEXT NOT NULL,
                session_id TEXT,
                turn INTEGER,
                at DOUBLE PRECISION NOT NULL)""",
            "CREATE INDEX ix_recall_events_scope ON recall_events (scope, id)",
            "CREATE INDEX ix_recall_events_session ON recall_events (scope, session_id, id)",
            """CREATE TABLE recalled_memories (
                event_id BIGINT NOT NULL,
                rank INTEGER NOT NULL,
                memory_id VARCHAR(32) NOT NULL,
                PRIMARY KEY (event_id, rank))""",
            "CREATE INDEX ix_recalled_memories_memory ON recalled_memories (memory_id)"):
        conn.execute(text(statement))


def add_kind(conn: Connection) -> None:
    """Migration 0016_recall_kind: which recalls a turn was given and which went to the summary
    of a compacted conversation (not a turn); events before it read as turns."""
    conn.execute(text("ALTER TABLE recall_events ADD COLUMN kind VARCHAR(8) NOT NULL DEFAULT 'turn'"))


def naming(ids: Sequence[str]):
    """The recall events' lines that name these memories: what drop_memories deletes and a
    forget's preview counts."""
    return RecalledMemory.memory_id.in_(list(ids))


def drop_memories(conn: Connection, ids: Sequence[str]) -> None:
    """No recall event names these (deleted) memories any more."""
    conn.execute(delete(RecalledMemory).where(naming(ids)))


def drop_some(conn: Connection, scope: str, size: int) -> int:
    """Up to `size` of a forgotten scope's recall events, with their lines; how many."""
    ids = list(conn.execute(select(RecallEvent.id).where(RecallEvent.scope == scope).limit(size)).scalars())
    if ids:
        conn.execute(delete(RecalledMemory).where(RecalledMemory.event_id.in_(ids)))
        conn.execute(delete(RecallEvent).where(RecallEvent.id.in_(ids)))
    return len(ids)


def drop_scope(conn: Connection, scope: str) -> None:
    """A forgotten scope's recall events, every one."""
    conn.execute(delete(RecalledMemory).where(RecalledMemory.event_id.in_(
        select(RecallEvent.id).where(RecallEvent.scope == scope))))
    conn.execute(delete(RecallEvent).where(RecallEvent.scope == scope))
