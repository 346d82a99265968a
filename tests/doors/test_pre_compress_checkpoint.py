"""The checkpoint before a compaction (Hermes 0.23's pre-compress API v2, HERMES-0.23.md item
16): the conversation's user/assistant turns saved idempotently, an error when they cannot be
saved, so a compaction with `compression.checkpoint_required` fails closed; called as the 0.23
manager calls it (tests/hermes023_runtime.py) and as the real 0.19 manager does."""
from __future__ import annotations

import pytest
from agent.memory_manager import MemoryManager

import hermes023_runtime as hermes023
from conftest import SERVER, refuse_writes
from db import sql
from hermes_cmms.common.errors import StoreUnavailable
from hermes_cmms.provider import CmmsMemoryProvider

pytestmark = pytest.mark.store

TRANSCRIPT = [  # as Hermes keeps it: a system prompt, tool calls and results, a multimodal message
    {"role": "system", "content": "You are Hermes."},
    {"role": "user", "content": "My locker code at the gym is 4471."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "memory"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": true}"},
    {"role": "assistant", "content": "I will remember locker 4471."},
    {"role": "user", "content": [{"type": "text", "text": "The gym closes at 22:00 on Sundays."},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": "Noted: 22:00 on Sundays."},
]


def _provider(home, session="s1"):
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="default")
    return p


def _stored(home) -> list[tuple]:
    return [tuple(r) for r in sql(home, "SELECT role, content, access_count FROM memories "
                                        "WHERE kind = 'message' ORDER BY seq")]


@pytest.mark.quick
def test_the_checkpoint_saves_the_turns_once(kw_home):
    p = _provider(kw_home)
    p.sync_turn("My locker code at the gym is 4471.", "I will remember locker 4471.", session_id="s1")
    assert p.pre_compress_checkpoint_api_version == 2
    hermes023.pre_compress(p, TRANSCRIPT, checkpoint_required=True)  # the 0.23 manager: normalised evidence
    p.on_pre_compress(TRANSCRIPT, require_checkpoint=True)  # the raw transcript, again: nothing new
    p.shutdown()
    assert _stored(kw_home) == [
        ("user", "My locker code at the gym is 4471.", 0), ("assistant", "I will remember locker 4471.", 0),
        ("user", "The gym closes at 22:00 on Sundays.", 0), ("assistant", "Noted: 22:00 on Sundays.", 0)]


def test_a_required_checkpoint_fails_the_compaction_closed_when_the_store_is_unwritable(kw_home):
    p = CmmsMemoryProvider()
    if SERVER:  # the database turns read-only under a running provider
        p.initialize("s1", hermes_home=str(kw_home), platform="cli", agent_context="primary")
        refuse_writes(kw_home)
        sql(kw_home, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = 'hermes-cmms' AND datname = current_database()")
    else:  # Hermes logs that initialize failed and goes on
        refuse_writes(kw_home)
        with pytest.raises(StoreUnavailable):
            p.initialize("s1", hermes_home=str(kw_home), platform="cli", agent_context="primary")
    with pytest.raises(hermes023.CompactionRefused, match="did not store the conversation before compaction"):
        hermes023.pre_compress(p, TRANSCRIPT, checkpoint_required=True)
    assert hermes023.pre_compress(p, TRANSCRIPT, checkpoint_required=False) == ""  # not required: goes on
    if SERVER:  # the open store refuses the end of the session too, and says so
        with pytest.raises(StoreUnavailable, match="did not store the end of this session"):
            p.shutdown()


def test_a_subagent_refuses_a_required_checkpoint(kw_home):
    p = CmmsMemoryProvider()
    p.initialize("child", hermes_home=str(kw_home), platform="cli", agent_context="subagent")
    with pytest.raises(hermes023.CompactionRefused, match="read-only in this agent"):
        hermes023.pre_compress(p, TRANSCRIPT, checkpoint_required=True)
    hermes023.pre_compress(p, TRANSCRIPT, checkpoint_required=False)
    p.shutdown()
    assert _stored(kw_home) == []


def test_hermes_0_19_still_gets_the_recall_for_its_summary_and_the_turns_are_saved(kw_home):
    old = _provider(kw_home, session="old")
    old.sync_turn("The spare bike key hangs behind the boiler.", "Noted.", session_id="old")
    old.shutdown()
    p = _provider(kw_home, session="new")
    manager = MemoryManager()  # the real 0.19 manager: on_pre_compress(messages) -> text for the summary
    manager.add_provider(p)
    text = manager.on_pre_compress([{"role": "user", "content": "Where does the spare bike key hang?"},
                                    {"role": "assistant", "content": "Let me look."}])
    p.shutdown()
    assert "behind the boiler" in text
    assert ("user", "Where does the spare bike key hang?", 0) in _stored(kw_home)
