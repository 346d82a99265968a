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


def migrated_template(admin_url) -> str:
    """The name of a database on the server of `admin_url` with every migration applied, made
    once per process: new test databases are cloned from it (CREATE DATABASE ... TEMPLATE)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    from hermes_cmms.store.store import Store

    key = admin_url.render_as_string(hide_password=False)
    if key not in _templates:
        name = f"tpl_{uuid.uuid4().hex[:16]}"
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            with admin.connect() as conn:
                conn.execute(text(f"CREATE DATABASE {name}"))
            Store(admin_url.set(database=name).render_as_string(hide_password=False)).close()
        finally:
            admin.dispose()
        _templates[key] = name
    return _templates[key]


def drop_templates() -> None:
    """Drop the templates this process made."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    while _templates:
        admin_url, name = _templates.popitem()
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        finally:
            admin.dispose()


@contextmanager
def server_databases(pg_url: str | None = None, chroma_url: str | None = None, prefix: str = "t",
                     migrated: bool = False):
    """(database URL, Chroma URL) of a new PostgreSQL database and Chroma database, both dropped
    afterwards: empty, or with `migrated` a clone of a migrated template. The servers default to
    $CMMS_TEST_PG_URL / $CMMS_TEST_CHROMA_URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    admin_url = make_url(pg_url or os.environ["CMMS_TEST_PG_URL"])
    chroma = (chroma_url or os.environ["CMMS_TEST_CHROMA_URL"]).rstrip("/")
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    template = f" TEMPLATE {migrated_template(admin_url)}" if migrated else ""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}{template}"))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False), f"{chroma}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()
        try:
            admin_client(chroma).delete_database(name)
        except Exception:  # noqa: BLE001 - a run that never wrote vectors has no database
            pass
