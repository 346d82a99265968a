"""Features are handed the Engine (the service's parts), never the facade; hooks still get the
facade as `service`, as their contract says (docs/hooks.md)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_cmms import hookimpl
from hermes_cmms.engine import Engine
from hermes_cmms.knowledge.beliefs import get_belief, set_belief
from hermes_cmms.recall.search import page, search
from hermes_cmms.retain.admission import remember_fact, retain_turn, store_note

REPO = Path(__file__).resolve().parents[2]
SCOPE = "local:engine"


def test_the_engine_holds_the_services_own_parts(keyword_service):
    svc, engine = keyword_service, keyword_service.engine
    assert isinstance(engine, Engine) and engine.service is svc
    assert (engine.settings, engine.pm, engine.store, engine.indexer) == (svc.settings, svc.pm, svc.store, svc.indexer)
    assert engine.store is svc.store and engine.indexer is svc.indexer and engine.pm is svc.pm
    svc.in_hermes = True  # what the Hermes provider sets; route reads it from the engine
    assert engine.in_hermes is True and svc.in_hermes is True


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
    assert [h.memory.id for h in keyword_service.search(SCOPE, "boiler March")][:1] == [note.id]  # the facade too


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
