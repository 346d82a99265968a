"""Long maintenance in bounded write transactions: forget --all, forget by tag, decay and the
sweep never hold the writer lock for long, so another scope's writes go on meanwhile; an
interrupted forget --all leaves nothing of the scope readable and is finished by a re-run."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from hermes_cmms.store._forget import forget_most

from conftest import REPO, python, subprocess_env
from db import sql

sys.path.insert(0, str(REPO / "benchmarks"))
from maintenance import fill  # (the benchmark's bulk fill, shared)

pytestmark = pytest.mark.store

SCOPE = "test:maintenance"
OTHER = "test:maintenance-other"


class Bystander:
    """Another scope's turns, one every ~10 ms on a thread, each timed."""

    def __init__(self, service):
        self.service, self.stop, self.log = service, threading.Event(), []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        turn = 0
        while not self.stop.is_set():
            turn += 1
            started, error = time.monotonic(), None
            try:
                self.service.retain_turn(OTHER, "s1", f"bystander turn {turn}", f"noted {turn}")
            except Exception as exc:  # noqa: BLE001 - what the test counts
                error = f"{type(exc).__name__}: {exc}"
            self.log.append((started, time.monotonic(), error))
            time.sleep(0.01)

    def __enter__(self) -> "Bystander":
        self.thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)


def _left(service, scope: str) -> dict:
    """Rows of `scope` left in each table that holds scope rows."""
    tables = ("memories", "facts", "sessions", "links", "beliefs", "evidence", "entities", "relations", "forgetting")
    return {t: n for t in tables if (n := sql(service, f"SELECT count(*) FROM {t} WHERE scope = ?", scope)[0][0])}


def _forget_all_events(service, scope: str) -> list[dict]:
    return [json.loads(d) for (d,) in sql(service, "SELECT detail FROM audit_log WHERE action = 'forget_all' "
                                                   "AND memory_id IS NULL AND scope = ?", scope)]


def test_forget_all_works_in_bounded_batches_while_another_scope_keeps_writing(keyword_service):
    service = keyword_service
    fill(service, SCOPE, 1200)
    batches = []  # (memories forgotten so far, when)
    with Bystander(service) as bystander:
        started = time.monotonic()
        assert service.forget_all(SCOPE, "test", progress=lambda done: batches.append((done, time.monotonic()))) \
            == 1200
        ended = time.monotonic()
    sizes = [b - a for (a, _), (b, _) in zip([(0, 0)] + batches, batches)]
    assert len(batches) >= 3 and max(sizes) <= forget_most(service.store.engine.dialect.name)
    assert batches[-1][0] == 1200
    during = [(s, e, error) for s, e, error in bystander.log if started <= s and e <= ended]
    assert not [error for *_, error in bystander.log if error]
    assert max(e - s for s, e, _ in bystander.log) < 1.0
    assert [e for _, e, _ in during if batches[0][1] <= e <= batches[-1][1]], \
        "no turn of the other scope was written between the forget's batches"
    assert _left(service, SCOPE) == {} and _forget_all_events(service, SCOPE) == [{"memories": 1200}]
    assert service.page(OTHER)[1] == 2 * len(bystander.log)


def test_a_fact_written_into_the_scope_while_forget_all_runs_goes_with_it(keyword_service):
    """The scope's facts, graph and links go by scope before its memories; a fact stored between
    two batches of memories (its memory then taken by a later batch) goes in the last transaction."""
    service, written = keyword_service, []
    fill(service, SCOPE, 600)

    def meanwhile(done: int) -> None:
        if not written:
            written.append(service.remember_fact(SCOPE, "Ana Lindqvist", "works at", "Quorvex Industries"))
    assert service.forget_all(SCOPE, "test", progress=meanwhile) == 601
    assert written and _left(service, SCOPE) == {}


def test_forget_by_tag_and_decay_write_in_several_short_transactions(keyword_service):
    service = keyword_service
    fill(service, SCOPE, 1000)
    sql(service, "UPDATE memories SET tags = '[\"bulk\"]' WHERE scope = ?", SCOPE)
    service.store.holds.reset()
    service.upkeep.decay(time.time() + 400 * 86400)  # every memory's confidence and state move
    decay = service.store.holds.reset()
    assert len(service.forget_where(SCOPE, tags=["bulk"])) == 1000
    forget = service.store.holds.reset()
    assert decay["transactions"] >= 4 and forget["transactions"] >= 4, (decay, forget)
    assert _left(service, SCOPE) == {"sessions": 25}


class Crash(Exception):
    pass


