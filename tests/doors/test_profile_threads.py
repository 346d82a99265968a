"""Two Hermes profiles in one process, as Hermes' gateway runs them (0.19's multiplexer, 0.23):
each profile's home lives in a context variable (hermes_constants' override, set per turn),
and every thread cmms starts for a profile (indexer, query pool, scheduler, mirror, the turn's
early recall) works in that profile's context and touches that profile's home only. On 0.23
the threads are started by the host's spawner (tests/hermes023_runtime.py, item 9); on 0.19
they carry a copy of the caller's context."""
from __future__ import annotations

import contextvars
import re
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest
from hermes_constants import get_hermes_home, set_hermes_home_override

from conftest import embedded_only
from hermes023_runtime import Spawner
from hermes_cmms.hermes.mirror import Mirror
from hermes_cmms.provider import CmmsMemoryProvider
from hermes_cmms.store.store import Store
from hermes_cmms.vectors import embedders

pytestmark = embedded_only  # two homes, each with its own embedded store: what is checked is their files

PROFILES = ("alpha", "beta")
WAIT_S = 60.0


def _say(profile: str) -> str:
    return f"The {profile}-marker orchard keeps {profile} apricots in crate {len(profile)}."


class Seen:
    """Which profile's home each engine thread saw in its context, per object it worked on."""

    def __init__(self, homes: dict[str, Path]):
        self.homes = {str(home.resolve()): name for name, home in homes.items()}
        self.records: list[tuple[str, str, str]] = []  # (thread, profile worked for, profile seen)
        self._lock = threading.Lock()

    def note(self, whose: str) -> None:
        seen = self.homes.get(str(Path(get_hermes_home()).resolve()), f"other: {get_hermes_home()}")
        with self._lock:
            self.records.append((threading.current_thread().name, whose, seen))

    def profile_of(self, text: str) -> str:
        return next((name for name in PROFILES if f"{name}-marker" in text or name in text.lower()), "")

    def watch(self, monkeypatch) -> None:
        """Note the context of every embed (indexer: memories; query pool: questions), every
        lease (scheduler, mirror) and every mirror pass, with the profile whose data it is."""
        seen = self

        def wrap(cls, name, whose):
            original = getattr(cls, name)

            def watched(obj, *args, **kwargs):
                seen.note(whose(obj, *args))
                return original(obj, *args, **kwargs)

            monkeypatch.setattr(cls, name, watched)

        embedder = type(embedders.load_embedder("auto"))
        for name in ("embed", "embed_documents"):  # questions, and memories where the embedder tells them apart
            if hasattr(embedder, name):
                wrap(embedder, name, lambda _, texts: seen.profile_of(" ".join(texts)))
        wrap(Store, "lease", lambda store, *a: seen.profile_of(store.url))
        wrap(Mirror, "_reconcile", lambda mirror, *a: seen.profile_of(str(mirror.memories)))

    def threads(self, whose: str) -> set[str]:
        return {thread.rstrip("_0123456789") for thread, profile, _ in self.records if profile == whose}


def _in_profile(home: Path, fn, *args, **kwargs):
    """Run `fn` as Hermes' gateway runs a profile's turn: the home set in a context of its own."""
    def scoped():
        set_hermes_home_override(str(home))
        return fn(*args, **kwargs)
    return contextvars.copy_context().run(scoped)


def _wait(predicate) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, "the profiles' threads did not get there in time"
        time.sleep(0.05)


