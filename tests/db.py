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
