"""Fresh databases on the PostgreSQL and Chroma servers the second test pass runs on (see
.ci/services); also used by benchmarks/load.py."""
from __future__ import annotations

import os
import socket
import uuid
from contextlib import contextmanager

from hermes_cmms.vectors.chroma import admin_client


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


_templates: dict[str, str] = {}  # admin URL -> the migrated template database made on that server
_admins: dict = {}  # admin URL -> an engine on it (one connection kept: a test makes two databases)
_chroma_admins: dict = {}  # Chroma URL -> its admin client


def _admin(admin_url):
    """An AUTOCOMMIT engine on the server's admin database, made once per process."""
    from sqlalchemy import create_engine

    key = admin_url.render_as_string(hide_password=False)
    if key not in _admins:
        _admins[key] = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=1,
                                     pool_pre_ping=True)
    return _admins[key]


def _admin_sql(admin_url, statement: str) -> None:
    from sqlalchemy import text

    with _admin(admin_url).connect() as conn:
        conn.execute(text(statement))


def migrated_template(admin_url) -> str:
    """The name of a database on the server of `admin_url` with every migration applied, made
    once per process: new test databases are cloned from it (CREATE DATABASE ... TEMPLATE)."""
    from hermes_cmms.store.store import Store

    key = admin_url.render_as_string(hide_password=False)
    if key not in _templates:
        name = f"tpl_{uuid.uuid4().hex[:16]}"
        _admin_sql(admin_url, f"CREATE DATABASE {name}")
        Store(admin_url.set(database=name).render_as_string(hide_password=False)).close()
        _templates[key] = name
    return _templates[key]


def drop_templates() -> None:
    """Drop the templates this process made, and let go of its admin connections."""
    from sqlalchemy.engine import make_url

    while _templates:
        admin_url, name = _templates.popitem()
        _admin_sql(make_url(admin_url), f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    while _admins:
        _admins.popitem()[1].dispose()


@contextmanager
def server_databases(pg_url: str | None = None, chroma_url: str | None = None, prefix: str = "t",
                     migrated: bool = False):
    """(database URL, Chroma URL) of a new PostgreSQL database and Chroma database, both dropped
    afterwards: empty, or with `migrated` a clone of a migrated template. The servers default to
    $CMMS_TEST_PG_URL / $CMMS_TEST_CHROMA_URL."""
    from sqlalchemy.engine import make_url

    admin_url = make_url(pg_url or os.environ["CMMS_TEST_PG_URL"])
    chroma = (chroma_url or os.environ["CMMS_TEST_CHROMA_URL"]).rstrip("/")
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    template = f" TEMPLATE {migrated_template(admin_url)}" if migrated else ""
    _admin_sql(admin_url, f"CREATE DATABASE {name}{template}")
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False), f"{chroma}/{name}"
    finally:
        _admin_sql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        try:
            if chroma not in _chroma_admins:
                _chroma_admins[chroma] = admin_client(chroma)
            _chroma_admins[chroma].delete_database(name)
        except Exception:  # noqa: BLE001 - a run that never wrote vectors has no database
            pass
