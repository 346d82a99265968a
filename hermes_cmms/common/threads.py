"""How the engine starts its background threads: in the context of whoever started them.

Hermes keeps the profile (its home, the turn's secret scope) in context variables; a bare
thread starts with an empty context, so it reads the *default* profile. Every engine thread
(indexer, query pool, scheduler, the Hermes mirror, recall-event writer) is started through
one `Threads`: by default it copies the caller's context into the thread (`contextvars`);
the Hermes door hands down the host's own spawner where Hermes has one (0.23:
`spawn_context_thread` and `ctx_bound`). The engine never imports Hermes: it is given this.
"""
from __future__ import annotations

import contextvars
import threading
from concurrent.futures import Future, ThreadPoolExecutor
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

    def start(self, target: Callable, name: str, *args: Any) -> threading.Thread:
        """Start `target(*args)` as a daemon thread called `name`; the thread, started."""
        thread = self.spawn(target, name=name, daemon=True, args=args)
        if isinstance(thread, threading.Thread) and thread.ident is None:  # a host that only builds it
            thread.start()
        return thread

    def pool(self, workers: int, prefix: str) -> "BoundPool":
        """A thread pool whose every task runs in its submitter's context."""
        return BoundPool(self.bind, workers, thread_name_prefix=prefix)


class BoundPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor that binds each task to the context it was submitted from (a pool's
    threads are shared by every submitter, so it is the task that carries the profile)."""

    def __init__(self, bind: Bind, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._bind = bind

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        return super().submit(self._bind(fn), *args, **kwargs)


IN_CONTEXT = Threads()
