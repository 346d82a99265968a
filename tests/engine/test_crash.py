"""SIGKILL mid-run: every acknowledged turn is on disk, and the vector index catches up."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from sqlalchemy import text

from hermes_cmms import MemoryService, Settings
from hermes_cmms.store.store import Store
from hermes_cmms.vectors.chroma import VectorIndex

from conftest import subprocess_env
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

pytestmark = pytest.mark.store

N = 50
SCOPE = "local:default"
SESSION = "crash-session"

CHILD = textwrap.dedent("""
    import sys, time
    from hermes_cmms.provider import CmmsMemoryProvider

    provider = CmmsMemoryProvider()
    provider.initialize("crash-session", hermes_home=sys.argv[1], platform="cli",
                        agent_context="primary")
    indexer = provider.service.indexer
    indexer.ready.wait(120)
    print("ready", indexer.active, flush=True)
    for i in range(1, int(sys.argv[2]) + 1):
        provider.sync_turn(f"Crash log entry {i}: the courier brought parcel number {i}",
                           f"Acknowledged parcel {i}")
        print(i, flush=True)
    time.sleep(120)  # never exits by itself: the parent kills it
""")


def _run_and_kill(home) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(home), str(N)], env=subprocess_env(home),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout.readline().split() == ["ready", "True"]  # indexing is live in the child
        acks = [int(child.stdout.readline()) for _ in range(N)]
        os.kill(child.pid, signal.SIGKILL)
        assert acks == list(range(1, N + 1))
    finally:
        child.kill()
        child.wait(30)
    assert child.returncode == -signal.SIGKILL


def test_every_acknowledged_turn_survives_sigkill(home):
    _run_and_kill(home)
    settings = Settings.load(home)

    store = Store(settings.database_url)  # no indexer yet: see exactly what the dead process left
    try:
        assert store.integrity() == "ok"
        with store.read() as conn:
            rows = conn.execute(text(
                "SELECT id, role, turn, content FROM memories WHERE scope = :scope AND session_id = :session"),
                {"scope": SCOPE, "session": SESSION}).all()
        assert len(rows) == 2 * N
        assert sorted({r.turn for r in rows}) == list(range(1, N + 1))
        assert all(sorted(r.role for r in rows if r.turn == t) == ["assistant", "user"]
                   for t in range(1, N + 1))
        assert {r.content for r in rows if r.turn == N} == {
            f"Crash log entry {N}: the courier brought parcel number {N}", f"Acknowledged parcel {N}"}
        pending = {row.memory_id for row in store.pending(10 * N)}
        assert store.unflushed_sessions(scope=SCOPE) == [(SCOPE, SESSION)]
    finally:
        store.close()
    indexed = VectorIndex(settings).present(SCOPE, [r.id for r in rows])
    assert {r.id for r in rows} <= pending | indexed  # each row is indexed or still queued

    service = MemoryService(settings)
    try:
        last_user = next(r for r in rows if r.turn == N and r.role == "user")
        deadline = time.monotonic() + 30
        while True:
            hits = ranked(service.engine, SCOPE, last_user.content, limit=5)
            if hits and hits[0].memory.id == last_user.id and hits[0].vector_rank == 0:
                break
            assert time.monotonic() < deadline, "the indexer did not catch up within 30 s"
            time.sleep(0.2)
        assert service.upkeep.drain(30)
        assert service.store.counts()["outbox"] == 0
        assert service.indexer.vectors.count() == 2 * N
    finally:
        service.close()
