"""The vector half of a search asks its three views side by side (recall.search.side_by_side):
concurrently on the engine's query pool, and never waiting on a pool that has no worker free."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from hermes_cmms.recall.search import side_by_side


@pytest.mark.quick
def test_the_calls_run_at_once_on_the_pool_beside_the_caller():
    """Each of three calls waits for the other two at a barrier: made one after another, the
    barrier would break."""
    met = threading.Barrier(3, timeout=10)

    def call(answer):
        def run():
            met.wait()
            return answer, threading.current_thread().name
        return run

    with ThreadPoolExecutor(4, thread_name_prefix="cmms-query") as pool:
        answers = side_by_side(pool, [call("content"), call("context"), call("sentences")])
    assert [answer for answer, _ in answers] == ["content", "context", "sentences"]  # in order
    assert answers[0][1] == threading.current_thread().name
    assert all(name.startswith("cmms-query") for _, name in answers[1:])


@pytest.mark.quick
def test_calls_no_worker_has_started_are_made_by_the_caller():
    """A pool whose only worker is busy (as when every worker is a search waiting on its views)
    does not hold the search up: what it has not started is made on the caller's thread."""
    busy, done = threading.Event(), []
    here = lambda: threading.current_thread().name  # noqa: E731
    with ThreadPoolExecutor(1) as pool:
        pool.submit(busy.wait, 30)
        waiting = threading.Thread(target=lambda: done.append(side_by_side(pool, [here, here, here])))
        waiting.start()
        waiting.join(10)
        answered = not waiting.is_alive()
        busy.set()
    assert answered and done == [[waiting.name] * 3]


@pytest.mark.quick
def test_without_a_pool_or_after_it_shut_down_every_call_is_made_here():
    pool = ThreadPoolExecutor(2)
    pool.shutdown()
    for gone in (None, pool):
        assert side_by_side(gone, [lambda: 1, lambda: threading.current_thread().name]) == [
            1, threading.current_thread().name]
