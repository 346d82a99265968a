"""Attacks on recall_status and the recall line through Hermes 0.19's real
MemoryManager: a prefetch that Hermes stopped waiting for injected nothing."""
from __future__ import annotations

import threading

import pytest

from hermes_cmms.provider import CmmsMemoryProvider

pytestmark = pytest.mark.store

FACT = "The deploy key for the staging cluster rotates every Monday."
SLOW_PLUGIN = '''\
import time
from hermes_cmms import hookimpl


@hookimpl
def recall(service, scope, query, budget_tokens, session_id, seen):
    if "slowly" in query:  # a recall past Hermes' prefetch timeout (a busy database, say)
        time.sleep(0.8)
    return None  # the built-in recall then builds the block
'''


def _slow_recall_plugin(tmp_path, monkeypatch):
    """A third-party recall plugin installed as a dist-info on sys.path (its entry point)."""
    root = tmp_path / "plugins"
    info = root / "cmms_slow_recall-0.1.dist-info"
    info.mkdir(parents=True)
    (root / "cmms_slow_recall.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cmms-slow-recall\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hermes_cmms]\nslow = cmms_slow_recall\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("CMMS_PLUGINS", "slow")


@pytest.mark.quick
def test_a_prefetch_hermes_gave_up_on_is_not_counted_as_injected(home, tmp_path, monkeypatch):
    """Hermes waits _EXTERNAL_PREFETCH_TIMEOUT_S for a prefetch, then goes on with nothing; the
    late one announced "🧠 recalled 1 memory", told recall_status so, and marked the memory as
    in front of the model, so it was never injected again that session."""
    import agent.memory_manager as hermes_memory

    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    monkeypatch.setattr(hermes_memory, "_EXTERNAL_PREFETCH_TIMEOUT_S", 0.3)
    _slow_recall_plugin(tmp_path, monkeypatch)
    writer = CmmsMemoryProvider()
    writer.initialize("old", hermes_home=str(home), platform="cli", agent_context="primary")
    writer.handle_tool_call("cmms_remember", {"content": FACT})
    writer.shutdown()
    said, provider = [], CmmsMemoryProvider()
    manager = hermes_memory.MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all("new", hermes_home=str(home), platform="cli", agent_context="primary",
                           status_callback=said.append)
    try:
        question = "slowly now: when does the deploy key rotate?"
        manager.on_turn_start(1, question)
        assert manager.prefetch_all(question) == ""  # Hermes gave up and went on without it
        for thread in threading.enumerate():
            if thread.name == "memory-prefetch-cmms":
                thread.join(10)
        assert provider.recall_status() is None and said == []
        provider.sync_turn(question, "I do not know.", session_id="new")  # the turn completes
        manager.on_turn_start(2, "When does the deploy key rotate?")
        assert FACT in manager.prefetch_all("When does the deploy key rotate?")
        count = provider.recall_status().count  # the fact, and the question of turn 1 stored since
        assert count >= 1 and said == [f"🧠 cmms recalled {count} memor{'y' if count == 1 else 'ies'}"]
    finally:
        manager.shutdown_all()
