"""How the engine starts its background threads: in the context of whoever started them.

Hermes keeps the profile (its home, the turn's secret scope) in context variables; a bare
thread starts with an empty context, so it reads the *default* profile. Every engine thread
(indexer, the pools' workers, scheduler, the Hermes mirror, the int8 model's preparation) is
started through one `Threads`: by default it copies the caller's context into the thread
(`contextvars`); the Hermes door hands down the host's own spawner where Hermes has one (0.23:
`spawn_context_thread` and `ctx_bound`), which then starts every one of them, a pool's workers
too. The engine never imports Hermes: it is given this.
"""
from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Callable, Optional

Spawn = Callable[..., Any]  # spawn(target, *, name, daemon=True, args=(), kwargs=None) -> Thread
Bind = Callable[[Callable], Callable]  # bind(fn) -> fn run in the context bind() was called in


def spawn_in_context(target: Callable, *, name: str, daemon: bool = True, args: tuple = (),
                     kwargs: Optional[dict] = None) -> threading.Thread:
    """Start `target(*args, **kwargs)` on a thread that runs in a copy of the caller's context."""
    thread = threading.Thread(target=contextvars.copy_context().run, args=(target, *args),
                              kwargs=kwargs or {}, name=name, daemon=daemon)
    thread.start()
    return thread


def bind_to_context(fn: Callable) -> Callable:
    """`fn`, to be run later (on any thread) in a copy of the caller's context as it is now."""
    context = contextvars.copy_context()
    return lambda *args, **kwargs: context.copy().run(fn, *args, **kwargs)


@dataclass(frozen=True)
class Threads:
    """The one spawner handed down to every part that starts a thread or feeds a pool."""

    spawn: Spawn = spawn_in_context
    bind: Bind = bind_to_context

    def start(self, target: Callable, name: str, *args: Any, daemon: bool = True) -> threading.Thread:
        """Start `target(*args)` as a thread called `name` (a daemon unless said); the thread, started."""
        thread = self.spawn(target, name=name, daemon=daemon, args=args)
        if isinstance(thread, threading.Thread) and thread.ident is None:  # a host that only builds it
            thread.start()
        return thread

    def pool(self, workers: int, prefix: str) -> "BoundPool":
        """A thread pool whose workers this spawner starts and whose every task runs in its
        submitter's context."""
        return BoundPool(self, workers, prefix)


class BoundPool(Executor):
    """A thread pool of up to `workers` threads named `prefix_N`, each started by `threads` when
    a task finds every worker busy (as ThreadPoolExecutor's are, which starts its own: a host's
    spawner would not see them). Each task is bound to the context it was submitted from: a
    pool's threads are shared by every submitter, so it is the task that carries the profile."""

    def __init__(self, threads: Threads, workers: int, prefix: str):
        self._threads, self._max, self._prefix = threads, workers, prefix
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._workers: list = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False
        # As ThreadPoolExecutor's: the workers are no daemons (a task queued when the process
        # ends, a recall event, is still done) and are told to stop, then joined, at exit, before
        # Python waits for the threads that are not daemons (an idle worker would keep it waiting).
        with contextlib.suppress(RuntimeError):  # (a pool made while the process ends: no exit to wait for)
            threading._register_atexit(self.shutdown)  # what concurrent.futures' pools use

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        bound = self._threads.bind(fn)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._tasks.put((future, bound, args, kwargs))
            if self._idle == 0 and len(self._workers) < self._max:
                self._workers.append(self._threads.start(self._work, f"{self._prefix}_{len(self._workers)}",
                                                         daemon=False))
            elif self._idle:
                self._idle -= 1  # (the task is that worker's: the next finds it busy)
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                self._tasks.put(None)  # every worker stops
                return
            future, fn, args, kwargs = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - the submitter's to see
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._workers)
        if cancel_futures:
            while True:
                try:
                    task = self._tasks.get_nowait()
                except queue.Empty:
                    break
                if task is not None:
                    task[0].cancel()
        self._tasks.put(None)
        if wait:
            for worker in workers:
                if isinstance(worker, threading.Thread) and worker is not threading.current_thread():
                    worker.join()


IN_CONTEXT = Threads()
