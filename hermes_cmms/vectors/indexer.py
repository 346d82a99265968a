"""Background worker: turns outbox rows into vector-index writes, in batches."""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..store.store import Store
from ..store.vector_rows import outbox_lag
from ..common.text import clean
from ..common.threads import IN_CONTEXT, Threads
from ..common.units import units
from .chroma import UNITS, VectorIndex

try:
    import fcntl
except ImportError:  # Windows: one process per store
    fcntl = None

if TYPE_CHECKING:
    from .embedders import Embedder  # (the module brings numpy: imported with the embedder)

log = logging.getLogger(__name__)

BATCH = 64
DELETE_QUIET_S = 0.3  # no new vector delete for this long: a run of deletes (a forget) has ended
EMBEDDER_WAIT_S = 1.0  # a turn waits at most this long for the model to finish loading (it loads in
# ~0.3 s once prepared; a slower load leaves that turn keyword-only rather than make it wait)
MAX_EMBED_CHARS = 2000  # MiniLM reads 256 word pieces; more text only costs time
PROGRESS_S = 0.5  # a drain that reports progress counts the outbox this often
POLL_S = 0.25  # how often an idle writer looks for rows other processes queued
REFRESH_S = 0.25  # a reader re-opens the vector index at most this often
SETTLE_S = 0.5  # a recall waits at most this long for the vectors of this process's own last writes


