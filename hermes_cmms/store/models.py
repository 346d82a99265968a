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
    access_count: int = 0  # times a duplicate reinforced it
    receipts: str = "[]"  # JSON list: the receipts of the duplicates folded into it
    reliability: float = 1.0  # confidence at write time (source reliability); decay starts here
    last_seen_at: Optional[float] = None  # written or last reinforced; age decay counts from here
    consolidated_at: Optional[float] = None  # when consolidation last looked at it (episodic)
    detail: Optional[str] = None  # JSON: the structured parts of a learned item (decision, skill, ...)
    pinned: int = 0  # 1: pinned by the user: never decays, expires or is consolidated
    corrected_at: Optional[float] = None  # when the user corrected it (superseded, never recalled again)


class Fact(SQLModel, table=True):
    """The subject-predicate-object reading of a fact memory (kind 'fact')."""

    __tablename__ = "facts"

    memory_id: str = Field(primary_key=True, max_length=32)
    scope: str
    subject: str
    predicate: str
    object: str
    subject_key: str = ""  # the parts case-folded, for matching in any case and script
    predicate_key: str = ""
    object_key: str = ""


class AuditEvent(SQLModel, table=True):
    """One entry of the audit trail: every write, tool call, lifecycle move and forget."""

    __tablename__ = "audit_log"

    id: Optional[int] = Field(default=None, primary_key=True)
    at: float
    action: str  # retain | remember | reinforce | supersede | merge | consolidate | lifecycle | forget | tool | ...
    actor: str = ""  # the receipt or door that acted
    scope: Optional[str] = None
    memory_id: Optional[str] = None
    detail: str = "{}"  # JSON
    snapshot: Optional[str] = None  # forget: the whole row as JSON, taken before deleting


class Link(SQLModel, table=True):
    """A learned memory and a memory it was learned from (its source turn or text)."""

    __tablename__ = "links"

    memory_id: str = Field(primary_key=True, max_length=32)
    source_id: str = Field(primary_key=True, max_length=32)
    scope: str


class Belief(SQLModel, table=True):
    """The proposition reading of a belief memory (kind 'belief')."""

    __tablename__ = "beliefs"

    memory_id: str = Field(primary_key=True, max_length=32)
    scope: str
    proposition_key: str  # the proposition, normalised and without its negation
    topic: str = ""  # what it is about (its subject), normalised
    polarity: int = 1  # 1: the proposition holds; -1: its negation
    creator: str = ""  # the door that first wrote it (e.g. 'mcp:set_belief'); its receipt may name another source


class Evidence(SQLModel, table=True):
    """One piece of evidence for (stance 1) or against (stance -1) a belief."""

    __tablename__ = "evidence"

    id: Optional[int] = Field(default=None, primary_key=True)
    belief_id: str = Field(max_length=32)
    scope: str
    memory_id: Optional[str] = Field(default=None, max_length=32)  # the memory that says so, if any
    source: str = ""  # the receipt
    stance: int = 1
    note: str = ""
    at: float
    source_type: str = ""  # fact | decision | observation | user_statement | belief ('' before 0010)
    source_ref: str = ""  # what it cites when that is no memory of the scope (an outside id)
    weight: float = 1.0  # how much it counts, 0 to 1


class Entity(SQLModel, table=True):
    """A node of a scope's entity graph: a name met in facts, deduplicated by its key."""

    __tablename__ = "entities"

    id: str = Field(primary_key=True, max_length=32)
    scope: str
    name: str
    key: str  # the name normalised: case-folded, spaces collapsed, leading article dropped
    created_at: float


class Relation(SQLModel, table=True):
    """An edge of the entity graph, with the fact memory it comes from (its provenance)."""

    __tablename__ = "relations"

    id: Optional[int] = Field(default=None, primary_key=True)
    scope: str
    source_id: str = Field(max_length=32)
    target_id: str = Field(max_length=32)
    predicate: str
    memory_id: str = Field(max_length=32)
    created_at: float


class Job(SQLModel, table=True):
    """A background job's lease (row 'scheduler') or last run time (one row per job)."""

    __tablename__ = "jobs"

    name: str = Field(primary_key=True)
    owner: str = ""
    lease_until: float = 0.0
    last_run_at: float = 0.0


class Forgetting(SQLModel, table=True):
    """A scope whose `forget --all` has begun and not finished: its memories read as gone
    while it lasts, and running the forget again (or the sweep job) finishes it."""

    __tablename__ = "forgetting"

    scope: str = Field(primary_key=True)
    actor: str = ""
    started_at: float
    updated_at: float  # the last batch: an interrupted forget stops moving this
    memories: int = 0  # forgotten so far, for the one 'forget_all' event at the end


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
    extracted_turn: int = 0  # knowledge was extracted from the turns up to this one


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


class StoreIdentity(SQLModel, table=True):
    """The store's id, made once with it: a Chroma database names the store whose vectors it
    holds (vectors/chroma.py, OWNER), so two stores never share one."""

    __tablename__ = "store_identity"

    id: str = Field(primary_key=True, max_length=32)


class SchemaMigration(SQLModel, table=True):
    """Names of the migrations applied to this database."""

    __tablename__ = "schema_migrations"

    name: str = Field(primary_key=True)
    applied_at: float
