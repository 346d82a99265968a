"""The provider-driving loop shared by every benchmark: fresh home, ingest, restart, ask."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from ..common.errors import CmmsError, InvalidInput

# Hermes passes these to initialize(); user_id gives the bench its own gateway-style scope.
PROVIDER_KWARGS = {"platform": "cli", "agent_context": "primary", "user_id": "bench"}
EVIDENCE_CHARS = 60  # an evidence turn counts as recalled when this much of it is in the context
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_ENV = ("HERMES_HOME", "CMMS_RECALL_TOKENS", "CMMS_DATABASE_URL", "CMMS_CHROMA_URL")

Tick = Callable[[str], None]


@dataclass
class Pair:
    """One sync_turn: the user side, the assistant side, and which source messages each holds."""

    user: str
    assistant: str
    user_msgs: list = field(default_factory=list)
    assistant_msgs: list = field(default_factory=list)


def pair_up(messages: Sequence[tuple[bool, str, Any]]) -> list[Pair]:
    """Group (is_user, text, message id) into user/assistant pairs, as Hermes sees turns:
    a user message after an assistant reply starts the next pair."""
    pairs, user, assistant = [], [], []
    for is_user, text, msg_id in messages:
        if is_user and assistant:
            pairs.append(_pair(user, assistant))
            user, assistant = [], []
        (user if is_user else assistant).append((text, msg_id))
    if user or assistant:
        pairs.append(_pair(user, assistant))
    return pairs


def _pair(user: list, assistant: list) -> Pair:
    return Pair("\n".join(t for t, _ in user), "\n".join(t for t, _ in assistant),
                [m for _, m in user], [m for _, m in assistant])


def norm(text: str) -> str:
    """Lower-case alphanumerics separated by single spaces (the reference harness' rule)."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def evidence_in(context_norm: str, text: str) -> bool:
    return norm(text)[:EVIDENCE_CHARS] in context_norm


def load_json(path: str | os.PathLike) -> Any:
    """The parsed file, or InvalidInput saying in one sentence why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise InvalidInput(f"Cannot read {str(path)!r}: {exc.strerror or exc}.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{str(path)!r} is not valid JSON ({exc}).") from None


def load_list(path: str, benchmark: str, noun: str, check: Callable[[str, int, object], None]) -> list:
    """A benchmark file: a non-empty JSON list whose every entry passes `check`."""
    data = load_json(path)
    if not isinstance(data, list) or not data:
        raise InvalidInput(f"{path!r} is not a {benchmark} file: expected a non-empty list of {noun}.")
    for i, entry in enumerate(data):
        check(path, i, entry)
    return data


@contextmanager
def fresh_home(budget: Optional[int]) -> Iterator[Path]:
    """An empty HERMES_HOME whose store lives inside it, with `budget` as the recall budget;
    the environment is restored and the home deleted afterwards."""
    home = Path(tempfile.mkdtemp(prefix="cmms_bench_"))
    saved = {name: os.environ.get(name) for name in _ENV}
    os.environ["HERMES_HOME"] = str(home)
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL"):  # never the user's own store
        os.environ.pop(name, None)
    if budget is not None:
        os.environ["CMMS_RECALL_TOKENS"] = str(budget)
    try:
        yield home
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(home, ignore_errors=True)


class Clock:
    """When dated, the process clock stands at a given moment and runs on from it
    (time-machine moves time.time() for every thread, as the reference harness' _Clock does);
    otherwise a no-op. at(None) returns to the real time."""

    def __init__(self, dated: bool):
        self.dated, self._trip = dated, None
        if dated:
            _time_machine()

    def at(self, when: Optional[datetime]) -> None:
        self.stop()
        if self.dated and when is not None:
            self._trip = _time_machine().travel(when, tick=True)
            self._trip.start()

    def stop(self) -> None:
        if self._trip is not None:
            self._trip.stop()
            self._trip = None


def _time_machine():
    try:
        import time_machine
    except ImportError as exc:
        raise CmmsError(f"A dated run moves the clock with time-machine, which cannot be imported "
                        f"({exc}); reinstall hermes-cmms or pass --undated.") from None
    return time_machine


def open_provider(home: Path, session_id: str):
    """A CmmsMemoryProvider initialised the way Hermes does it."""
    try:
        from ..hermes.provider import CmmsMemoryProvider
    except ImportError as exc:
        raise CmmsError(f"The benchmarks drive the Hermes provider, which needs Hermes Agent "
                        f"installed (pip install 'hermes-cmms[hermes]'): {exc}.") from None
    provider = CmmsMemoryProvider()
    provider.initialize(session_id, hermes_home=str(home), **PROVIDER_KWARGS)
    return provider


def ingest(home: Path, sessions: Sequence[tuple[str, Sequence[Pair]]], tick: Tick,
           clock: Optional[Clock] = None, times: Sequence[Optional[datetime]] = ()) -> float:
    """Feed every session turn by turn, end each session, shut down; return wall seconds.
    With a clock, session i is fed while the clock stands at times[i] (now where None)."""
    started, provider = time.perf_counter(), None
    for number, (session_id, pairs) in enumerate(sessions):
        if clock is not None:
            clock.at(times[number] if number < len(times) else None)
        if provider is None:
            provider = open_provider(home, session_id)
        else:
            provider.on_session_switch(session_id, reset=True)
        messages = []
        for number, pair in enumerate(pairs, 1):
            provider.on_turn_start(number, pair.user)
            provider.sync_turn(pair.user, pair.assistant, session_id=session_id)
            messages += [{"role": "user", "content": pair.user},
                         {"role": "assistant", "content": pair.assistant}]
            tick(f"ingest {session_id}")
        provider.on_session_end(messages)
    if provider is not None:
        provider.shutdown()
    return time.perf_counter() - started


def prefetch(provider, question: str, session_id: str) -> tuple[str, float]:
    """The injected context for `question` and how long prefetch took, in milliseconds."""
    started = time.perf_counter()
    context = provider.prefetch(question, session_id=session_id) or ""
    return context, (time.perf_counter() - started) * 1000


def embedder_name(provider) -> str:
    """The embedder recall used (read after asking, once it has surely loaded)."""
    return provider.service.status()["embedder"] if provider.service else "unknown"


def latency(ms: Sequence[float]) -> dict:
    """p50/p95 picked exactly as the reference harness picks them."""
    ordered = sorted(ms)
    if not ordered:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    return {"p50_ms": ordered[len(ordered) // 2], "p95_ms": ordered[int(len(ordered) * 0.95)]}


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0
