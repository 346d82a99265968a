"""Reads of Hermes' own SQLite files, for `hermes-cmms import`: its sessions and messages
(`state.db`), the holographic provider's facts (`memory_store.db`) and the turns the RetainDB
provider had not sent yet (`retaindb_queue.db`). Never the live file: it
is copied with its -wal and -shm (recent writes may still be in the -wal) and the copy is
read. Columns are selected by presence, as both files gain columns over Hermes' versions."""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

SESSION_COLUMNS = ("id", "source", "user_id", "session_key", "chat_id", "model_config", "parent_session_id",
                   "started_at", "ended_at", "end_reason", "title", "profile_name")
MESSAGE_COLUMNS = ("id", "role", "content", "tool_calls", "timestamp", "observed", "active", "compacted",
                   "display_kind", "_compressed_summary")
OWNER_COLUMNS = ("id", "source", "user_id", "session_key", "chat_id")
RETAINDB_COLUMNS = ("id", "user_id", "session_id", "messages_json", "created_at")
FACT_COLUMNS = ("fact_id", "content", "category", "tags", "trust_score", "created_at", "updated_at", "lifecycle")


def tables(path: Path) -> set[str]:
    """The tables of a SQLite file, read without writing beside it; empty if it is not one."""
    try:
        with path.open("rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                return set()
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return set()


@contextmanager
def copy_of(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a copy of the file and its -wal / -shm."""
    with tempfile.TemporaryDirectory(prefix="cmms-import-") as folder:
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{path}{suffix}")
            if source.exists():
                shutil.copyfile(source, Path(folder) / f"copy.db{suffix}")
        conn = sqlite3.connect(Path(folder) / "copy.db")
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA query_only = 1")
            yield conn
        finally:
            conn.close()


def _present(conn: sqlite3.Connection, table: str, wanted: tuple[str, ...]) -> list[str]:
    have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    return [name for name in wanted if name in have]


def _select(conn: sqlite3.Connection, table: str, wanted: tuple[str, ...], rest: str, args=()) -> Iterator[dict]:
    names = _present(conn, table, wanted)
    query = f"SELECT {', '.join(names)} FROM {table} {rest}"  # (names: our own constants, present in it)
    for row in conn.execute(query, args):
        yield {name: row[name] for name in names}


def hermes_sessions(conn: sqlite3.Connection) -> Iterator[dict]:
    """Every session of a state.db, oldest first."""
    return _select(conn, "sessions", SESSION_COLUMNS, "ORDER BY started_at, rowid")


def hermes_messages(conn: sqlite3.Connection, session_id: str) -> list[dict]:
    """A session's messages in the order Hermes wrote them (by id, never by time)."""
    return list(_select(conn, "messages", MESSAGE_COLUMNS, "WHERE session_id = ? ORDER BY id", (session_id,)))


def holographic_facts(conn: sqlite3.Connection) -> Iterator[dict]:
    """Every fact of the holographic provider's store, in the order they were added."""
    return _select(conn, "facts", FACT_COLUMNS, "ORDER BY fact_id")


def retaindb_queued(conn: sqlite3.Connection) -> Iterator[dict]:
    """Every turn RetainDB's queue still holds, in the order it was queued."""
    return _select(conn, "pending", RETAINDB_COLUMNS, "ORDER BY id")


def has_columns(path: Path, table: str, wanted: tuple[str, ...]) -> bool:
    """Whether the SQLite file's `table` has all the `wanted` columns (read without writing)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            return len(_present(conn, table, wanted)) == len(wanted)
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return False


def session_owners(path: Path) -> dict[str, dict]:
    """Each session of a state.db by id: its platform (source), user, session key and chat;
    {} when there is no such file or it cannot be read."""
    if not path.is_file() or "sessions" not in tables(path):
        return {}
    try:
        with copy_of(path) as conn:
            return {str(row["id"]): row for row in _select(conn, "sessions", OWNER_COLUMNS, "")}
    except (OSError, sqlite3.Error):
        return {}


def history_size(path: Path) -> Optional[dict]:
    """How much a state.db holds, cheaply (the file as it is on disk, without its -wal): its
    sessions, their user and assistant messages, the first and last start; None if it cannot
    be read."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            sessions, first, last = conn.execute("SELECT COUNT(*), MIN(started_at), MAX(started_at) "
                                                 "FROM sessions").fetchone()
            messages = conn.execute("SELECT COUNT(*) FROM messages WHERE role IN ('user', 'assistant')").fetchone()[0]
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return None
    return {"sessions": sessions, "messages": messages, "first": first, "last": last}
