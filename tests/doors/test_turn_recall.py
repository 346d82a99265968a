"""The turn's recall begins in on_turn_start, on a thread the host starts (Hermes 0.23: the
spawner of tests/hermes023_runtime.py, item 9), and prefetch collects it instead of searching
again; a prefetch for another message searches itself."""
from __future__ import annotations

import pytest

from hermes023_runtime import Spawner
from hermes_cmms import MemoryService, Settings
from hermes_cmms.provider import CmmsMemoryProvider

pytestmark = pytest.mark.store
FACT = "Biscuit, my tabby kitten, sleeps on the keyboard all afternoon."


def _provider(home, session="s1"):
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="default")
    return p


def _recalls(home) -> int:
    from hermes_cmms.recall.block import settled

    assert settled()
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        with svc.store.read() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM recall_events").scalar()
    finally:
        svc.close()


@pytest.mark.quick
def test_prefetch_collects_the_recall_on_turn_start_began(kw_home, monkeypatch):
    spawner = Spawner().install(monkeypatch)
    writer = _provider(kw_home, session="old")
    writer.sync_turn(FACT, "Noted.", session_id="old")
    writer.shutdown()
    p = _provider(kw_home)
    p.on_turn_start(1, "Where does my kitten sleep?")
    assert "cmms-turn-recall" in spawner.spawned
    assert "keyboard" in p.prefetch("Where does my kitten sleep?")
    assert _recalls(kw_home) == 1  # one search for the turn, not a second one in prefetch
    assert "keyboard" in p.prefetch("And the kitten's name?")  # not the message on_turn_start had: searched now
    assert _recalls(kw_home) == 2
    p.shutdown()


def test_a_fresh_providers_first_turn_recalls_by_meaning(home):
    seeded = MemoryService(Settings.load(home), scheduler=False)
    seeded.retain_turn("local:default", "old", FACT, "Noted.")
    assert seeded.upkeep.drain(60)
    seeded.close()
    p = _provider(home)  # a new service: its model and vector index load now
    question = "Which feline lives with me?"  # no word in common with the fact
    p.on_turn_start(1, question)
    text = p.prefetch(question)
    p.shutdown()
    assert "Biscuit" in text