class Indexer:
    """Loads the embedder off the caller's thread, then drains the outbox as work arrives.

    Several processes may share one store (the Hermes gateway and MCP bridges). On PostgreSQL
    with a Chroma server every one of them writes vectors, each the scopes it claims in SQL
    (store/outbox_claims.py). Otherwise exactly one writes the vector index: the one holding
    the lock file `lock_path` (or the `indexer` lease, with a Chroma server); when it exits,
    another takes over. The others only read, and re-open the index when the writer's
    generation counter (in SQL) has moved, since embedded Chroma does not show another
    process's new vectors to a client that is already open.
    """

    def __init__(self, store: Store, load_embedder: Callable[[], Optional[Embedder]],
                 open_vectors: Callable[[], VectorIndex], lock_path: Optional[Path] = None,
                 start: bool = True, threads: Threads = IN_CONTEXT):
        self.store = store
        self._threads = threads
        self._load_embedder = load_embedder
        self._open_vectors = open_vectors
        self.embedder: Optional[Embedder] = None
        self.vectors: Optional[VectorIndex] = None
        self.error: Optional[str] = None
        self._ready = threading.Event()  # set once the embedder has loaded (or failed to)
        self._lock = WriterLock(lock_path)
        self._generation = -1  # index generation this process's vector client has seen
        self._refreshed = 0.0
        self._refresh_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._unsaved: set[str] = set()  # scopes with vector deletes Chroma has not saved yet
        self._thread: Optional[threading.Thread] = None
        self._writes: Optional[Executor] = None  # the sentence view's writes, beside the others
        self._starting = threading.Lock()
        self._reading_only = False  # a process that only queries (a CLI search) never writes the index
        self._mine: dict[str, set[str]] = {}  # per scope, memories this process queued vectors for (settle)
        self._stalled: dict[str, set[str]] = {}  # per scope, those a settle waited for in vain
        self.failing: Optional[str] = None  # the last batch's error, until a batch is written again
        self.settled = "nothing waited for"  # what the last settle waited for (or why it did not)
        if start:
            self.start()

    def start(self) -> None:
        """Load the embedder and drain the outbox on the indexer thread, from now on (once;
        after stop(), never). An indexer made with start=False starts when first asked to
        work: by `ready`, notify() or drain()."""
        with self._starting:
            if self._thread is None and not self._stop.is_set():
                # numpy whole before the thread imports the model on top of it: a thread that
                # touches numpy while another is still importing it can get the module half made
                # ("partially initialized module 'numpy' has no attribute 'ndarray'")
                import numpy  # noqa: F401

                self._thread = self._threads.start(self._run, "cmms-indexer")

    def read_only(self) -> None:
        """This process only queries the index from now on: it never becomes the index writer,
        so it leaves the outbox to the process that writes (a `hermes-cmms search` on a store
        whose vectors are still queued embedded them until it exited: seconds of a command)."""
        self._reading_only = True

    @property
    def started(self) -> bool:
        """Whether the indexer thread was started (a command that only reads SQL never starts it)."""
        return self._thread is not None

    @property
    def ready(self) -> threading.Event:
        """Set once the embedder has loaded (or failed to); asking starts the indexer."""
        self.start()
        return self._ready

    @property
    def writer(self) -> bool:
        """Whether this process writes the vector index."""
        return self._lock.held

    def refresh(self) -> None:
        """In a reader process, re-open the vector index if the writer has moved it on."""
        if self.vectors is None or not self.vectors.embedded or self.writer:
            return
        now = time.monotonic()
        if now - self._refreshed < REFRESH_S or not self._refresh_lock.acquire(blocking=False):
            return
        try:
            self._refreshed = now
            self._catch_up()
        except Exception as exc:  # noqa: BLE001 - stale vectors beat a failed recall
            log.warning("hermes-cmms: could not re-open the vector index: %s", exc)
        finally:
            self._refresh_lock.release()

    @property
    def active(self) -> bool:
        return self.embedder is not None and self.vectors is not None

    def notify(self) -> None:
        self.start()
        self._wake.set()

    def queued(self, scope: str, memory_ids: Sequence[str] = ()) -> None:
        """This process has just queued vector writes for `memory_ids` of `scope` (memories
        stored): the next recall in it waits for them (settle), and the indexer is woken."""
        self._mine.setdefault(scope, set()).update(memory_ids)
        self.notify()

    def settle(self, scope: str, timeout: float = SETTLE_S) -> bool:
        """Before a search by meaning in `scope`: wait up to `timeout` until the vectors of the
        memories this process queued for it are written, so a memory stored a moment before is
        found by meaning too; whether they are (True also when nothing of this process waited).
        Only this process's own writes are waited for, and not at all when they cannot be written
        in time: no vector index, its last batch failed (as while a Chroma server is down, until
        one is written again), more than a batch of older rows queued ahead of them (an import's
        backlog), or rows an earlier settle gave up on still queued. A search in a scope this
        process did not write costs nothing; `settled` says what the last settle did.
        """
        mine = self._mine.pop(scope, set())
        if not mine:
            return True
        deadline = time.monotonic() + timeout
        if not self._ready.wait(timeout) or not self.active:
            return self._not_waited(scope, set(), "no vector index is loaded")
        if self.failing:
            return self._not_waited(scope, mine, f"the last vector write failed ({self.failing[:200]})")
        left, ahead = self.store.queued(scope, sorted(mine), BATCH + 1)
        self._stalled[scope] = self._stalled.get(scope, set()) & left
        if self._stalled[scope]:
            return self._not_waited(scope, left, "a settle already gave up on them")
        if ahead > BATCH:
            return self._not_waited(scope, left, f"more than {BATCH} older vector writes are queued ahead")
        self.settled = f"waited for {len(left)} vector write(s) of this process"
        while left:
            if time.monotonic() >= deadline:
                return self._not_waited(scope, left, "they were not written in time")
            self.notify()
            time.sleep(0.01)
            left, _ = self.store.queued(scope, sorted(left), 0)
        self._stalled.pop(scope, None)
        self._refreshed = 0.0  # a reader process re-opens the index at the next query (refresh)
        return True

    def _not_waited(self, scope: str, left: set[str], why: str) -> bool:
        """A settle that does not wait (longer) for `left`: they are kept for the next one, which
        does not wait for them again until they are written."""
        if left:
            self._mine.setdefault(scope, set()).update(left)
            self._stalled.setdefault(scope, set()).update(left)
        self.settled = f"not waited for {len(left)} vector write(s) of this process: {why}"
        log.debug("hermes-cmms: recall in %r %s", scope, self.settled)
        return False

    def drain(self, timeout: float, progress: Optional[Callable[[int], None]] = None) -> bool:
        """Wait until the outbox is empty (True) or `timeout` passes (False); `progress(rows
        left)` is called about every PROGRESS_S while it waits, and once at the end."""
        deadline = time.monotonic() + timeout
        if progress is not None:  # (before the model has loaded)
            progress(outbox_lag(self.store)[0])
        if not self.ready.wait(timeout) or not self.active:
            return False
        told = time.monotonic()
        while time.monotonic() < deadline:
            if self.store.outbox_empty():
                if progress is not None:
                    progress(0)
                return True
            if progress is not None and time.monotonic() - told >= PROGRESS_S:
                progress(outbox_lag(self.store)[0])
                told = time.monotonic()
            self.notify()
            time.sleep(0.02)
        return False

    def wait_deleted(self, scope: str, timeout: float) -> bool:
        """After a forget: wait until the scope's queued vector deletions are done and scrubbed
        from the index files (by this process or whichever one writes the index); False if
        `timeout` passed first (they go on). A process without a vector index does not wait;
        one still loading its embedder waits, as another process may be the index writer."""
        deadline = time.monotonic() + timeout
        while self.store.deletes_pending(scope):
            if (self.ready.is_set() and not self.active) or time.monotonic() >= deadline:
                return False
            self.notify()
            time.sleep(0.02)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        with self._starting:  # a thread not started by now never starts
            self._stop.set()
        self._wake.set()
        if self.started:
            self._thread.join(timeout)
        if self._writes is not None:
            self._writes.shutdown(wait=False)
        self._lock.release()

    def _run(self) -> None:
        self._start()
        if self.active and not self.vectors.embedded:  # a server: every process writes on PostgreSQL
            self._lock = EveryProcess() if self._by_scope else LeaseLock(self.store)
        while not self._stop.is_set():
            try:
                # this process's own batched maintenance first: sharing its CPU (and the GIL)
                # with Chroma work made a forget of 1,000 memories take 3x as long
                worked = self.active and not self.store.maintaining and self._claim() and self._step()
            except Exception as exc:  # noqa: BLE001 - the database is away: wait, then go on
                log.warning("hermes-cmms: indexer paused, will retry: %s", exc)
                self._stop.wait(min(30.0, POLL_S * 8))
                continue
            if not worked:
                self._wake.wait(POLL_S)
                self._wake.clear()

    def _claim(self) -> bool:
        """Whether this process is (or just became) the index writer."""
        if self._reading_only:
            return False
        if self._lock.held and self._lock.keep():
            return True
        if not self._lock.acquire():
            return False
        if self.vectors.embedded:
            self._catch_up()  # see what the previous writer wrote before writing on
        return True

    def _catch_up(self) -> None:
        """Re-open the embedded vector index if another writer has moved it on since."""
        generation = self.store.index_generation()
        if generation != self._generation:
            self.vectors.reopen()
            self._generation = generation

    def _start(self) -> None:
        try:
            self.embedder = self._load_embedder()
            if self.embedder is not None:
                self._generation = self.store.index_generation()  # what the new client shows
                self.vectors = self._open_vectors()
        except Exception as exc:  # noqa: BLE001 - a broken index degrades recall, never the turn
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("hermes-cmms: vector index unavailable, recall is keyword-only: %s", self.error)
            self.embedder = None
        finally:
            self._ready.set()

    @property
    def _by_scope(self) -> bool:
        """Whether every process writes vectors, each the scopes it claims (a Chroma server
        and PostgreSQL: outbox_claims); else one process writes them all."""
        return not self.vectors.embedded and self.store.engine.dialect.name == "postgresql"

    def _step(self) -> bool:
        pause = 0.0
        with self.store.claim(BATCH, by_scope=self._by_scope) as claim:
            batch = claim.rows
            if not batch:
                return False
            try:
                self._write(batch)
                self._lock.check()  # still the writer (a lease may have run out meanwhile)
                claim.done()
                self.failing = None
            except Exception as exc:  # noqa: BLE001 - keep the rows, retry later
                log.warning("hermes-cmms: indexing failed, will retry: %s", exc)
                self._unwrite_forgotten(batch)
                claim.failed(f"{type(exc).__name__}: {exc}")
                pause = min(30.0, 0.5 * 2 ** min(max(r.attempts for r in batch), 6))
                self.failing = f"{type(exc).__name__}: {exc}"
        self._stop.wait(pause)  # (with the claim let go)
        return True

    def _unwrite_forgotten(self, batch) -> None:
        """After a batch failed: remove the vectors just written for memories that are no longer
        stored. The claim may have been lost while they were written (PostgreSQL ended its idle
        transaction, or the writer's lease ran out), and another process may have applied a
        forget meanwhile, before they landed; nothing would then remove them."""
        upserts: dict[str, list[str]] = defaultdict(list)
        for row in batch:
            if row.op == "upsert":
                upserts[row.scope].append(row.memory_id)
        try:
            for scope, ids in upserts.items():
                gone = sorted(set(ids) - set(self.store.get(ids, scope)))
                if gone:
                    self.vectors.delete(scope, gone)
        except Exception as exc:  # noqa: BLE001 - the audit's vector_drift finds what is left
            log.warning("hermes-cmms: could not check the vectors of a failed claim: %s", exc)

    def _write(self, batch) -> None:
        deleting = any(row.op == "delete" for row in batch)
        newest = {row.scope: row.id for row in sorted(batch, key=lambda row: row.id)}
        self._apply(batch)
        if deleting and not self._more_deletes(newest):  # (deletes come first)
            # a forget writes in batches milliseconds apart: save and scrub at its end only
            self._stop.wait(DELETE_QUIET_S)
            if not self._more_deletes(newest):  # the end of a run of deletes: saved once, and
                for scope in sorted(self._unsaved):  # out of Chroma's own files too
                    self.vectors.save(scope)
                self._unsaved.clear()
                self.vectors.scrub()

    def _more_deletes(self, newest: dict[str, int]) -> bool:
        """Whether vector deletions were queued after this batch's rows: of its scopes when
        every process writes its own scopes, else of any scope."""
        if self._by_scope:
            return any(self.store.deletes_pending(scope, after=last) for scope, last in newest.items())
        return self.store.deletes_pending(after=max(newest.values()))

    def _apply(self, batch) -> None:
        by_scope: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for row in batch:
            by_scope[row.scope][row.op].append(row.memory_id)
        for scope, ops in by_scope.items():
            if ops["delete"] and not self.store.has_memories(scope):
                self.vectors.drop(scope)  # forget --all: the scope's collections go whole, and with
                self.store.drop_deletes(scope, [row.id for row in batch])  # them its other deletions
            elif ops["delete"]:
                self.vectors.delete(scope, ops["delete"], save=False)
                self._unsaved.add(scope)
            memories = list(self.store.get(ops["upsert"], scope).values())
            if memories:
                self._upsert(scope, memories)

    def _upsert(self, scope: str, memories) -> None:
        """Embed each memory and each of its sentences (units.py) once; its context vector is
        its own plus the previous message's.

        (Embedding "previous + own text" a second time measured only +0.01 LoCoMo recall for
        twice the embedding work.)
        """
        ids = [m.id for m in memories]
        pieces = [(m, f"{m.id}:{n}", text) for m in memories for n, text in enumerate(units(m.content))]
        texts = [m.content[:MAX_EMBED_CHARS] for m in memories] + [t[:MAX_EMBED_CHARS] for _, _, t in pieces]
        documents = getattr(self.embedder, "embed_documents", None)  # (Embedder)
        vectors = documents(texts, threads=self._threads) if documents else self.embedder.embed(texts)
        plain = dict(zip(ids, vectors[:len(ids)]))
        previous = self.store.previous_message_ids(scope, [m for m in memories if m.context])
        known = {**self.vectors.get(scope, [p for p in previous.values() if p not in plain]), **plain}
        framed = {i: _combine(plain[i], known[p]) for i, p in previous.items() if p in known}
        metadata = [{"kind": m.kind, "created_at": m.created_at} for m in memories]
        split = {m.id for m, _, _ in pieces}
        single = [m for m in memories if m.id not in split]  # its sentence vector is its own
        unit_ids = [f"{m.id}:0" for m in single] + [unit for _, unit, _ in pieces]
        unit_vectors = [plain[m.id] for m in single] + vectors[len(ids):]
        owners = [*single, *(m for m, _, _ in pieces)]
        # the sentence view (the largest) is written on a thread of its own beside the other two:
        # Chroma lets the GIL go while it writes, and its inserts slow as a collection grows
        # (about a third of the indexer's time at 20,000 memories; docs/benchmarks.md)
        sentences = self._write_pool().submit(self.vectors.upsert, scope, unit_ids,
                                          unit_vectors, [{"memory_id": m.id, "kind": m.kind, "created_at": m.created_at}
                                                         for m in owners], view=UNITS) if unit_ids else None
        try:
            self.vectors.upsert(scope, ids, [plain[i] for i in ids], metadata)
            self.vectors.upsert(scope, ids, [framed.get(i, plain[i]) for i in ids], metadata, view="context")
        finally:
            if sentences is not None:
                sentences.result()  # (its failure fails the batch, which is retried whole)

    def _write_pool(self) -> Executor:
        if self._writes is None:
            self._writes = self._threads.pool(1, "cmms-vector-write")  # (each write in the indexer's context)
        return self._writes


