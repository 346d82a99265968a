"""The in-process scheduler: TTL sweep, decay and consolidation on a thread, no extra service.

Every process sharing a store runs a scheduler, but only the one holding the SQL lease
(`jobs` row 'scheduler') runs jobs; the lease is renewed every tick and expires when its
holder dies, so another process takes over. Job times live in SQL too, so a takeover does
not re-run a job that has just run.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import deque
from typing import Callable, Optional

from ..common.threads import IN_CONTEXT, Threads

log = logging.getLogger(__name__)

LEASE_S = 30.0
TICK_S = 5.0


class Scheduler:
    """Runs `jobs` ({name: (interval seconds, function(now))}) while it holds the lease."""

    def __init__(self, store, jobs: dict[str, tuple[float, Callable[[float], object]]],
                 tick: float = TICK_S, lease: float = LEASE_S, threads: Threads = IN_CONTEXT,
                 after: Optional[threading.Event] = None):
        """With `after`, the first step waits until it is set or a tick has passed: a service's
        first recall (the first turn of a fresh Hermes) goes before the jobs due since the last
        process ran them, which then run while the turn waits for the model's reply."""
        self.store = store
        self._after = after
        self.jobs = jobs
        self.tick = tick
        self.lease = max(lease, 3 * tick)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.runs: deque[tuple[str, float]] = deque(maxlen=100)  # latest (job, time) run here
        self._leader = False
        self._stop = threading.Event()
        self._threads = threads
        self._thread: Optional[threading.Thread] = None
        self._heart: Optional[threading.Thread] = None

    def start(self) -> "Scheduler":
        self._thread = self._threads.start(self._run, "cmms-scheduler")
        self._heart = self._threads.start(self._beat, "cmms-scheduler-lease")
        return self

    def _beat(self) -> None:
        """Keep the lease while a long job runs (step() only renews it between jobs)."""
        while not self._stop.wait(self.tick):
            if self._leader:
                try:
                    self._leader = self.store.lease(self.owner, self.lease, time.time())
                except Exception as exc:  # noqa: BLE001 - the next beat tries again
                    log.warning("hermes-cmms: could not renew the scheduler lease: %s", exc)

    @property
    def leader(self) -> bool:
        return self._leader

    @property
    def stopping(self) -> bool:
        """Whether stop() was called: a long job ends at its next safe point."""
        return self._stop.is_set()

    def _run(self) -> None:
        if self._after is not None:
            deadline = time.monotonic() + self.tick
            while not (self._stop.is_set() or self._after.wait(0.05)) and time.monotonic() < deadline:
                pass
        while not self._stop.is_set():
            try:
                self.step(time.time())
            except Exception as exc:  # noqa: BLE001 - a failed job is retried next tick
                log.warning("hermes-cmms: scheduled job failed: %s", exc)
            self._stop.wait(self.tick)

    def step(self, now: float) -> list[str]:
        """Take or renew the lease, then run the jobs that are due; return their names."""
        self._leader = self.store.lease(self.owner, self.lease, now)
        if not self._leader:
            return []
        ran = []
        last = self.store.job_times()
        for name, (interval, job) in self.jobs.items():
            if self._stop.is_set():
                break
            if not last.get(name):  # first lease on this store: start the clock, run later
                self.store.job_ran(name, now)
                continue
            if now - last[name] < interval:
                continue
            self.store.job_ran(name, now)  # stamped first: a takeover or a failure waits a full interval
            started = time.monotonic()
            try:
                result, ok = job(now), True
            except Exception as exc:  # noqa: BLE001 - recorded; tried again next interval
                log.warning("hermes-cmms: scheduled job %s failed: %s", name, exc)
                result, ok = f"{type(exc).__name__}: {exc}"[:300], False
            self.store.record("job", f"scheduler:{self.owner}", None, job=name, ok=ok,
                              seconds=round(time.monotonic() - started, 3), result=result)
            self.runs.append((name, now))
            ran.append(name)
        return ran

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop after the job in progress; give the lease back once nothing runs. False when a
        job was still running after `timeout` (the lease then simply expires)."""
        self._stop.set()
        for thread in (self._thread, self._heart):
            if thread is not None and thread.is_alive():
                thread.join(timeout)
        if self._thread is not None and self._thread.is_alive():
            return False
        if self._leader:
            self.store.release_lease(self.owner)
            self._leader = False
        return True
