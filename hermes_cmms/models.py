"""SQLModel tables: the store is the source of truth; every index is derived from it."""
from __future__ import annotations

from typing import Optional

from sqlmodel import Field, SQLModel


class Memory(SQLModel, table=True):
    """One remembered item: a verbatim message, an observation or a note."""

    __tablename__ = "memories"

    seq: Optional[int] = Field(default=None, primary_key=True)  # physical key, keyword-index rowid
    id: str = Field(unique=True, max_length=32)  # public id
    scope: str
    tier: str = "episodic"  # working | episodic | semantic
    kind: str = "message"  # message | observation | note
    role: Optional[str] = None  # user | assistant for messages
    content: str
    content_hash: str
    context: Optional[str] = None  # the message before it in its session (end of it), for search
    session_id: Optional[str] = None
    turn: Optional[int] = None
    source: str = ""  # receipt: which door and event wrote it
    tags: str = "[]"  # JSON list
    confidence: float = 1.0
    state: str = "active"
    superseded_by: Optional[str] = None
    created_at: float
    updated_at: float
    expires_at: Optional[float] = None  # working memory: never recalled after this time
    speaker: Optional[str] = None  # who speaks in a transcript line ("Alice: ..."), lower-cased


class Fact(SQLModel, table=True):
    """The subject-predicate-object reading of a fact memory (kind 'fact')."""

    __tablename__ = "facts"

    memory_id: str = Field(primary_key=True, max_length=32)
    scope: str
    subject: str
    predicate: str
    object: str


class IndexState(SQLModel, table=True):
    """A counter the vector-index writer bumps, so other processes know to re-read the index."""

    __tablename__ = "index_state"

    name: str = Field(primary_key=True)
    generation: int = 0


class ConversationSession(SQLModel, table=True):
    """A conversation session of one scope: turn counter and flush state."""

    __tablename__ = "sessions"

    scope: str = Field(primary_key=True)
    session_id: str = Field(primary_key=True)
    started_at: float
    last_turn: int = 0
    flushed_at: Optional[float] = None


class Outbox(SQLModel, table=True):
    """Pending vector-index work, written in the same transaction as the memory."""

    __tablename__ = "outbox"

    id: Optional[int] = Field(default=None, primary_key=True)
    memory_id: str
    scope: str
    op: str  # upsert | delete
    attempts: int = 0
    last_error: Optional[str] = None
    created_at: float


class SchemaMigration(SQLModel, table=True):
    """Names of the migrations applied to this database."""

    __tablename__ = "schema_migrations"

    name: str = Field(primary_key=True)
    applied_at: float
