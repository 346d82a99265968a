"""PostgreSQL specifics: a connection pool, one writer at a time per scope (SQLite has one in
all), the scrub after a forget."""
from __future__ import annotations

import hashlib

from sqlalchemy import Connection, create_engine, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.engine import Engine

# A process needs few connections: its writes (one at a time per scope; on SQLite and for writes
# across scopes one at a time in all, Store._write_lock), a recall, the index writer (two while it
# holds a claim: outbox_claims) and the scheduler; past the pool a caller waits for a free one. At most PROCESS_CONNECTIONS each, 16
# gateway workers, 2 bridges and a CLI run fit PostgreSQL's default max_connections of 100 (less
# its 3 superuser_reserved_connections): 19 x 5 = 95 <= 97. See docs/deploy.md for bigger fleets.
POOL_SIZE = 2  # connections kept open per process
MAX_OVERFLOW = 3  # more opened under a burst, closed when returned
PROCESS_CONNECTIONS = POOL_SIZE + MAX_OVERFLOW
POOL_TIMEOUT_S = 30  # a caller waits this long for a free connection, then gets a clear error
POOL_RECYCLE_S = 1800
CONNECT_TIMEOUT_S = 10
WRITER_LOCK = 0x636D6D73  # "cmms": the advisory lock every write transaction holds (one-key form)
SCOPE_LOCKS = 0x636D6D73  # the first key of a scope's advisory locks (two-key form: a lock space of its own)
WRITER, INDEXER = 1, 2  # ... and which of the scope's locks: its writers' or its vector writer's
LOCK_TIMEOUT = "15s"  # a writer waits this long for another (as SQLite's busy timeout), then errs
IDLE_IN_TRANSACTION_TIMEOUT = "60s"  # a stalled holder's transaction is ended by the server


def make_engine(url: str) -> Engine:
    """A pooled engine. Every connection is checked before use (`pool_pre_ping`), so a
    restarted server costs the next caller a reconnect, not an error.

    Write transactions take transaction-scoped advisory locks first. One of a few scopes
    (execution option `cmms_scopes`: a turn, a recall's event, a flush) takes WRITER_LOCK
    shared and its scopes' writer locks (scope_lock) exclusive, so writers of one scope run
    one at a time across every process sharing the database, and writers of other scopes
    beside them. The store's read-then-write steps (dedup, supersede, the turn counter, entity
    keys) only read rows of their own scope, so they rely on nothing more. Any other write
    (migrations, leases, maintenance across scopes) takes WRITER_LOCK exclusive: it runs alone,
    as every writer did before. A writer waits at most LOCK_TIMEOUT for its locks, and the
    server ends a transaction left idle (a stalled or stopped process) after
    IDLE_IN_TRANSACTION_TIMEOUT, so nobody waits forever.
    """
    engine = create_engine(url, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW,
                           pool_timeout=POOL_TIMEOUT_S, pool_recycle=POOL_RECYCLE_S, pool_pre_ping=True,
                           connect_args={"connect_timeout": CONNECT_TIMEOUT_S,
                                         "application_name": "hermes-cmms",
                                         "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}"})

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        if conn.get_execution_options().get("cmms_write"):
            conn.exec_driver_sql(write_locks(conn.get_execution_options().get("cmms_scopes")))

    return engine


def write_locks(scopes) -> str:
    """What a write transaction runs first, in one round trip: its lock timeout, then its
    advisory locks (see make_engine), the scopes' in one order (no deadlock). Statements without
    parameters, which the driver sends together and the server runs in turn."""
    statements = [f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"]
    if not scopes:
        return "; ".join([*statements, f"SELECT pg_advisory_xact_lock({WRITER_LOCK})"])
    statements.append(f"SELECT pg_advisory_xact_lock_shared({WRITER_LOCK})")
    statements += [f"SELECT pg_advisory_xact_lock({SCOPE_LOCKS}, {key})"
                   for key in sorted({scope_lock(scope) for scope in scopes})]
    return "; ".join(statements)


def scope_lock(scope: str, which: int = WRITER) -> int:
    """The second key of a scope's advisory lock: 31 bits of a hash of the scope, the lowest
    bit `which` lock (two scopes that share a key only wait for each other)."""
    digest = int.from_bytes(hashlib.blake2b(scope.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "big")
    return (digest >> 2 << 1 | (which - 1)) - (1 << 30)


# What a forget deletes from or blanks in, and the GIN indexes whose keys (the words) VACUUM keeps.
SCRUBBED_TABLES = ("memories", "facts", "audit_log", "outbox", "links", "beliefs", "evidence", "entities",
                   "relations", "sessions")
WORD_INDEXES = ("ix_memories_fts_content", "ix_memories_fts_all")


def outbox_without_statistics(conn: Connection) -> None:
    """Migration: ANALYZE never samples the outbox's ids, scopes and errors. The outbox empties
    as the index writer works, and ANALYZE of an empty table keeps the sample values it had
    (pg_statistic), so a forgotten memory's id would stay there after every scrub."""
    for column in ("memory_id", "scope", "last_error"):
        conn.exec_driver_sql(f"ALTER TABLE outbox ALTER COLUMN {column} SET STATISTICS 0")


def scrub(engine: Engine, tables: tuple[str, ...] = SCRUBBED_TABLES, indexes: tuple[str, ...] = WORD_INDEXES) -> None:
    """After a forget has committed: VACUUM the tables it touched, so the deleted rows' tuples
    are pruned from the heap and index pages (FREEZE makes VACUUM wait for a page another
    backend has pinned instead of skipping it); ANALYZE them, since the planner's statistics
    (pg_statistic) keep sample values of their columns, then VACUUM pg_statistic (the database
    owner may); then rebuild the GIN indexes, whose entry trees keep a word (lexeme) even once
    no row holds it. REINDEX CONCURRENTLY lets reads and writes go on meanwhile. None of this
    can run in a transaction. What the server's WAL (pg_wal) holds stays until the server
    recycles it: out of this process's reach."""
    named = ", ".join(tables)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for statement in (f"VACUUM (FREEZE) {named}", f"ANALYZE {named}", "VACUUM pg_statistic",
                          *(f"REINDEX INDEX CONCURRENTLY {index}" for index in indexes)):
            conn.exec_driver_sql(statement)


def location(conn: Connection) -> str:
    """Where this PostgreSQL store lives: the server's system identifier (made with its cluster:
    a clone on another server, or one pg_upgrade made, has another) and the database's name (a
    clone on the same server has another; a restore into the same name keeps it). A role that
    may not read the identifier gets the database's oid instead, the same however the client
    connects (TCP, a socket, another address): a clone or a restore into a new database, on this
    server or another, gets a new one (a restore into the same name too, once dropped)."""
    try:
        with conn.begin_nested():  # (a refusal rolls back to here only)
            server = str(conn.execute(text("SELECT system_identifier FROM pg_control_system()")).scalar())
    except DBAPIError:  # permission denied
        server = "oid " + str(conn.execute(text(
            "SELECT oid FROM pg_database WHERE datname = current_database()")).scalar())
    return f"postgresql:{server}/{conn.execute(text('SELECT current_database()')).scalar()}"