class LeaseLock:
    """The writer of a Chroma server's index, chosen in SQL: a lease in the jobs table that the
    holder renews as it works, so exactly one process of all those sharing the database (on
    any machine) writes vectors, and another takes over within LEASE_S when it dies."""

    LEASE_S = 10.0  # how long a dead writer holds up vector writes; renewed every LEASE_S / 2

    def __init__(self, store: Store):
        self.store = store
        self.owner = f"indexer:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._until = 0.0
        self._tried = 0.0

    @property
    def held(self) -> bool:
        """Whether the lease is ours by this process's clock (reading it writes nothing)."""
        return time.time() < self._until

    def keep(self) -> bool:
        """Renew the lease once half of it has run (the indexer thread calls this as it loops);
        False once another process has it."""
        if time.time() < self._until - self.LEASE_S / 2:
            return True
        return self.acquire()

    def acquire(self) -> bool:
        now = time.time()
        if not self.held and now - self._tried < self.LEASE_S / 6:
            return False  # another process holds it: look again a little later
        self._tried = now
        if self.store.lease(self.owner, self.LEASE_S, now, name="indexer"):
            self._until = now + self.LEASE_S
            return True
        self._until = 0.0
        return False

    def check(self) -> None:
        """Before a batch is marked done: renew the lease, and fail the batch (it is retried)
        only if another process took the lease meanwhile."""
        if not self.keep():
            raise RuntimeError("another process took the indexer lease while this one wrote; the batch is retried")

    def release(self) -> None:
        if self._until:
            self._until = 0.0
            try:
                self.store.release_lease(self.owner, name="indexer")
            except Exception as exc:  # noqa: BLE001 - it runs out by itself
                log.warning("hermes-cmms: indexer lease not released: %s", exc)


