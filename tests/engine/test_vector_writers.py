"""Every process writes vectors on PostgreSQL with a Chroma server, each the scopes it claims;
one killed while it holds claimed outbox rows loses nothing, and the rows it had written
already are written again under the same ids (one vector per memory and view)."""
from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import threading
import time

import pytest

from db import sql
from conftest import python, subprocess_env

pytestmark = pytest.mark.server_only

SCOPES = [f"user:telegram:{n}" for n in range(4)]

# argv: HERMES_HOME, a file to write once it holds a claim. Claims rows 2 at a time, writes
# their vectors, says which scope it holds, then hangs before marking them done.
HANGS = textwrap.dedent("""
    import sys, time
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.vectors import indexer

    indexer.BATCH = 2
    write = indexer.Indexer._write

    def write_then_hang(self, batch):
        write(self, batch)
        with open(sys.argv[2], "w") as told:
            told.write(batch[0].scope)
        time.sleep(600)

    indexer.Indexer._write = write_then_hang
    service = MemoryService(Settings.load(sys.argv[1]), scheduler=False)
    service.indexer.notify()
    time.sleep(600)
""")


def _wait(check, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_vector_writer_killed_with_claimed_rows_loses_none_and_doubles_none(home, tmp_path):
    from hermes_cmms import MemoryService, Settings

    with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as filling:  # queues, embeds none
        ids = {scope: [filling.remember(scope, f"Note {n} of {scope}: the locker code is {4711 + n}")
                       for n in range(3)] for scope in SCOPES}
    told = tmp_path / "holding"
    hanging = subprocess.Popen([python(), "-c", HANGS, str(home), str(told)], env=subprocess_env(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: told.exists() and told.read_text() or hanging.poll() is not None, "no claim was made")
        assert hanging.poll() is None, hanging.communicate()[1][-3000:]
        held = told.read_text()
        with MemoryService(Settings.load(home), scheduler=False) as other:
            other.indexer.notify()  # it writes every other scope meanwhile, and not the held one
            _wait(lambda: sql(home, "SELECT DISTINCT scope FROM outbox") == [(held,)],
                  "the other process did not write the scopes nobody held")
            assert sql(home, "SELECT count(*) FROM outbox")[0][0] == 3
            hanging.send_signal(signal.SIGKILL)
            hanging.wait(30)
            assert other.upkeep.drain(180)  # the held rows, once their holder died
            assert sql(home, "SELECT count(*) FROM outbox") == [(0,)]
            vectors = other.indexer.vectors
            for scope, mine in ids.items():  # one vector per memory and view, in its scope
                for view in ("content", "context"):
                    assert sorted(i for page in vectors.ids(scope, view) for i in page) == sorted(mine)
                assert sorted(vectors._page(scope, "sentences", 100, 0)) == sorted(f"{i}:0" for i in mine)
            found = other.semantic_search(held, "what is the locker code", top_k=3)
            assert {memory.id for memory in found} == set(ids[held])
    finally:
        if hanging.poll() is None:
            os.kill(hanging.pid, signal.SIGKILL)
            hanging.wait(30)


def test_a_claim_lost_while_its_vectors_are_written_leaves_no_vector_of_a_forgotten_memory(home):
    """PostgreSQL ends a claim's transaction (idle_in_transaction_session_timeout: a slow Chroma
    server, say) while its process embeds; another process forgets the memory and applies the
    delete before the vectors land. The first process finds its claim gone when it marks the
    rows done, and removes the vectors of memories no longer stored."""
    from hermes_cmms import MemoryService, Settings

    with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as filling:
        gone = filling.remember(SCOPES[0], "The locker code is 4711")
        kept = filling.remember(SCOPES[0], "The bike is in the cellar")
    writer, others = MemoryService(Settings.load(home), scheduler=False), []
    try:
        upsert, unwrite, checked = writer.indexer._upsert, writer.indexer._unwrite_forgotten, threading.Event()

        def upsert_after_a_forget(scope, memories):
            if not others:  # the claim's session ends, another process forgets meanwhile
                ended = sql(home, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                  "datname = current_database() AND state = 'idle in transaction'")
                others.append(MemoryService(Settings.load(home), scheduler=False))
                others[0].forget(SCOPES[0], gone)
                assert others[0].indexer.drain(120) and ended == [(True,)]
            upsert(scope, memories)  # the memories read before the forget: its vectors land now

        def unwrite_then_say(batch):
            unwrite(batch)
            checked.set()

        writer.indexer._upsert, writer.indexer._unwrite_forgotten = upsert_after_a_forget, unwrite_then_say
        writer.indexer.notify()
        assert checked.wait(180), "the writer's claim did not fail"
        for index in (writer.indexer.vectors, others[0].indexer.vectors):
            assert index.present(SCOPES[0], [gone, kept]) == {kept}
            assert index.present(SCOPES[0], [gone], "sentences") == set()
        drift = others[0].upkeep.audit("vector_drift")["findings"]["vector_drift"]
        assert not [f for f in drift if f["check"] == "stray_vector"], drift
    finally:
        for service in (writer, *others):
            service.close()
