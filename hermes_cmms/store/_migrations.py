"""Append-only, named migrations, applied on open. Never edit one that has shipped."""
from __future__ import annotations

import time
import uuid
from typing import Callable

from sqlalchemy import Connection, inspect, text

from . import recall_events

Migration = tuple[str, Callable[[Connection], None]]


def _serial(conn: Connection) -> str:
    """The auto-incrementing integer key type for this dialect."""
    if conn.dialect.name == "postgresql":
        return "BIGSERIAL PRIMARY KEY"
    return "INTEGER PRIMARY KEY AUTOINCREMENT"


def _0001_initial(conn: Connection) -> None:
    statements = [
        f"""CREATE TABLE memories (
            seq {_serial(conn)},
            id VARCHAR(32) NOT NULL UNIQUE,
            scope TEXT NOT NULL,
            tier TEXT NOT NULL DEFAULT 'episodic',
            kind TEXT NOT NULL DEFAULT 'message',
            role TEXT,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            session_id TEXT,
            turn INTEGER,
            source TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0,
            state TEXT NOT NULL DEFAULT 'active',
            superseded_by VARCHAR(32),
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_memories_scope_created ON memories (scope, created_at)",
        "CREATE INDEX ix_memories_scope_session ON memories (scope, session_id, turn)",
        """CREATE TABLE sessions (
            scope TEXT NOT NULL,
            session_id TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            last_turn INTEGER NOT NULL DEFAULT 0,
            flushed_at DOUBLE PRECISION,
            PRIMARY KEY (scope, session_id))""",
        f"""CREATE TABLE outbox (
            id {_serial(conn)},
            memory_id VARCHAR(32) NOT NULL,
            scope TEXT NOT NULL,
            op TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_at DOUBLE PRECISION NOT NULL)""",
    ]
    for statement in statements:
        conn.execute(text(statement))


def _0002_memory_context(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE memories ADD COLUMN context TEXT"))


def _0003_memory_expires_at(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE memories ADD COLUMN expires_at DOUBLE PRECISION"))


def _0004_facts(conn: Connection) -> None:
    conn.execute(text("""CREATE TABLE facts (
        memory_id VARCHAR(32) PRIMARY KEY,
        scope TEXT NOT NULL,
        subject TEXT NOT NULL,
        predicate TEXT NOT NULL,
        object TEXT NOT NULL)"""))
    conn.execute(text("CREATE INDEX ix_facts_scope_subject ON facts (scope, subject)"))


def _0005_index_state(conn: Connection) -> None:
    conn.execute(text("CREATE TABLE index_state (name TEXT PRIMARY KEY, "
                      "generation INTEGER NOT NULL DEFAULT 0)"))
    conn.execute(text("INSERT INTO index_state (name, generation) VALUES ('vectors', 0)"))


def _0006_memory_speaker(conn: Connection) -> None:
    from ..common.text import speaker_of

    conn.execute(text("ALTER TABLE memories ADD COLUMN speaker TEXT"))
    conn.execute(text("CREATE INDEX ix_memories_scope_speaker ON memories (scope, speaker)"))
    rows = conn.execute(text("SELECT seq, content FROM memories WHERE content LIKE '%:%'")).all()
    found = [{"seq": seq, "speaker": speaker_of(content)} for seq, content in rows]
    found = [row for row in found if row["speaker"]]
    if found:
        conn.execute(text("UPDATE memories SET speaker = :speaker WHERE seq = :seq"), found)


def _0007_lifecycle(conn: Connection) -> None:
    statements = [
        "ALTER TABLE memories ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE memories ADD COLUMN receipts TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE memories ADD COLUMN reliability DOUBLE PRECISION NOT NULL DEFAULT 1.0",
        "ALTER TABLE memories ADD COLUMN last_seen_at DOUBLE PRECISION",
        "ALTER TABLE memories ADD COLUMN consolidated_at DOUBLE PRECISION",
        "UPDATE memories SET reliability = confidence, last_seen_at = created_at",
        # only episodic memories wait for consolidation: the index below then holds just those
        "UPDATE memories SET consolidated_at = created_at WHERE tier <> 'episodic'",
        "ALTER TABLE facts ADD COLUMN subject_key TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE facts ADD COLUMN predicate_key TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE facts ADD COLUMN object_key TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX ix_facts_scope_keys ON facts (scope, subject_key, predicate_key)",
        "CREATE INDEX ix_memories_scope_hash ON memories (scope, content_hash)",
        "CREATE INDEX ix_memories_superseded_by ON memories (superseded_by) WHERE superseded_by IS NOT NULL",
        # what consolidation has not looked at yet, and what can expire, without a scan
        "CREATE INDEX ix_memories_scope_unconsolidated ON memories (scope, consolidated_at, seq)",
        "CREATE INDEX ix_memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL",
        f"""CREATE TABLE audit_log (
            id {_serial(conn)},
            at DOUBLE PRECISION NOT NULL,
            action TEXT NOT NULL,
            actor TEXT NOT NULL DEFAULT '',
            scope TEXT,
            memory_id VARCHAR(32),
            detail TEXT NOT NULL DEFAULT '{{}}',
            snapshot TEXT)""",
        "CREATE INDEX ix_audit_scope_id ON audit_log (scope, id)",
        "CREATE INDEX ix_audit_memory ON audit_log (memory_id)",
        "CREATE INDEX ix_audit_snapshots ON audit_log (at) WHERE snapshot IS NOT NULL",
        """CREATE TABLE jobs (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL DEFAULT '',
            lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
            last_run_at DOUBLE PRECISION NOT NULL DEFAULT 0)""",
    ]
    for statement in statements:
        conn.execute(text(statement))
    for name in ("scheduler", "sweep", "decay", "consolidate"):
        conn.execute(text("INSERT INTO jobs (name) VALUES (:n)"), {"n": name})
    facts = conn.execute(text("SELECT memory_id, subject, predicate, object FROM facts")).all()
    if facts:
        conn.execute(text("UPDATE facts SET subject_key = :s, predicate_key = :p, object_key = :o "
                          "WHERE memory_id = :m"),
                     [{"m": m, **{k: " ".join(v.split()).casefold() for k, v in zip("spo", parts)}}
                      for m, *parts in facts])


def _0008_knowledge(conn: Connection) -> None:
    statements = [
        "ALTER TABLE memories ADD COLUMN detail TEXT",
        "ALTER TABLE sessions ADD COLUMN extracted_turn INTEGER NOT NULL DEFAULT 0",
        """CREATE TABLE links (
            memory_id VARCHAR(32) NOT NULL,
            source_id VARCHAR(32) NOT NULL,
            scope TEXT NOT NULL,
            PRIMARY KEY (memory_id, source_id))""",
        "CREATE INDEX ix_links_source ON links (source_id)",
        """CREATE TABLE beliefs (
            memory_id VARCHAR(32) PRIMARY KEY,
            scope TEXT NOT NULL,
            proposition_key TEXT NOT NULL,
            topic TEXT NOT NULL DEFAULT '',
            polarity INTEGER NOT NULL DEFAULT 1)""",
        "CREATE INDEX ix_beliefs_scope_proposition ON beliefs (scope, proposition_key)",
        "CREATE INDEX ix_beliefs_scope_topic ON beliefs (scope, topic)",
        f"""CREATE TABLE evidence (
            id {_serial(conn)},
            belief_id VARCHAR(32) NOT NULL,
            scope TEXT NOT NULL,
            memory_id VARCHAR(32),
            source TEXT NOT NULL DEFAULT '',
            stance INTEGER NOT NULL DEFAULT 1,
            note TEXT NOT NULL DEFAULT '',
            at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_evidence_belief ON evidence (belief_id)",
        "CREATE INDEX ix_evidence_memory ON evidence (memory_id) WHERE memory_id IS NOT NULL",
        """CREATE TABLE entities (
            id VARCHAR(32) PRIMARY KEY,
            scope TEXT NOT NULL,
            name TEXT NOT NULL,
            key TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            UNIQUE (scope, key))""",
        f"""CREATE TABLE relations (
            id {_serial(conn)},
            scope TEXT NOT NULL,
            source_id VARCHAR(32) NOT NULL,
            target_id VARCHAR(32) NOT NULL,
            predicate TEXT NOT NULL,
            memory_id VARCHAR(32) NOT NULL,
            created_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_relations_source ON relations (source_id)",
        "CREATE INDEX ix_relations_target ON relations (target_id)",
        "CREATE INDEX ix_relations_memory ON relations (memory_id)",
    ]
    for statement in statements:
        conn.execute(text(statement))


def _0009_forgetting(conn: Connection) -> None:
    conn.execute(text("""CREATE TABLE forgetting (
        scope TEXT PRIMARY KEY,
        actor TEXT NOT NULL DEFAULT '',
        started_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        memories INTEGER NOT NULL DEFAULT 0)"""))


def _0010_belief_sources(conn: Connection) -> None:
    """A belief's creator (the door that first wrote it; until now only its receipt said so) and
    each evidence row's source type, reference (an id outside the store) and weight."""
    statements = [
        "ALTER TABLE beliefs ADD COLUMN creator TEXT NOT NULL DEFAULT ''",
        "UPDATE beliefs SET creator = COALESCE((SELECT source FROM memories WHERE memories.id = beliefs.memory_id), '')",
        "ALTER TABLE evidence ADD COLUMN source_type TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE evidence ADD COLUMN source_ref TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE evidence ADD COLUMN weight DOUBLE PRECISION NOT NULL DEFAULT 1.0",
        "CREATE INDEX ix_evidence_source_ref ON evidence (source_ref) WHERE source_ref <> ''",
    ]
    for statement in statements:
        conn.execute(text(statement))


def _0011_browse_indexes(conn: Connection) -> None:
    """A scope's memories by kind and by tier (newest first within each) and by confidence: what
    a browse filters and sorts on (a tag, a source or a state filter then reads those rows only)."""
    for statement in (
        "CREATE INDEX ix_memories_scope_kind_created ON memories (scope, kind, created_at)",
        "CREATE INDEX ix_memories_scope_tier_created ON memories (scope, tier, created_at)",
        "CREATE INDEX ix_memories_scope_confidence ON memories (scope, confidence)",
        # a scope's counts by tier, kind and state read from the index alone (MemoryService.scopes)
        "CREATE INDEX ix_memories_scope_counts ON memories (scope, tier, kind, state, created_at)",
    ):
        conn.execute(text(statement))


def _0013_memory_pinned(conn: Connection) -> None:
    """A pinned memory (the user's: never decays, never expires, never consolidated) and when a
    memory was corrected (replaced by the user's own words: it was wrong, so it is never recalled
    again; it stays, superseded, in its history)."""
    conn.execute(text("ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0"))
    conn.execute(text("ALTER TABLE memories ADD COLUMN corrected_at DOUBLE PRECISION"))


def _0014_browse_tally(conn: Connection) -> None:
    """A scope's counts in one pass of one index: by tier, kind and state (as
    ix_memories_scope_counts, which it replaces) and which are superseded or expired, so a
    browse's total (active memories, by tier, kind or date) is counted from the index alone."""
    conn.execute(text("DROP INDEX ix_memories_scope_counts"))
    conn.execute(text("CREATE INDEX ix_memories_scope_tally ON memories "
                      "(scope, tier, kind, state, created_at, superseded_by, expires_at)"))


def _0015_store_identity(conn: Connection) -> None:
    """The store's id (a Chroma server's database names the one store it holds vectors for)."""
    conn.execute(text("CREATE TABLE store_identity (id VARCHAR(32) PRIMARY KEY)"))
    conn.execute(text("INSERT INTO store_identity (id) VALUES (:id)"), {"id": uuid.uuid4().hex})


CORE_MIGRATIONS: list[Migration] = [("0001_initial", _0001_initial),
                                    ("0002_memory_context", _0002_memory_context),
                                    ("0003_memory_expires_at", _0003_memory_expires_at),
                                    ("0004_facts", _0004_facts),
                                    ("0005_index_state", _0005_index_state),
                                    ("0006_memory_speaker", _0006_memory_speaker),
                                    ("0007_lifecycle", _0007_lifecycle),
                                    ("0008_knowledge", _0008_knowledge),
                                    ("0009_forgetting", _0009_forgetting),
                                    ("0010_belief_sources", _0010_belief_sources),
                                    ("0011_browse_indexes", _0011_browse_indexes),
                                    ("0012_recall_events", recall_events.migrate),
                                    ("0013_memory_pinned", _0013_memory_pinned),
                                    ("0014_browse_tally", _0014_browse_tally),
                                    ("0015_store_identity", _0015_store_identity),
                                    ("0016_recall_kind", recall_events.add_kind)]


def behind(conn: Connection, migrations: list[Migration]) -> bool:
    """Whether any of `migrations` is not yet recorded (read only: a store at the current
    version is opened without a write, so opening it never waits for another process's writer)."""
    if not inspect(conn).has_table("schema_migrations"):
        return True
    if conn.dialect.name == "postgresql" and conn.execute(text("SHOW transaction_read_only")).scalar() == "on":
        return True  # a read-only database (a replica, default_transaction_read_only): the write at open refuses it
    done = {row[0] for row in conn.execute(text("SELECT name FROM schema_migrations"))}
    return any(name not in done for name, _ in migrations)


def apply(conn: Connection, migrations: list[Migration]) -> list[str]:
    """Apply the migrations not yet recorded; return the names applied now."""
    conn.execute(text(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"))
    done = {row[0] for row in conn.execute(text("SELECT name FROM schema_migrations"))}
    applied = []
    for name, migrate in migrations:
        if name in done:
            continue
        migrate(conn)
        conn.execute(text("INSERT INTO schema_migrations (name, applied_at) VALUES (:n, :t)"),
                     {"n": name, "t": time.time()})
        applied.append(name)
    return applied
