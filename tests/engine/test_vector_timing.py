"""How long the vector index may make a caller wait: a Chroma server that accepts connections and
never answers (the opener is bounded, recall falls back to keywords, writes wait in the outbox),
and a recall right after this process's own write (it waits for that write's vectors, bounded)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from conftest import embedded_only

SCOPE = "user:timing"


@pytest.fixture
def silent_server():
    """A socket on 127.0.0.1 that accepts connections and never answers (a hung Chroma server)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    held, stop = [], threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])  # kept open, never read nor answered
            except OSError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield f"http://127.0.0.1:{silent.getsockname()[1]}"
    stop.set()
    acceptor.join(2)
    for conn in held:
        conn.close()
    silent.close()


@pytest.fixture
def half_answering_server():
    """An HTTP server on 127.0.0.1 that answers the first question chromadb's client asks
    (`/auth/identity`) and never answers another: a Chroma server that hangs mid-connect."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # (http.server names it)
            if not self.path.endswith("/auth/identity"):
                stop.wait(60)  # never answers while the test runs
                return
            body = json.dumps({"user_id": "", "tenant": "default_tenant", "databases": ["default_database"]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    stop.set()
    server.shutdown()
    server.server_close()


@pytest.mark.quick
@embedded_only  # (its Chroma URL is the test's server, whatever the pass)
def test_a_chroma_server_that_stops_answering_mid_connect_is_waited_for_a_bounded_time(home, half_answering_server,
                                                                                      monkeypatch):
    from hermes_cmms import Settings
    from hermes_cmms.common.errors import VectorsUnavailable
    from hermes_cmms.vectors import chroma

    monkeypatch.setattr(chroma, "HTTP_TIMEOUT_S", 1.0)
    index = chroma.VectorIndex(Settings.load(home, chroma_url=half_answering_server), owner="0" * 32)
    with pytest.raises(VectorsUnavailable, match="did not finish connecting within 1 s"):
        _within(8, lambda: index.query(SCOPE, [1.0] + [0.0] * 383, 5))


def _within(seconds: float, call):
    """`call()`'s answer, or a failure (not a hung test) if it takes longer than `seconds`."""
    done: dict = {}

    def run() -> None:
        try:
            done["answer"] = call()
        except Exception as exc:  # noqa: BLE001 - raised again on the test's thread
            done["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s"
    if "error" in done:
        raise done["error"]
    return done.get("answer"), time.monotonic() - started


@pytest.mark.quick
@embedded_only  # (its Chroma URL is the silent socket, whatever the pass)
def test_a_chroma_server_that_never_answers_bounds_the_first_connection(home, silent_server, monkeypatch):
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.common.errors import VectorsUnavailable
    from hermes_cmms.vectors import chroma

    monkeypatch.setattr(chroma, "HTTP_TIMEOUT_S", 1.0)
    index = chroma.VectorIndex(Settings.load(home, chroma_url=silent_server), owner="0" * 32)
    with pytest.raises(VectorsUnavailable, match="not answering"):
        _within(8, lambda: index.query(SCOPE, [1.0] + [0.0] * 383, 5))
    service = MemoryService(Settings.load(home, chroma_url=silent_server), scheduler=False)
    try:
        assert service.indexer.ready.wait(60) and service.indexer.active, service.indexer.error
        service.remember(SCOPE, "The rowing club's boathouse key hangs behind the zeppelin poster.")
        block, took = _within(8, lambda: service.recall(SCOPE, "Where does the boathouse key hang?"))
        assert "zeppelin poster" in block  # keyword-only, at once
        assert took < 4.0, took
        assert service.store.counts()["outbox"] >= 1  # the write waits in the outbox
    finally:
        service.close(drain_timeout=0.0)


# A memory and a question about it that share no word (so keyword search cannot find it):
# only its vectors can, and they are written on the indexer's thread after the store returns.
TOLD = "Ilse, my younger sister, relocated to Tromsø last spring."
ASKED = "Which city does my sibling live in nowadays?"


@pytest.mark.quick
def test_a_recall_right_after_a_write_finds_it_by_meaning(service):
    from hermes_cmms.recall.search import search

    assert service.upkeep.wait_vectors(120) and service.indexer.active, service.indexer.error
    service.remember(SCOPE, "The boiler was serviced in March.")  # the index is open and written once
    assert service.upkeep.drain(60)
    stored = service.remember(SCOPE, TOLD)
    hits = search(service.engine, SCOPE, ASKED, limit=5)  # at once: no drain, no sleep
    assert [h.memory.id for h in hits if h.vector_rank is not None][:1] == [stored], [
        (h.memory.content, h.vector_rank, h.keyword_rank) for h in hits]
    assert all(h.keyword_rank is None for h in hits if h.memory.id == stored)  # found by meaning alone


@pytest.mark.quick
@embedded_only  # (the embedded index's writer lock, held by the test as another process would)
def test_a_recall_waits_for_this_processs_own_vectors_and_not_for_a_backlog_ahead_of_them(home):
    from sqlalchemy import func, insert, select

    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.recall.search import search
    from hermes_cmms.store.models import Outbox
    from hermes_cmms.vectors.indexer import BATCH, WriterLock

    settings = Settings.load(home)
    elsewhere = WriterLock(settings.data_dir / "indexer.lock")  # another process writes the index
    assert elsewhere.acquire()
    service = MemoryService(settings, scheduler=False)
    try:
        assert service.indexer.ready.wait(120) and service.indexer.active, service.indexer.error
        with service.store.write() as conn:  # an import's rows, queued without --wait, not this process's
            conn.execute(insert(Outbox), [{"memory_id": f"imported-{n}", "scope": SCOPE, "op": "upsert",
                                           "created_at": time.time()} for n in range(BATCH * 2)])
        own = service.remember(SCOPE, "The boiler was serviced in March.")
        search(service.engine, SCOPE, "When was the boiler serviced?", limit=5)
        assert service.indexer.settled == (f"not waited for 1 vector write(s) of this process: more than {BATCH} "
                                           "older vector writes are queued ahead"), service.indexer.settled
        search(service.engine, SCOPE, "And the boiler?", limit=5)  # no write since: not waited for again
        assert service.indexer.settled.endswith("a settle already gave up on them"), service.indexer.settled
        with service.store.read() as conn:
            assert conn.execute(select(func.count()).select_from(Outbox)).scalar_one() == BATCH * 2 + 1
        elsewhere.release()  # the other process exits: this one writes the backlog, and its own rows
        assert service.upkeep.drain(60)
        assert service.store.queued(SCOPE, [own], 1) == (set(), 0)
        stored = service.remember(SCOPE, TOLD)
        hits = search(service.engine, SCOPE, ASKED, limit=5)
        assert service.indexer.settled == "waited for 1 vector write(s) of this process", service.indexer.settled
        assert [h.memory.id for h in hits if h.vector_rank is not None][:1] == [stored]
    finally:
        elsewhere.release()
        service.close()


@pytest.mark.quick
@embedded_only  # (its Chroma URL is the silent socket, whatever the pass)
def test_a_recall_does_not_wait_for_vectors_while_their_writes_fail(home, silent_server, monkeypatch):
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.recall.search import search
    from hermes_cmms.vectors import chroma

    monkeypatch.setattr(chroma, "HTTP_TIMEOUT_S", 1.0)
    service = MemoryService(Settings.load(home, chroma_url=silent_server), scheduler=False)
    try:
        assert service.indexer.ready.wait(60) and service.indexer.active, service.indexer.error
        service.remember(SCOPE, "The rowing club's boathouse key hangs behind the zeppelin poster.")
        deadline = time.monotonic() + 30
        while not service.indexer.failing and time.monotonic() < deadline:  # (its first batch, timed out)
            time.sleep(0.05)
        assert service.indexer.failing, "the batch to a silent server did not fail"
        service.remember(SCOPE, "The canoe paddles are stacked by the slipway.")
        hits = search(service.engine, SCOPE, "Where are the canoe paddles?", limit=5)
        assert "slipway" in hits[0].memory.content  # by their words
        assert service.indexer.settled.startswith("not waited for 2 vector write(s) of this process: the last "
                                                  "vector write failed ("), service.indexer.settled
    finally:
        service.close(drain_timeout=0.0)
