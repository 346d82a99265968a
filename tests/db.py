"""Direct SQL on a test's store, whichever backend it runs on (SQLite file or PostgreSQL).

Statements use `?` placeholders (sqlite3 style); on PostgreSQL they are sent as `%s`.
"""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool


def url_of(where) -> str:
    """The database URL of a service, a Hermes home or a URL."""
    settings = getattr(where, "settings", None)
    if settings is not None:
        return settings.database_url
    if isinstance(where, str) and "://" in where:
        return where
    return os.environ.get("CMMS_DATABASE_URL") or f"sqlite:///{Path(where) / 'cmms' / 'cmms.db'}"


def sql(where, statement: str, *params, mapping: bool = False) -> list:
    """Run one statement in its own transaction; the rows as tuples (or dicts)."""
    engine = create_engine(url_of(where), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            if conn.dialect.name != "sqlite":
                statement = statement.replace("%", "%%").replace("?", "%s")
            result = conn.exec_driver_sql(statement, tuple(params))
            if not result.returns_rows:
                return []
            return [dict(row._mapping) for row in result] if mapping else [tuple(row) for row in result]
    finally:
        engine.dispose()


def on_postgres(where) -> bool:
    return url_of(where).startswith("postgresql")


def row(where, statement: str, *params) -> dict | None:
    """The first row of a statement as a dict (None when there is none)."""
    rows = sql(where, statement, *params, mapping=True)
    return rows[0] if rows else None


def scalar(where, statement: str, *params):
    """The first column of the first row (None when there is no row)."""
    rows = sql(where, statement, *params)
    return rows[0][0] if rows else None


def tables(where) -> list[str]:
    """The names of the store's tables (SQLite: sqlite_master; PostgreSQL: information_schema)."""
    if on_postgres(where):
        statement = ("SELECT table_name FROM information_schema.tables "
                     "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
    else:
        statement = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return sorted(name for (name,) in sql(where, statement))


def keyword_hits(where, word: str) -> int:
    """How many memories the keyword index finds for one word, in content or context:
    FTS5's memories_fts on SQLite, the generated fts_all tsvector column on PostgreSQL."""
    if on_postgres(where):
        return sql(where, "SELECT count(*) FROM memories WHERE fts_all @@ plainto_tsquery('english', ?)",
                   word)[0][0]
    return sql(where, "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", word)[0][0]


def keyword_rows(where) -> list[tuple]:
    """What the keyword index holds for every memory, as text: FTS5's (content, context) on
    SQLite; the generated tsvector columns (fts_content, fts_all) on PostgreSQL."""
    if on_postgres(where):
        return sql(where, "SELECT CAST(fts_content AS text), CAST(fts_all AS text) FROM memories")
    return sql(where, "SELECT content, context FROM memories_fts")


def dump(where) -> str:
    """Every row of every table (on PostgreSQL with the tsvector columns), as one string."""
    return repr({name: sql(where, f'SELECT * FROM "{name}"') for name in tables(where)})


def plan(where, statement: str, *params) -> str:
    """The query plan of a statement, as text. PostgreSQL is told to avoid sequential scans,
    so the plan shows whether an index CAN serve the statement (a tiny test table would be
    scanned whatever the indexes)."""
    engine = create_engine(url_of(where), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", tuple(params)).all()
            else:
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
                rows = conn.exec_driver_sql(f"EXPLAIN {statement.replace('?', '%s')}", tuple(params)).all()
            return "\n".join(" ".join(str(c) for c in r) for r in rows)
    finally:
        engine.dispose()


def shares_a_lexeme(where, text: str) -> int:
    """PostgreSQL only: how many memories hold, in a keyword-index column, a lexeme of `text`."""
    return sql(where, "SELECT count(DISTINCT m.id) FROM memories AS m "
                      "CROSS JOIN LATERAL (SELECT lexeme FROM unnest(m.fts_content) "
                      "UNION SELECT lexeme FROM unnest(m.fts_all)) AS held "
                      "WHERE held.lexeme IN (SELECT lexeme FROM unnest(to_tsvector('english', "
                      "regexp_replace(?, '[[:punct:]]+', ' ', 'g'))))", text)[0][0]
