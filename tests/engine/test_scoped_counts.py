"""Counts do not cross scopes: a bridge bound to one scope reports that scope's memories,
vectors and index lag in `ping` and `metrics`, whatever other scopes write. The machine
owner's CLI (`hermes-cmms status` / `metrics`) still shows the whole store."""
from __future__ import annotations

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.ops.metrics import exposition
from inprocess import memory_bridge
from mcp_client import run
from test_metrics import _samples, _value

pytestmark = pytest.mark.store

MINE, OTHERS = "user:telegram:111", "user:telegram:222"
QUIET = {"CMMS_EMBEDDER": "none", "CMMS_SCHEDULER": "off", "CMMS_MIRROR": "off"}


def _store_side(samples: dict) -> dict:
    """The store gauges of an exposition: memories by (tier, state), lag, and whether the
    store-wide audit series are there."""
    memories = {tuple(sorted(dict(labels).items())): value for (name, labels), value in samples.items()
                if name == "cmms_memories"}
    return {"memories": memories, "lag": _value(samples, "cmms_index_lag"),
            "drift": any(name == "cmms_drift" for name, _ in samples)}


def _others_write(home, count: int) -> None:
    """Another gateway user, through an engine of its own (as another process has), writes
    `count` memories."""
    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        for number in range(count):
            service.remember(OTHERS, f"Other user's note number {number} about kayaks.")
        service.retain_turn(OTHERS, "s9", "I paddle on Sundays.", "Nice.")
    finally:
        service.close()


@pytest.mark.quick
def test_ping_and_metrics_of_a_scoped_bridge_do_not_see_other_scopes(home):
    async def main():
        async with memory_bridge(home, "--scope", MINE, env=QUIET) as bridge:
            await bridge.ok("remember", subject="Ana", predicate="lives in", object="Lisbon")
            before = await bridge.ok("ping"), _samples((await bridge.ok("metrics"))["exposition"])
            _others_write(home, 7)
            after = await bridge.ok("ping"), _samples((await bridge.ok("metrics"))["exposition"])
            return before, after

    (ping_before, metrics_before), (ping_after, metrics_after) = run(main())
    assert ping_before["scope"] == MINE and ping_before["memories"] == ping_after["memories"] == 1
    assert ping_before["indexed"] == ping_after["indexed"] == 0  # keyword-only here: no vectors at all
    assert _store_side(metrics_before) == _store_side(metrics_after)
    assert _store_side(metrics_after)["memories"] == {(("state", "active"), ("tier", "semantic")): 1.0}
    assert _store_side(metrics_after)["drift"] is False  # the last full audit is the whole store's
    assert _value(metrics_after, "cmms_tool_calls_total", door="mcp", tool="remember") == 1.0

    owner = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:  # the machine owner still sees the whole store
        assert owner.status()["memories"] == 1 + 7 + 2
        whole = _store_side(_samples(exposition(owner)))
        assert sum(whole["memories"].values()) == 10 and whole["drift"] is True
    finally:
        owner.close()


def test_vectors_and_index_lag_are_counted_per_scope(service):
    for number in range(3):
        service.remember(MINE, f"My note number {number} about violins.")
    for number in range(5):
        service.remember(OTHERS, f"Their note number {number} about kayaks.")
    service.upkeep.drain(60)
    mine, whole = _samples(exposition(service, MINE)), _samples(exposition(service))
    if service.indexer.active:
        assert _value(mine, "cmms_vectors") == 3.0 and _value(whole, "cmms_vectors") == 8.0
        assert service.status(MINE)["indexed"] == 3 and service.status()["indexed"] == 8
    assert _value(mine, "cmms_index_lag") == 0.0
    assert service.status(MINE)["memories"] == 3 and service.status()["memories"] == 8
    assert service.store.counts(OTHERS) == {"memories": 5, "scopes": 1, "sessions": 0, "outbox": 0}
    assert not any(name.startswith("cmms_hook_latency") for name, _ in mine)  # every scope's work


def test_a_scoped_bridge_cannot_name_another_scope(home):
    """--scope confines the memser tools too: naming another user's scope reads, writes and
    forgets nothing there; the bridge's own scope still works by name."""
    owner = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        theirs = owner.remember(OTHERS, "The other user's locker code is in the blue notebook.")
    finally:
        owner.close()

    async def main():
        async with memory_bridge(home, "--scope", MINE, env=QUIET) as bridge:
            refused = [await bridge.call("recall_memory", query="locker code", scope=OTHERS),
                       await bridge.call("list_memories", scope=OTHERS),
                       await bridge.call("store_memory", content="planted", scope=OTHERS),
                       await bridge.call("forget_memory", scope=OTHERS, memory_id=theirs),
                       await bridge.call("audit_log", scope=OTHERS)]
            mine = await bridge.ok("store_memory", content="My locker is number 12.", scope=MINE)
            return refused, mine

    refused, mine = run(main())
    for result in refused:
        assert result.error and "serves only the scope 'user:telegram:111'" in result.text, result.text
    assert mine["stored"] is True
    owner = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        memories, total = owner.page(OTHERS)
        assert total == 1 and memories[0].id == theirs  # nothing planted, nothing forgotten
    finally:
        owner.close()
