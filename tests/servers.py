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


@contextmanager
def server_databases(pg_url: str | None = None, chroma_url: str | None = None, prefix: str = "t"):
    """(database URL, Chroma URL) of a new, empty PostgreSQL database and Chroma database,
    both dropped afterwards. The servers default to $CMMS_TEST_PG_URL / $CMMS_TEST_CHROMA_URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    admin_url = make_url(pg_url or os.environ["CMMS_TEST_PG_URL"])
    chroma = (chroma_url or os.environ["CMMS_TEST_CHROMA_URL"]).rstrip("/")
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
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
