"""Features are handed the Engine (the service's parts), never the facade; hooks still get the
facade as `service`, as their contract says (docs/hooks.md)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_cmms import hookimpl
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.engine import Engine
from hermes_cmms.service import hosted_by_hermes
from hermes_cmms.knowledge.beliefs import get_belief, set_belief
from hermes_cmms.recall.search import page, search
from hermes_cmms.retain.admission import remember_fact, retain_turn, store_note

REPO = Path(__file__).resolve().parents[2]
SCOPE = "local:engine"


@pytest.mark.quick
def test_the_engine_holds_the_services_own_parts(keyword_service):
    svc, engine = keyword_service, keyword_service.engine
    assert isinstance(engine, Engine) and engine.service is svc
    assert (engine.settings, engine.pm, engine.store, engine.indexer) == (svc.settings, svc.pm, svc.store, svc.indexer)
    assert engine.store is svc.store and engine.indexer is svc.indexer and engine.pm is svc.pm
    assert hosted_by_hermes(svc) is False  # what the Hermes provider says; no summariser without consolidation_llm
    assert engine.in_hermes is True and engine.summariser is None  # route reads it from the engine


def test_features_work_from_the_engine_alone_and_hooks_get_the_facade(keyword_service):
    seen = []

    class Watch:
        @hookimpl(tryfirst=True)
        def retain(self, service, scope, session_id, items, turn_of):
            seen.append(service)

    keyword_service.pm.register(Watch(), name="watch")
    engine = keyword_service.engine
    note = store_note(engine, SCOPE, "The boiler is serviced every March.", tags=["home"])
    assert retain_turn(engine, SCOPE, "s1", "I repaint the fence in May.", "Noted.")
    fact = remember_fact(engine, SCOPE, "Ana", "lives in", "Porto")
    belief = set_belief(engine, SCOPE, "Ana likes green tea")["id"]
    assert seen and all(service is keyword_service for service in seen)
    assert [h.memory.id for h in search(engine, SCOPE, "boiler March")][:1] == [note.id]
    assert [h.memory.id for h in search(engine, SCOPE, "", fact={"subject": "ana"})] == [fact]
    assert get_belief(engine, SCOPE, text="green tea")["beliefs"][0]["id"] == belief
    memories, total = page(engine, SCOPE, tags=["home"])
    assert total == 1 and memories[0].id == note.id
    assert [h.id for h in keyword_service.search(SCOPE, "boiler March")][:1] == [note.id]  # the facade too


@pytest.mark.parametrize("folder", ["retain", "recall", "knowledge", "lifecycle", "ops"])
def test_a_feature_importing_the_facade_is_caught(tmp_path, folder):
    pytest.importorskip("importlinter")
    planted = tmp_path / "planted_upward.py"
    planted.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from ..service import MemoryService\n")
    done = subprocess.run([str(REPO / ".ci" / "lint-layers"), sys.executable], capture_output=True, text=True,
                          env={**os.environ, "CMMS_LAYERS_PLANT": f"{planted}:{folder}"},
                          timeout=120)
    assert done.returncode != 0
    assert f"hermes_cmms.{folder}.planted_upward -> hermes_cmms.service" in done.stdout


def _indexer_threads() -> int:
    import threading

    return sum(t.name == "cmms-indexer" for t in threading.enumerate())


@pytest.mark.store
def test_a_service_made_not_to_start_its_indexer_starts_it_only_for_vector_work(home):
    from hermes_cmms import MemoryService, Settings

    before = _indexer_threads()
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False, start_indexer=False)
    try:
        svc.audit_log()
        svc.page("local:default")
        status = svc.status()
        assert not svc.indexer.started and _indexer_threads() == before
        assert (status["indexed"], status["embedder"]) == (None, "none (keyword-only)")
        svc.retain_turn("local:default", "s1", "The kettle is descaled monthly.", "Noted.")  # a write: vectors to do
        assert svc.indexer.started and svc.upkeep.wait_vectors(30)
    finally:
        svc.close()


@pytest.mark.store
def test_a_service_closed_before_any_vector_work_never_starts_its_indexer(home):
    from hermes_cmms import MemoryService, Settings

    svc = MemoryService(Settings.load(home), scheduler=False, start_indexer=False)
    svc.close()
    assert not svc.indexer.started
    svc.indexer.notify()  # after stop(): never
    assert not svc.indexer.started


@pytest.mark.store
def test_a_recalling_service_loads_the_token_counter_before_the_first_block_asks(home):
    """The first recall of a Hermes session does not spend its time loading tiktoken's tables."""
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.common import tokens

    tokens.encoding.cache_clear()  # as in a process that has not counted a token yet
    MemoryService(Settings.load(home, embedder="none"), scheduler=False).close()
    assert tokens.encoding.cache_info().currsize == 1


@pytest.mark.quick
def test_context_packs_the_block_from_its_one_search(keyword_service, monkeypatch):
    """MCP get_context's verb: the block `recall` would give and the hits it was packed from, from
    one hybrid search (it searched twice: once for the hits, once inside the recall hook)."""
    from hermes_cmms.recall import search as retrieval

    svc = keyword_service
    svc.remember(SCOPE, "The boathouse key hangs behind the boiler.")
    svc.remember(SCOPE, "Ana's boat is moored at pier seven.")
    expected = svc.recall(SCOPE, "where is the boathouse key")
    searches = []
    hybrid = retrieval._hybrid
    monkeypatch.setattr(retrieval, "_hybrid", lambda *a, **k: searches.append(a[2]) or hybrid(*a, **k))
    block, hits = svc.context(SCOPE, "where is the boathouse key", 1000)
    assert searches == ["where is the boathouse key"]
    assert block == expected and "behind the boiler" in block
    assert hits and hits[0].content.startswith("The boathouse key") and hits[0].score > 0


def test_context_packs_the_same_block_as_recall_whatever_its_limit(keyword_service):
    """A limit below the hits a block packs from cuts the hits answered, not the block."""
    svc = keyword_service
    for i in range(45):
        svc.store_note(SCOPE, f"deploy item {i} zq{i}", dedup=False, judge=False)
    expected = svc.recall(SCOPE, "deploy")
    for limit in (1, 2, 30):
        block, hits = svc.context(SCOPE, "deploy", limit)
        assert block == expected and len(hits) == limit
    with pytest.raises(InvalidInput):
        svc.context(SCOPE, "deploy", 0)
