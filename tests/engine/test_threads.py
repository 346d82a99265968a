"""How the engine starts its threads (common/threads.py): a pool's workers are started by the
spawner it is given (the host's, in Hermes 0.23), and each task runs in its submitter's context."""
from __future__ import annotations

import contextvars
import threading

import pytest

from hermes_cmms.common.threads import Threads, spawn_in_context

WHO = contextvars.ContextVar("who", default="nobody")


class Counting:
    """A spawner that counts the threads it starts."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def spawn(self, target, *, name: str, daemon: bool = True, args: tuple = (), kwargs=None) -> threading.Thread:
        self.names.append(name)
        return spawn_in_context(target, name=name, daemon=daemon, args=args, kwargs=kwargs)


def _as(who: str, fn, *args):
    def run():
        WHO.set(who)
        return fn(*args)
    return contextvars.copy_context().run(run)


@pytest.mark.quick
def test_a_pools_workers_are_started_by_its_spawner_and_each_task_runs_in_its_submitters_context():
    spawner = Counting()
    pool = Threads(spawner.spawn).pool(2, "cmms-test")
    gate = threading.Event()
    try:
        held = [_as("first", pool.submit, gate.wait, 30), _as("second", pool.submit, gate.wait, 30)]
        asked = [_as(f"user{n}", pool.submit, WHO.get) for n in range(6)]
        gate.set()
        assert all(future.result(30) for future in held)
        assert [future.result(30) for future in asked] == [f"user{n}" for n in range(6)]
    finally:
        pool.shutdown(wait=True)
    assert spawner.names == ["cmms-test_0", "cmms-test_1"]  # two workers, however many tasks


@pytest.mark.quick
def test_a_pool_gives_a_tasks_failure_to_its_future_and_cancels_what_waits_at_shutdown():
    pool = Threads().pool(1, "cmms-test")
    gate, began = threading.Event(), threading.Event()
    running = pool.submit(lambda: began.set() or gate.wait(30))
    assert began.wait(30)
    failing = pool.submit(lambda: 1 / 0)
    pool.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert running.result(30) is True
    assert failing.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(WHO.get)
    other = Threads().pool(1, "cmms-test")
    try:
        with pytest.raises(ZeroDivisionError):
            other.submit(lambda: 1 / 0).result(30)
        assert other.submit(lambda: "still working").result(30) == "still working"
    finally:
        other.shutdown()


@pytest.mark.quick
def test_a_task_queued_when_the_process_ends_is_done_and_an_idle_pool_does_not_hold_the_exit(tmp_path):
    """As ThreadPoolExecutor's: a process that ends without shutting its pool down still runs
    what was queued (a recall event), and then exits at once; the CLI's wait for its daemon
    threads (cli.commands.settled) does not wait for a pool's idle worker."""
    import subprocess
    import sys
    import textwrap

    done = tmp_path / "done"
    script = textwrap.dedent(f"""
        import threading, time
        from pathlib import Path
        from hermes_cmms.common.threads import IN_CONTEXT
        idle = IN_CONTEXT.pool(1, "cmms-idle")
        idle.submit(lambda: None).result()
        from hermes_cmms.cli.commands import settled
        started = time.monotonic()
        assert settled(), "the CLI waited for an idle pool worker"
        assert time.monotonic() - started < 1.0
        slow = IN_CONTEXT.pool(1, "cmms-slow")
        slow.submit(lambda: (time.sleep(0.3), Path({str(done)!r}).write_text("written")))
    """)
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 0, ended.stderr[-2000:]
    assert done.read_text() == "written"
