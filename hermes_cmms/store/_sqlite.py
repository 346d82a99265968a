"""SQLite specifics: WAL, busy timeout, BEGIN IMMEDIATE for writers, integrity check."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.engine.url import make_url

BUSY_TIMEOUT_MS = 15000


def make_engine(url: str) -> Engine:
    path = make_url(url).database
    if path and path != ":memory:":  # (a `file:` URI names its path after the scheme)
        Path(path.removeprefix("file:")).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False,
                                              "timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        for pragma in ("journal_mode=WAL", f"busy_timeout={BUSY_TIMEOUT_MS}",
                       "synchronous=FULL", "foreign_keys=ON", "secure_delete=ON"):
            dbapi_conn.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # Writers take the lock up front so a read never has to upgrade (and fail) later.
        immediate = conn.get_execution_options().get("cmms_write")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def quick_check(conn: Connection) -> str:
    """'ok', or SQLite's description of the first problem it finds."""
    return conn.exec_driver_sql("PRAGMA quick_check").scalar_one()


def checkpoint(engine: Engine) -> bool:
    """Copy the WAL into the database and truncate it, so deleted text does not linger in old
    WAL frames. False when a reader still holding a snapshot kept it from finishing."""
    with engine.connect() as conn:
        busy, _, _ = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
        return not busy


def location(conn: Connection) -> str:
    """Where this SQLite store lives: its file's real path, device and inode (a copy of the file,
    or the file put back by a restore that replaced it, has another inode; one copied over it in
    place keeps it). Only the device and inode say which file it is (store.same_location): the
    same file reached by another path (a bind mount, a Docker volume) is the same store."""
    import os

    path = conn.execute(text("SELECT file FROM pragma_database_list WHERE name = 'main'")).scalar() or ""
    found = os.stat(path)
    return f"sqlite:{os.path.realpath(path)}#{found.st_dev}:{found.st_ino}"
