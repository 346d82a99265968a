"""PostgreSQL specifics: a connection pool, and one writer at a time, as SQLite has."""
from __future__ import annotations

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

POOL_SIZE = 5  # connections kept open per process
MAX_OVERFLOW = 10  # more opened under a burst, closed when returned
POOL_TIMEOUT_S = 30  # a caller waits this long for a free connection, then gets a clear error
POOL_RECYCLE_S = 1800
CONNECT_TIMEOUT_S = 10
WRITER_LOCK = 0x636D6D73  # "cmms": the advisory lock every write transaction holds
LOCK_TIMEOUT = "15s"  # a writer waits this long for another (as SQLite's busy timeout), then errs
IDLE_IN_TRANSACTION_TIMEOUT = "60s"  # a stalled holder's transaction is ended by the server


def make_engine(url: str) -> Engine:
    """A pooled engine. Every connection is checked before use (`pool_pre_ping`), so a
    restarted server costs the next caller a reconnect, not an error.

    Write transactions take one transaction-scoped advisory lock first, so writers run one
    at a time across every process sharing the database, as they do on SQLite. The store's
    read-then-write steps (dedup, supersede, the turn counter, entity keys) rely on that. A
    writer waits at most LOCK_TIMEOUT for it, and the server ends a transaction left idle
    (a stalled or stopped process) after IDLE_IN_TRANSACTION_TIMEOUT, so nobody waits forever.
    """
    engine = create_engine(url, pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW,
                           pool_timeout=POOL_TIMEOUT_S, pool_recycle=POOL_RECYCLE_S, pool_pre_ping=True,
                           connect_args={"connect_timeout": CONNECT_TIMEOUT_S,
                                         "application_name": "hermes-cmms",
                                         "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}"})

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        if conn.get_execution_options().get("cmms_write"):
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITER_LOCK})")

    return engine
