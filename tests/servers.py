"""Fresh databases on the PostgreSQL and Chroma servers the second test pass runs on (see
.ci/services); also used by benchmarks/load.py."""
from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from urllib.parse import urlparse


def chroma_admin(url: str):
    """A chromadb AdminClient for the Chroma server at `url`."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    where = urlparse(url)
    return chromadb.AdminClient(ChromaSettings(
        anonymized_telemetry=False, chroma_api_impl="chromadb.api.fastapi.FastAPI",
        chroma_server_host=where.hostname, chroma_server_http_port=where.port))


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
            chroma_admin(chroma).delete_database(name)
        except Exception:  # noqa: BLE001 - a run that never wrote vectors has no database
            pass
