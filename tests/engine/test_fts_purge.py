"""The keyword index scrub after a forget ends, and leaves the FTS5 index sound, while another
process writes turns between its steps.

SQLite 3.40's FTS5 never drops a level of its index, and calls an index of more than 2000
levels corrupt. A 'merge' with a negative page count starts a merge of every segment over in
a new level (two levels with the level it merges into), so a scrub that repeated it until it
did no work never ended while a writer added a segment between two steps: after about 1000
steps every use of the index, in every process, failed as "database disk image is malformed".
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import embedded_only
from sqlalchemy import insert, text

from hermes_cmms.store import keyword
from hermes_cmms.store import store as store_module
from hermes_cmms.store.models import Memory
from hermes_cmms.store.store import NewMemory, Store

pytestmark = [pytest.mark.store, embedded_only]

STEPS_MOST = 60  # the old scrub went on past 1000 steps; a sound one needs a handful here
GONE = "Zanzibarquux telephoriscent marmaladewombat"

WRITER = """
import sys, time
from hermes_cmms.store.models import Memory
from hermes_cmms.store.store import NewMemory, Store
store, turn = Store(sys.argv[1]), 0
print("ready", flush=True)
while True:
    turn += 1
    store.add([NewMemory("local:bystander", f"Bystander note {turn}: the lamp is on.", role="user")])
    time.sleep(0.002)
"""


@pytest.fixture
def store(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'cmms.db'}")
    with store.write() as conn:  # a kept scope of enough words that its segment keeps a level
        conn.execute(insert(Memory), [Store._row(NewMemory("local:kept", " ".join(
            f"w{(n * 31 + i * 97) % 3000}" for i in range(10)), role="user"), time.time()) for n in range(3000)])
    for start in range(0, 600, 50):  # several segments, as sync_turns leave them
        store.add([NewMemory("local:forgotten", f"{GONE} note {n} about the garden {n % 7}", role="user")
                   for n in range(start, start + 50)])
    yield store
    store.close()


def _counted(store: Store) -> list[int]:
    """Count the purge steps of the next scrubs; fail once STEPS_MOST are reached, which the
    old scrub always did with a writer."""
    steps, purge = [0], store.keyword.purge

    def step(conn, first=True):
        steps[0] += 1
        assert steps[0] <= STEPS_MOST, "the keyword index scrub did not end"
        return purge(conn, first)
    store.keyword.purge = step
    return steps


class _TurnInPauses:
    """The store's clock, except that the pause after each purge step first writes a turn
    through another Store (another connection pool, as another process has)."""

    def __init__(self, url: str):
        self.other, self.turns = Store(url), 0

    def __getattr__(self, name):
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.turns += 1
        self.other.add([NewMemory("local:bystander", f"Bystander note {self.turns}: the lamp is on.", role="user")])
        time.sleep(seconds)


@pytest.fixture
def turns(store, monkeypatch):
    clock = _TurnInPauses(store.url)
    monkeypatch.setattr(store_module, "time", clock)
    yield clock
    clock.other.close()


def _forget_some(store: Store) -> None:
    with store.write() as conn:
        conn.execute(text("DELETE FROM memories WHERE scope = 'local:forgotten'"))


def _levels(store: Store) -> int:
    with store.read() as conn:
        return keyword._fts5_levels(conn)


def _fts_sound(store: Store) -> None:
    with store.engine.connect() as conn:
        conn.exec_driver_sql("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"


def _left_in_files(store: Store, tmp_path) -> bool:
    data = b"".join(path.read_bytes() for path in tmp_path.glob("cmms.db*"))
    return any(word.lower().encode() in data for word in GONE.split())


def test_a_scrub_ends_in_few_steps_when_a_turn_is_written_between_every_two(store, turns, tmp_path):
    steps = _counted(store)
    _forget_some(store)
    levels = _levels(store)
    assert store.scrub()
    assert turns.turns and steps[0] <= 10 and _levels(store) <= levels + 2
    _fts_sound(store)
    assert not _left_in_files(store, tmp_path)


def test_a_scrub_ends_while_another_process_writes_turns(store, tmp_path):
    writer = subprocess.Popen([sys.executable, "-c", WRITER, store.url], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        steps = _counted(store)
        for _ in range(5):  # five forgets, each scrubbed
            _forget_some(store)
            store.add([NewMemory("local:forgotten", f"{GONE} again", role="user")])
            assert store.scrub()
        assert writer.poll() is None  # the writer never failed
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    assert steps[0] <= 5 * 10
    _fts_sound(store)


@pytest.mark.quick
def test_an_index_of_many_levels_is_rebuilt_to_few(store, turns, tmp_path):
    _counted(store)
    for n in range(4):  # each scrub with writes between its steps adds two levels
        store.add([NewMemory("local:forgotten", f"{GONE} round {n}", role="user")])
        _forget_some(store)
        assert store.scrub()
    assert _levels(store) >= 8
    store.keyword.LEVELS_MOST = 8
    store.add([NewMemory("local:forgotten", f"{GONE} last round", role="user")])
    _forget_some(store)
    assert store.scrub()
    assert _levels(store) < 8
    _fts_sound(store)
    assert not _left_in_files(store, tmp_path)
