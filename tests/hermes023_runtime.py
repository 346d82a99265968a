"""A test double of how Hermes 0.23's memory manager calls a provider at run time, built only
from /work/shared/hermes/HERMES-0.23.md ("Gaps and provenance", items 9, 15 and 16): 0.23 cannot
be installed here. Each part names the item it follows; what the page leaves open is said.
The real 0.19 manager (agent.memory_manager) is tested beside it."""
from __future__ import annotations

import contextvars
import inspect
import threading
from typing import Any, Callable, Optional

from agent.memory_provider import MemoryProvider


class Spawner:
    """Item 9 and "Gaps": the ABC's `spawn_context_thread(target, *, name, daemon=True, args=(),
    kwargs=None)` and `ctx_bound(fn)`, the single spawner (PR #109563); a bare thread loses
    HERMES_HOME and the secret scope, so both run their work in a copy of the caller's context.
    Whether upstream's returns the thread started is not said: this one does. It records the
    name of every thread it started and how many callables it bound."""

    def __init__(self) -> None:
        self.spawned: list[str] = []
        self.bound = 0
        self._lock = threading.Lock()

    def spawn_context_thread(self, target: Callable, *, name: str, daemon: bool = True, args: tuple = (),
                             kwargs: Optional[dict] = None) -> threading.Thread:
        with self._lock:
            self.spawned.append(name)
        thread = threading.Thread(target=contextvars.copy_context().run, args=(target, *args),
                                  kwargs=kwargs or {}, name=name, daemon=daemon)
        thread.start()
        return thread

    def ctx_bound(self, fn: Callable) -> Callable:
        with self._lock:
            self.bound += 1
        context = contextvars.copy_context()
        return lambda *args, **kwargs: context.copy().run(fn, *args, **kwargs)

    def install(self, monkeypatch) -> "Spawner":
        """Give the installed 0.19 ABC the two 0.23 methods (static: callable on any provider)."""
        monkeypatch.setattr(MemoryProvider, "spawn_context_thread", staticmethod(self.spawn_context_thread),
                            raising=False)
        monkeypatch.setattr(MemoryProvider, "ctx_bound", staticmethod(self.ctx_bound), raising=False)
        return self


def accepts(method: Callable, name: str) -> bool:
    """Item 15 (`_provider_sync_accepts`) and item 16 (`_accepts_require_checkpoint`): an
    optional kwarg is passed only when the signature names it or takes **kwargs."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def turn_start(provider: Any, turn: int, message: str, **author: Any) -> None:
    """Item 15 (`_tick`) and "Gaps" (PR #107520): on_turn_start gets author_id, author_name
    and author_is_bot when it can take them."""
    provider.on_turn_start(turn, message, **{k: v for k, v in author.items() if accepts(provider.on_turn_start, k)})


def sync_turn(provider: Any, user: str, assistant: str, *, session_id: str = "",
              messages: Optional[list] = None, turn_author: Optional[dict] = None) -> None:
    """Item 15: sync_turn(messages=, turn_author=) only when the signature takes them;
    turn_author is {"id", "name", "is_bot"} ("Gaps")."""
    kwargs: dict[str, Any] = {"session_id": session_id}
    if messages is not None and accepts(provider.sync_turn, "messages"):
        kwargs["messages"] = messages
    if turn_author is not None and accepts(provider.sync_turn, "turn_author"):
        kwargs["turn_author"] = turn_author
    provider.sync_turn(user, assistant, **kwargs)


class CompactionRefused(RuntimeError):
    """The compaction stopped: `compression.checkpoint_required` and no checkpoint was saved."""


def normalised(messages: list) -> list[dict]:
    """Item 16: v2 "gets normalized evidence". The page does not give its shape; taken here as
    the user and assistant messages that hold text, as {"role", "content"} (a multimodal
    message's text parts joined by lines, as 0.19 flattens it for sync_turn)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        if m.get("role") in ("user", "assistant") and isinstance(content, str) and content.strip():
            out.append({"role": m["role"], "content": content})
    return out


def pre_compress(provider: Any, messages: list, *, checkpoint_required: bool = False) -> str:
    """Item 16 and the issue: a v2 provider (`pre_compress_checkpoint_api_version = 2` and a
    signature that accepts `require_checkpoint`) is called with the normalised evidence; with
    `compression.checkpoint_required`, compaction fails closed when the provider raises or
    cannot checkpoint at all. Without it, a failure costs the provider's contribution only."""
    v2 = getattr(provider, "pre_compress_checkpoint_api_version", 1) >= 2 and \
        accepts(provider.on_pre_compress, "require_checkpoint")
    if checkpoint_required and not v2:
        raise CompactionRefused(f"memory provider {provider.name!r} cannot save a checkpoint")
    try:
        if v2:
            result = provider.on_pre_compress(normalised(messages), require_checkpoint=checkpoint_required)
        else:
            result = provider.on_pre_compress(messages)
    except Exception as exc:
        if checkpoint_required:
            raise CompactionRefused(f"memory provider {provider.name!r} did not save a checkpoint: {exc}") from exc
        return ""
    return result if isinstance(result, str) else ""
