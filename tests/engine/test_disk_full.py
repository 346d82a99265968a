"""A full disk is one sentence at every door (Hermes tools, MCP, CLI) and writes nothing.

The disk is full for real where the database says so: SQLite limited to the pages it has
(`PRAGMA max_page_count`, SQLite's own SQLITE_FULL, "database or disk is full", the error a
full filesystem gives), PostgreSQL raising its disk_full error (SQLSTATE 53100) on insert.
"""
from __future__ import annotations

import json

import anyio
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from hermes_cmms import MemoryService, Settings
from hermes_cmms.cli import main
from hermes_cmms.mcp_bridge import build
from hermes_cmms.provider import CmmsMemoryProvider

from db import on_postgres, scalar, sql

pytestmark = pytest.mark.store

FULL = "The memory store's disk is full ("
BIG = "A long note that needs new pages. " * 3000


def _no_room(dbapi_connection, _record) -> None:
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")


@pytest.fixture
def full_disk(home, monkeypatch):
    """A store with a memory in it, then no room for another."""
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    with MemoryService(Settings.load(home)) as service:
        service.store_note("local:default", "Stored before the disk filled up.")
    if on_postgres(home):
        sql(home, "CREATE FUNCTION disk_is_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                  "RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; "
                  "END $$")
        sql(home, "CREATE TRIGGER disk_is_full BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION disk_is_full()")
    else:
        event.listen(Engine, "connect", _no_room)
    yield home
    if not on_postgres(home):
        event.remove(Engine, "connect", _no_room)


@pytest.mark.quick
def test_hermes_tool_says_the_disk_is_full(full_disk):
    provider = CmmsMemoryProvider()
    provider.initialize("s1", hermes_home=str(full_disk), platform="cli", agent_context="primary")
    try:
        answer = json.loads(provider.handle_tool_call("cmms_remember", {"content": BIG}))
    finally:
        provider.shutdown()
    assert list(answer) == ["error"] and answer["error"].startswith(FULL), answer
    assert answer["error"].endswith("; nothing was written.") and "\n" not in answer["error"]
    assert scalar(full_disk, "SELECT COUNT(*) FROM memories") == 1


def test_mcp_tool_says_the_disk_is_full(full_disk):
    service = MemoryService(Settings.load(full_disk))
    try:
        server = build(service, "local:default")
        with pytest.raises(Exception) as refused:
            anyio.run(server.call_tool, "store_memory", {"content": BIG, "scope": "local:default"})
    finally:
        service.close()
    said = str(refused.value)  # the SDK puts "Error executing tool store_memory: " first
    assert FULL in said and said.endswith("; nothing was written.") and "\n" not in said, said
    assert scalar(full_disk, "SELECT COUNT(*) FROM memories") == 1


def test_cli_says_the_disk_is_full(full_disk, capsys):
    assert main(["learn", BIG, "--hermes-home", str(full_disk)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {FULL}") and error.count("\n") == 1, error
    assert scalar(full_disk, "SELECT COUNT(*) FROM memories") == 1