class EveryProcess:
    """Every process writes vectors (each the scopes it claims in SQL): nothing to hold."""

    held = True

    def acquire(self) -> bool:
        return True

    def keep(self) -> bool:
        return True

    def check(self) -> None:
        """A claim holds its scopes until it ends: nothing to check."""

    def release(self) -> None:
        """Nothing held."""


class WriterLock:
    """A non-blocking exclusive lock on a file, released when the process exits."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self._file = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> bool:
        if self._file is not None:
            return True
        if self.path is None or fcntl is None:  # nothing to share with (or no flock here)
            self._file = True
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+b")  # noqa: SIM115 - kept open while held
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._file = handle
        return True

    def keep(self) -> bool:
        """A file lock lasts as long as the process: nothing to renew."""
        return self.held

    def check(self) -> None:
        """A file lock lasts as long as the process: nothing to check."""

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle not in (None, True):
            handle.close()  # closing the descriptor drops the flock


def _combine(own, before) -> list[float]:
    """The normalised sum of two unit vectors: the memory read after the one before it."""
    total = [a + b for a, b in zip(own, before)]
    norm = sum(x * x for x in total) ** 0.5 or 1.0
    return [x / norm for x in total]


def query_vector(indexer: Indexer, text: str):
    """The text's vector as a query, or None when there is no usable vector index."""
    if not indexer.ready.wait(EMBEDDER_WAIT_S) or not indexer.active:
        return None
    indexer.refresh()  # another process may have written vectors since we last looked
    embed = getattr(indexer.embedder, "embed_query", indexer.embedder.embed)  # (Embedder)
    return embed([clean(text)[:MAX_EMBED_CHARS]])[0]
