"""Keyword index behind a small interface; the only home of dialect-specific search SQL."""
from __future__ import annotations

from typing import Protocol

from sqlalchemy import Connection, text

from ._migrations import Migration
from .text import terms


class KeywordIndex(Protocol):
    """Full-text search over the memories table, kept in sync by the database itself."""

    migrations: list[Migration]

    def search(self, conn: Connection, scope: str, query: str, limit: int,
               with_context: bool = False) -> list[tuple[str, float]]:
        """Return (memory id, score) pairs, best first; higher score is better. With
        `with_context`, a memory also matches through the message before it."""


def _fts5_create(conn: Connection) -> None:
    for statement in (
        """CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, tokenize = 'porter unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
        END""",
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
        END""",
        """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
            INSERT INTO memories_fts (rowid, content) VALUES (new.seq, new.content);
        END""",
        "INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories",
    ):
        conn.execute(text(statement))


def _fts5_add_context(conn: Connection) -> None:
    for statement in (
        "DROP TRIGGER memories_fts_insert",
        "DROP TRIGGER memories_fts_delete",
        "DROP TRIGGER memories_fts_update",
        "DROP TABLE memories_fts",
        """CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, context, tokenize = 'porter unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content, context)
            VALUES (new.seq, new.content, new.context);
        END""",
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
        END""",
        """CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, context ON memories BEGIN
            DELETE FROM memories_fts WHERE rowid = old.seq;
            INSERT INTO memories_fts (rowid, content, context)
            VALUES (new.seq, new.content, new.context);
        END""",
        "INSERT INTO memories_fts (rowid, content, context) SELECT seq, content, context FROM memories",
    ):
        conn.execute(text(statement))


class SqliteKeywordIndex:
    """SQLite FTS5 (porter stemming, BM25), synced by triggers on `memories`."""

    migrations: list[Migration] = [("0001_fts5_memories", _fts5_create),
                                   ("0002_fts5_context", _fts5_add_context)]

    _SEARCH = text(
        "SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts "
        "JOIN memories AS m ON m.seq = memories_fts.rowid "
        "WHERE memories_fts MATCH :match AND m.scope = :scope AND m.state = 'active' "
        "ORDER BY rank LIMIT :limit")

    def search(self, conn: Connection, scope: str, query: str, limit: int,
               with_context: bool = False) -> list[tuple[str, float]]:
        words = terms(query)
        if not words:
            return []
        match = " OR ".join(f'"{word}"' for word in words)  # quoted: no FTS syntax gets through
        match = f"({match})" if with_context else f"content : ({match})"
        rows = conn.execute(self._SEARCH, {"match": match, "scope": scope, "limit": limit})
        return [(memory_id, -rank) for memory_id, rank in rows]


def keyword_index_for(dialect: str) -> KeywordIndex:
    """The keyword index implementation for a SQL dialect name."""
    if dialect == "sqlite":
        return SqliteKeywordIndex()
    raise NotImplementedError(f"No keyword index for the {dialect!r} database yet.")
