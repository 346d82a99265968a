"""A forget says whether the forgotten memories' vectors are gone from the vector index: when the
process that writes the index has not got to them in time, the CLI exits 4 with one sentence and
MCP and the Hermes tool answer `vectors_pending`; the removal is queued in SQL, so the next
process that writes the index finishes it without anybody forgetting again."""
from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.cli import commands
from hermes_cmms.hermes.tools import call_tool
from hermes_cmms import service as service_module
from hermes_cmms.store.store import Store
from hermes_cmms.vectors.chroma import VIEWS
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

SCOPE = "local:forget-vectors"
NOTES = ["The code of the garden gate is 4711", "The boiler was serviced on the third of May",
         "Ana's bicycle lock opens with 2208", "The spare key hangs behind the kitchen door"]


@contextmanager
def stuck_index_writer(settings: Settings):
    """Another process writes the vector index and has not got to the new deletions: it holds
    the writer's lock file (embedded Chroma), its lease in SQL (a Chroma server with SQLite) or,
    on PostgreSQL, where every process writes vectors, the claim on the scope (outbox_claims)."""
    if settings.chroma_url and settings.database_url.startswith("postgresql"):
        from hermes_cmms.store import _postgres

        store = Store(settings.database_url)
        try:
            with store.read() as conn:
                key = _postgres.scope_lock(SCOPE, _postgres.INDEXER)
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_postgres.SCOPE_LOCKS}, {key})")
                yield
        finally:
            store.close()
        return
    if settings.chroma_url:
        store = Store(settings.database_url)
        assert store.lease("test:stuck-writer", 600, time.time(), name="indexer")
        try:
            yield
        finally:
            store.release_lease("test:stuck-writer", name="indexer")
            store.close()
        return
    with open(settings.data_dir / "indexer.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield  # (closing the file drops the lock)


async def _forget_over_mcp(home, memory_id: str) -> dict:
    async with memory_bridge(home) as bridge:
        return await bridge.ok("forget_memory", scope=SCOPE, memory_id=memory_id)


def _indexed(service, ids: list[str]) -> set[str]:
    return set().union(*(service.indexer.vectors.present(SCOPE, ids, view) for view in VIEWS))


def test_a_forget_says_when_its_vectors_are_still_queued_and_the_next_index_writer_removes_them(home, monkeypatch):
    settings = Settings.load(home)
    with MemoryService(settings, scheduler=False) as service:
        ids = [service.remember(SCOPE, note) for note in NOTES]
        assert service.upkeep.drain(120) and _indexed(service, ids) == set(ids)
    with monkeypatch.context() as short, stuck_index_writer(settings):
        short.setattr(service_module, "FORGET_WAIT_S", 0.5)  # (10 s and 30 s more at the CLI)
        short.setattr(commands, "FORGET_DRAIN_S", 0.5)
        ran = cli(home, "forget", "--scope", SCOPE, "--id", ids[0])
        assert (ran.returncode, ran.stdout) == (4, f"Forgot 1 memory of scope {SCOPE!r}.\n"), ran
        assert ran.stderr == (f"The vectors of 1 forgotten memory of scope {SCOPE!r} are still queued for removal "
                              "from the vector index: the next hermes-cmms process that writes the index (the Hermes "
                              "gateway, an MCP bridge, the next forget, with the embedder on) removes them.\n")
        answer = run(_forget_over_mcp(home, ids[1]))
        assert (answer["forgotten"], answer["vectors_pending"]) == (1, 2)  # the scope's: this one and the CLI's
        hermes_side = MemoryService(settings, scheduler=False)
        try:
            assert call_tool(hermes_side, SCOPE, "cmms_forget", {"memory_id": ids[2]})["vectors_pending"] == 3
        finally:
            hermes_side.close(drain_timeout=0)
    with MemoryService(settings, scheduler=False) as service:  # the index writer is free again
        assert service.upkeep.drain(60)
        assert service.upkeep.vectors_pending(SCOPE) == 0 and _indexed(service, ids) == {ids[3]}
    ran = cli(home, "forget", "--scope", SCOPE, "--id", ids[3])  # (the waits a user has: not 0.5 s on a busy machine)
    assert (ran.returncode, ran.stderr) == (0, ""), ran


@pytest.mark.quick
def test_vector_deletions_go_before_the_upserts_queued_earlier(keyword_service):
    """A forget waits for its deletions only, not for a backlog of memories still to embed."""
    ids = [keyword_service.remember(SCOPE, note) for note in NOTES]  # keyword-only: their upserts stay queued
    keyword_service.forget(SCOPE, ids[0])
    assert [(row.op, row.memory_id) for row in keyword_service.store.pending(2)] == [
        ("delete", ids[0]), ("upsert", ids[0])]
    assert keyword_service.upkeep.vectors_pending(SCOPE) == 0  # no vector index was ever written: nothing to remove


def test_a_keyword_only_forget_of_memories_that_have_vectors_says_the_vectors_remain(home, monkeypatch):
    """The embedder turned off (CMMS_EMBEDDER=none) after memories were embedded: the forget
    cannot reach the index, and says so instead of exiting 0."""
    settings = Settings.load(home)
    with MemoryService(settings, scheduler=False) as service:
        ids = [service.remember(SCOPE, note) for note in NOTES]
        assert service.upkeep.drain(120) and _indexed(service, ids) == set(ids)
    ran = cli(home, "forget", "--scope", SCOPE, "--id", ids[0], env={"CMMS_EMBEDDER": "none"})
    assert ran.returncode == 4 and "1 forgotten memory" in ran.stderr, ran
    with MemoryService(settings, scheduler=False) as service:  # a process with its embedder on
        assert service.upkeep.drain(60)
        assert service.upkeep.vectors_pending(SCOPE) == 0 and _indexed(service, ids) == set(ids[1:])


def test_a_keyword_only_store_without_an_index_has_no_vectors_pending(home):
    ran = cli(home, "learn", "--create", "The shed key is under the mat.", env={"CMMS_EMBEDDER": "none"})
    assert ran.returncode == 0, ran
    ran = cli(home, "forget", "--scope", "local:default", "--all", env={"CMMS_EMBEDDER": "none"})
    assert (ran.returncode, ran.stderr) == (0, ""), ran
