"""Bounded write transactions for long maintenance (forget --all, forget by tier or tag, the
expiry sweep, decay, consolidation): each batch holds the writer lock about TARGET_S, then the
work pauses so other writers get in. Also the always-on gauge of how long write transactions
held the writer lock."""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from sqlalchemy import Connection

TARGET_S = 0.04  # one maintenance transaction holds the writer lock about this long
FIRST_ROWS, LEAST_ROWS, MOST_ROWS = 100, 10, 500  # past ~500 ids PostgreSQL may plan a scan
LEAST_PAUSE_S = 0.002  # enough for a thread of this process waiting on the write lock
POLL_GAP_S = 0.025  # SQLite's busy handler polls at most this far apart in a wait's first 128 ms


class WriteHolds:
    """How long write transactions held the writer lock (from BEGIN to the end of COMMIT or
    ROLLBACK): how many, the longest, the total. Costs two clock reads per transaction."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count, self.longest_s, self.total_s = 0, 0.0, 0.0

    def observe(self, seconds: float) -> None:
        with self._lock:
            self.count += 1
            self.total_s += seconds
            self.longest_s = max(self.longest_s, seconds)

    def reset(self) -> dict:
        """The figures so far (then zeroed): {"transactions", "longest_s", "total_s"}."""
        with self._lock:
            figures = {"transactions": self.count, "longest_s": self.longest_s, "total_s": self.total_s}
            self.count, self.longest_s, self.total_s = 0, 0.0, 0.0
            return figures


class Batches:
    """The size of the next batch of rows, adjusted after each so a batch takes about TARGET_S,
    and the pause after it. On SQLite another process waiting for the lock polls it with sleeps
    (1, 2, 5, 10, 15, 20, 25, 25, 25 ms, then longer), so the pause lasts POLL_GAP_S (or the
    batch, if shorter): a poll of anyone who waited for less than 128 ms lands inside it.
    PostgreSQL queues lock waiters, so a short pause is enough there."""

    def __init__(self, dialect: str, first: int = FIRST_ROWS, most: int = MOST_ROWS) -> None:
        self.size, self.most, self.last_s = min(first, most), most, 0.0
        self.polled = dialect == "sqlite"
        self.batches = self.largest = 0

    def done(self, rows: int, seconds: float) -> None:
        """Size the next batch from this one: `rows` took `seconds`."""
        self.last_s, self.batches, self.largest = seconds, self.batches + 1, max(self.largest, rows)
        if rows >= self.size or seconds > TARGET_S:  # a short batch says nothing about a longer one
            scaled = int(self.size * TARGET_S / max(seconds, 1e-4))
            self.size = max(LEAST_ROWS, min(self.most, scaled, self.size * 2))

    def pause(self, since: Optional[float] = None) -> None:
        """Let other writers in; `since`: the perf_counter at which the last transaction ended,
        when other work has been done without the lock since (only what is left is slept)."""
        length = max(LEAST_PAUSE_S, min(self.last_s, POLL_GAP_S)) if self.polled else LEAST_PAUSE_S
        if since is not None:
            length -= time.perf_counter() - since
        if length > 0:
            time.sleep(length)


def slices(items: list, work: Callable[[Connection, list], object]) -> Callable[[Connection, int], int]:
    """An in_batches step that hands `work` the next `size` of `items` each time."""
    at = 0

    def step(conn: Connection, size: int) -> int:
        nonlocal at
        part, at = items[at:at + size], at + size
        if part:
            work(conn, part)
        return len(part)
    return step


def in_batches(store, step: Callable[[Connection, int], int], batches: Optional[Batches] = None,
               after: Optional[Callable[[], None]] = None) -> Batches:
    """Call `step(conn, size)` in write transactions of their own, pausing between two, until a
    step does fewer rows than it was asked for (`after()` is called after each commit); return
    the batches (their sizes, for tests)."""
    batches = batches or Batches(store.engine.dialect.name)
    with store.maintaining_lock:  # `+=` is no atomic step: a lost count would stop the indexer
        store.maintaining += 1  # this process's indexer waits meanwhile (see Indexer._run)
    try:
        while True:
            size = batches.size
            with store.writing() as conn:
                started = time.perf_counter()
                rows = step(conn, size)
            batches.done(rows, time.perf_counter() - started)
            if after is not None:
                after()
            if rows < size:
                return batches
            batches.pause()
    finally:
        with store.maintaining_lock:
            store.maintaining -= 1