@pytest.mark.parametrize("host", ["0.23", "0.19"])
def test_each_profiles_threads_see_and_touch_only_its_own_home(host, tmp_path, monkeypatch):
    default = tmp_path / "default-home"  # what a thread that lost its context would read
    default.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(default))
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER", "CMMS_SCHEDULER", "CMMS_MIRROR"):
        monkeypatch.delenv(name, raising=False)
    homes = {name: tmp_path / "profiles" / name for name in PROFILES}
    spawner = Spawner().install(monkeypatch) if host == "0.23" else None
    seen = Seen(homes)
    seen.watch(monkeypatch)
    providers = {}
    try:
        for name, home in homes.items():
            (home / "memories").mkdir(parents=True)
            providers[name] = provider = CmmsMemoryProvider()
            _in_profile(home, provider.initialize, f"{name}-session", hermes_home=str(home), platform="cli",
                        agent_context="primary", agent_identity=name)
        for name, home in homes.items():
            provider = providers[name]
            (home / "memories" / "MEMORY.md").write_text(f"{name} notes: {_say(name)}", encoding="utf-8")
            _in_profile(home, provider.on_turn_start, 1, f"Which fruit does the {name} orchard keep?")
            _in_profile(home, provider.prefetch, f"Which fruit does the {name} orchard keep?")
            _in_profile(home, provider.sync_turn, _say(name), "Noted.", session_id=f"{name}-session")
        _wait(lambda: all({"cmms-indexer", "cmms-query", "cmms-scheduler", "cmms-mirror"} <= seen.threads(name)
                          for name in PROFILES))
        _wait(lambda: all(providers[name].service.upkeep.drain(0.1) for name in PROFILES))
    finally:
        for name, provider in providers.items():
            _in_profile(homes[name], provider.shutdown)
    wrong = [record for record in seen.records if record[0].startswith("cmms-") and record[1] and record[1] != record[2]]
    assert not wrong, f"a thread worked for one profile in another's context: {wrong[:5]}"
    for name, home in homes.items():
        other = next(p for p in PROFILES if p != name)
        written = [path for path in home.rglob("*") if path.is_file()]
        assert any(path.name == "cmms.db" for path in written) and (home / "cmms" / "chroma").is_dir()
        leaked = [path for path in written if f"{other}-marker".encode() in path.read_bytes()]
        assert not leaked, f"{other}'s memories reached {name}'s home: {leaked}"
        assert any(f"{name}-marker".encode() in path.read_bytes() for path in written)
    assert not (default / "cmms").exists(), "a thread wrote into the default profile"
    if spawner is not None:  # 0.23: every thread was started by the host, every pool task bound by it
        assert {"cmms-indexer", "cmms-scheduler", "cmms-scheduler-lease", "cmms-mirror",
                "cmms-turn-recall"} <= set(spawner.spawned)
        assert spawner.bound > 0


class RecordingSpawner(Spawner):
    """The 0.23 double's spawner, keeping each thread it started."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def spawn_context_thread(self, target, **kwargs) -> threading.Thread:
        thread = super().spawn_context_thread(target, **kwargs)
        self.threads.append(thread)
        return thread


def _threads_started(monkeypatch) -> list[tuple[threading.Thread, str]]:
    """Every Python thread started from now on, with the module that started it: the nearest
    caller outside the standard library (threading, a ThreadPoolExecutor) and this test."""
    started: list[tuple[threading.Thread, str]] = []
    original = threading.Thread.start
    stdlib = sysconfig.get_paths()["stdlib"]

    def start(thread):
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith((stdlib, "<")) or
                                     frame.f_code.co_filename == __file__):
            frame = frame.f_back
        started.append((thread, frame.f_globals.get("__name__", "") if frame is not None else ""))
        return original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def test_every_thread_the_engine_starts_in_a_session_is_started_by_the_hosts_spawner(home, monkeypatch):
    """Hermes 0.23 (item 9): the indexer, the scheduler, the mirror, the turn's early recall, the
    query pool's and the writers' workers and the int8 model's preparation are all started by
    `spawn_context_thread`, none by a pool or a thread of cmms' own. (Libraries start threads of
    their own, out of cmms' hands: watchdog's observer, which only says that a file changed, and
    OpenTelemetry's resource detectors while Chroma is imported.)"""
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER", "CMMS_SCHEDULER", "CMMS_MIRROR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(embedders, "_cache", {})  # a model of this session's own: its int8 is made here
    monkeypatch.setattr(embedders, "INT8_AFTER", 0)  # (stored texts go through int8 from the first)
    spawner = RecordingSpawner()
    spawner.install(monkeypatch)
    started = _threads_started(monkeypatch)
    (home / "memories").mkdir(exist_ok=True)
    (home / "memories" / "MEMORY.md").write_text("The orchard keeps apricots in crate 7.", encoding="utf-8")
    provider = CmmsMemoryProvider()
    provider.initialize("spawn-session", hermes_home=str(home), platform="cli", agent_context="primary")
    try:
        for turn, (said, answer) in enumerate([("Which fruit does the orchard keep?", "Apricots."),
                                               ("Ana moved to Lisbon in May.", "Noted.")], start=1):
            provider.on_turn_start(turn, said)
            provider.prefetch(said)
            provider.sync_turn(said, answer, session_id="spawn-session")
        _wait(lambda: provider.service.upkeep.drain(0.1))
        embedder = embedders.load_embedder("auto")
        assert embedder.storing(wait=WAIT_S) is not None, "the int8 model for storing was not made"
    finally:
        provider.shutdown()
    names = {re.sub(r"_\d+$", "", thread.name) for thread, _ in started}  # (a pool's workers: name_N)
    assert {"cmms-indexer", "cmms-query", "cmms-vector-write", "cmms-scheduler", "cmms-scheduler-lease",
            "cmms-mirror", "cmms-turn-recall", "cmms-prepare-int8"} <= names, names
    mine = {id(thread) for thread in spawner.threads}
    outside = [(thread.name, by) for thread, by in started if id(thread) not in mine and by.startswith("hermes_cmms")]
    assert not outside, f"threads cmms started outside the host's spawner (name, by): {outside}"