def test_an_interrupted_forget_all_hides_the_scope_and_running_it_again_finishes_it(keyword_service):
    service = keyword_service
    fill(service, SCOPE, 1500)
    service.forget(SCOPE, service.remember(SCOPE, "The old code of the gate was 4711"))
    belief = service.set_belief(SCOPE, "The user prefers tea to coffee")["id"]
    words = sql(service, "SELECT content FROM memories WHERE scope = ? AND kind = 'message' LIMIT 1", SCOPE)[0][0]
    service.retain_turn(OTHER, "s1", "The other scope's lamp is green", "ok")

    def crash(done: int) -> None:
        raise Crash(done)
    try:
        service.forget_all(SCOPE, "test", progress=crash)
    except Crash as stopped:
        first = stopped.args[0]
    assert 0 < first < 1501 and 0 < sql(service, "SELECT count(*) FROM memories WHERE scope = ?", SCOPE)[0][0]
    # Nothing of it is readable meanwhile, through any door; other scopes are untouched.
    service.retain_turn(SCOPE, "s2", "Written while the forget was interrupted", "ok")  # never fails
    assert service.search(SCOPE, words) == [] and service.page(SCOPE) == ([], 0)
    assert service.recall(SCOPE, words) == "" and service.recall(SCOPE, "gate code") == ""
    assert service.get_belief(SCOPE)["total"] == 0 and service.graph_search(SCOPE, query="person 0")["entities"] == []
    assert service.store.get([belief], SCOPE) == {}
    assert not [s for (s,) in sql(service, "SELECT snapshot FROM audit_log WHERE scope = ?", SCOPE) if s]
    assert service.page(OTHER)[1] == 2 and "green" in service.recall(OTHER, "what colour is the lamp")

    assert service.forget_all(SCOPE, "test") == 1500 + 1 + 2  # the fill, the belief, the late turn
    assert _left(service, SCOPE) == {}
    assert _forget_all_events(service, SCOPE) == [{"memories": 1503}]
    assert service.page(OTHER)[1] == 2


@pytest.mark.quick
def test_a_forget_all_interrupted_before_it_blanked_the_trail_shows_none_of_it(keyword_service, home, monkeypatch):
    """Killed right after its mark: the trail still holds the snapshot of a memory forgotten
    before, which audit-log --snapshots (and MCP audit_log) showed until the sweep ran."""
    from inprocess import cli

    service = keyword_service
    service.forget(SCOPE, service.remember(SCOPE, "The old code of the gate was 4711"))
    service.retain_turn(OTHER, "s1", "The other scope's lamp is green", "ok")

    def crash(*args):
        raise Crash(0)
    monkeypatch.setattr(type(service.store), "_event_rows", crash)  # the mark has landed, nothing else
    with pytest.raises(Crash):
        service.forget_all(SCOPE, "test")
    assert service.audit_log(SCOPE) == [] and all(e.scope != SCOPE for e in service.audit_log())
    shown = cli(home, "audit-log", "--snapshots", "--json", env={"CMMS_EMBEDDER": "none"})
    assert shown.returncode == 0 and "4711" not in shown.stdout and OTHER in shown.stdout, shown


def test_the_sweep_finishes_a_forget_all_whose_process_was_killed(home):
    """A real crash: the forgetting process is SIGKILLed once its first batch has committed."""
    script = f"""
import os, signal, sys, threading, time
sys.path.insert(0, {str(REPO / 'benchmarks')!r}); sys.path.insert(0, {str(REPO / 'tests')!r})
from maintenance import fill
from db import sql
from hermes_cmms import MemoryService, Settings
service = MemoryService(Settings.load(os.environ["HERMES_HOME"], embedder="none"), scheduler=False)
fill(service, {SCOPE!r}, 1200)
def watch():
    while sql(service, "SELECT count(*) FROM memories WHERE scope = ?", {SCOPE!r})[0][0] == 1200:
        time.sleep(0.002)
    os.kill(os.getpid(), signal.SIGKILL)
threading.Thread(target=watch, daemon=True).start()
service.forget_all({SCOPE!r}, "cli:killed")
print("finished")
"""
    done = subprocess.run([python(), "-c", script], env=subprocess_env(home), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == -signal.SIGKILL and "finished" not in done.stdout, done.stderr[-2000:]
    from hermes_cmms import MemoryService, Settings

    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        assert 0 < sql(service, "SELECT count(*) FROM memories WHERE scope = ?", SCOPE)[0][0] < 1200
        assert service.page(SCOPE) == ([], 0)
        service.upkeep.sweep()  # too recent: a forget that may still be running is left alone
        assert _left(service, SCOPE).get("forgetting") == 1
        sql(service, "UPDATE forgetting SET updated_at = updated_at - 3600")
        service.upkeep.sweep()
        assert _left(service, SCOPE) == {}
        [event] = sql(service, "SELECT actor, detail FROM audit_log WHERE action = 'forget_all' "
                               "AND memory_id IS NULL AND scope = ?", SCOPE)
        assert event == ("cli:killed", json.dumps({"memories": 1200}))
    finally:
        service.close()
