"""Writers of one scope wait for each other; writers of different scopes do not (PostgreSQL).

Real processes write into one scope at once: every turn is counted once (none doubled, none
lost) and a text all of them store is kept once and reinforced by the others. On PostgreSQL a
write transaction of one scope held open does not hold up a write of another scope from
another process, while a second writer of the held scope waits for it."""
from __future__ import annotations

import subprocess
import textwrap
import threading
import time

import pytest

from db import on_postgres, sql, url_of
from conftest import python, subprocess_env

pytestmark = pytest.mark.store

WRITERS, TURNS = 4, 12
SCOPE, SESSION = "user:telegram:4711", "s1"

# argv: database URL, scope, writer name, turns, start file. Waits for the start file, then
# stores TURNS turns of one session and the same TURNS notes every writer stores.
WRITER = textwrap.dedent("""
    import os, sys, time
    from hermes_cmms.store.store import Store
    from hermes_cmms.store.new_memory import NewMemory

    url, scope, name, turns, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    store = Store(url)
    print("ready", flush=True)
    while not os.path.exists(start):
        time.sleep(0.005)
    for n in range(turns):
        store.add([NewMemory(scope, f"{name} asks question {n}", role="user", session_id="s1"),
                   NewMemory(scope, f"answer to {name} {n}", role="assistant", session_id="s1")],
                  turn_of=(scope, "s1"))
        store.add([NewMemory(scope, f"The shared note number {n}", kind="note", tier="semantic")])
    print("wrote", name, flush=True)
""")


def _writers(home, tmp_path, scope: str, names: list[str], turns: int) -> tuple[list[subprocess.Popen], object]:
    """The writers, their stores open; and the file that starts them once touched."""
    start = tmp_path / f"start-{scope.replace(':', '_')}"
    procs = [subprocess.Popen([python(), "-c", WRITER, url_of(home), scope, name, str(turns), str(start)],
                              env=subprocess_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in names]
    for proc in procs:
        assert proc.stdout.readline() == "ready\n", proc.communicate()[1][-3000:]
    return procs, start


def _finished(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]


def test_writers_of_one_scope_count_every_turn_once_and_dedup_exactly(service, home, tmp_path):
    writers, start = _writers(home, tmp_path, SCOPE, [f"writer{n}" for n in range(WRITERS)], TURNS)
    start.touch()
    _finished(writers)

    turns = sql(service, "SELECT turn, role, content FROM memories WHERE scope = ? AND session_id = ? "
                         "AND kind = 'message' ORDER BY turn", SCOPE, SESSION)
    assert sorted({t for t, _, _ in turns}) == list(range(1, WRITERS * TURNS + 1))  # none doubled, none lost
    for turn in range(1, WRITERS * TURNS + 1):  # each turn one writer's question and its answer
        pair = [(role, content) for t, role, content in turns if t == turn]
        assert len(pair) == 2 and {r for r, _ in pair} == {"user", "assistant"}
        asker = pair[0][1].split()[0] if pair[0][0] == "user" else pair[1][1].split()[0]
        assert all(asker in content for _, content in pair)
    assert len(turns) == 2 * WRITERS * TURNS
    assert sql(service, "SELECT last_turn FROM sessions WHERE scope = ? AND session_id = ?",
               SCOPE, SESSION) == [(WRITERS * TURNS,)]
    notes = sql(service, "SELECT content, access_count FROM memories WHERE scope = ? AND kind = 'note' "
                         "ORDER BY content", SCOPE)
    assert notes == sorted((f"The shared note number {n}", WRITERS - 1) for n in range(TURNS))


def _waiting_for_advisory_lock(service) -> int:
    return sql(service, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")[0][0]


@pytest.mark.server_only
def test_a_scope_held_open_holds_up_its_own_writers_only(service, home, tmp_path):
    from hermes_cmms.store.new_memory import NewMemory

    assert on_postgres(service)
    store = service.store
    free, free_start = _writers(home, tmp_path, "user:telegram:other", ["free"], 3)
    blocked, blocked_start = _writers(home, tmp_path, "user:telegram:held", ["waiting"], 1)
    with store.writing(["user:telegram:held"]) as conn:  # held open while the others write
        store._add(conn, [NewMemory("user:telegram:held", "a turn not yet committed")], None, time.time())
        free_start.touch()
        _finished(free)  # not held up
        blocked_start.touch()
        deadline = time.monotonic() + 60
        while not _waiting_for_advisory_lock(service):  # it waits for this transaction
            assert blocked[0].poll() is None, blocked[0].communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the second writer of the held scope never waited"
            time.sleep(0.02)
        assert blocked[0].poll() is None
    _finished(blocked)
    assert sql(service, "SELECT count(*) FROM memories WHERE scope = ?", "user:telegram:other") == [(9,)]
    assert sql(service, "SELECT count(*) FROM memories WHERE scope = ?", "user:telegram:held") == [(4,)]


@pytest.mark.server_only
def test_a_write_across_scopes_waits_for_every_scope_writer(service, tmp_path):
    """A write without scopes (a job's time, a migration, maintenance) still runs alone."""
    store = service.store
    with store.writing(["user:telegram:held"]):
        done = []
        global_writer = threading.Thread(target=lambda: done.append(store.job_ran("decay", time.time()) or True))
        global_writer.start()
        deadline = time.monotonic() + 60
        while not _waiting_for_advisory_lock(service):
            assert time.monotonic() < deadline, "a write without scopes did not wait for a scope's writer"
            time.sleep(0.02)
        assert not done
    global_writer.join(60)
    assert done == [True]
