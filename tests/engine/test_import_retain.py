"""An import writes its memories as every write is written: each passes the registered
redactors (a plugin's too) and the retain hook, for a foreign file as for our own export; and
a foreign import hands its checked records to the import in process, past a bound through a
file of their own."""
import json
import tempfile

import pytest
from sqlalchemy import text

from hermes_cmms import hookimpl
from hermes_cmms.ops.formats import run
from hermes_cmms.ops.transfer import export_scope, import_records
from test_transfer import other_store

SCOPE = "local:default"
pytestmark = pytest.mark.store


class Watch:
    """A third-party plugin: a redactor of the company's ticket codes, and a retain hook that
    notes every memory it is handed."""

    def __init__(self):
        self.retained, self.redacted = [], 0

    @hookimpl
    def redact(self, text):
        if "ACME-" in text:
            self.redacted += 1
            return text.replace("ACME-482913", "[REDACTED:acme-ticket]")
        return None

    @hookimpl
    def retain(self, items, turn_of):
        self.retained += [(item.id or item.row["id"], item.content, turn_of) for item in items]


def _memory_json(path, entities=3):
    lines = [{"type": "entity", "name": f"Mira{i}", "entityType": "person",
              "observations": [f"door code ACME-482913 for flat {i}", f"keeps bees on roof {i}"]}
             for i in range(entities)]
    lines.append({"type": "relation", "from": "Mira0", "to": "Mira1", "relationType": "knows"})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _stored(service, scope=SCOPE):
    with service.store.read() as conn:
        return dict(conn.execute(text("SELECT id, content FROM memories WHERE scope = :scope"), {"scope": scope}).all())


@pytest.mark.quick
def test_every_imported_memory_passes_the_registered_redactors_and_the_retain_hook(keyword_service, tmp_path):
    watch = Watch()
    keyword_service.pm.register(watch, name="watch")
    summary = keyword_service.transfer.import_foreign(_memory_json(tmp_path / "memory.jsonl"), fmt="memory-json")
    stored = _stored(keyword_service)
    assert summary["scopes"][SCOPE]["memories"]["added"] == len(stored) == 10  # 3 entities, 6 observations, 1 relation
    assert not any("ACME-482913" in text for text in stored.values())
    assert sum("[REDACTED:acme-ticket]" in text for text in stored.values()) == 3
    assert sorted(watch.retained) == sorted((i, text, None) for i, text in stored.items())  # already redacted
    watch.retained.clear()
    again = keyword_service.transfer.import_foreign(tmp_path / "memory.jsonl", fmt="memory-json")
    assert again["scopes"][SCOPE]["memories"] == {"added": 0, "skipped": 10}
    assert len(watch.retained) == 10 and _stored(keyword_service) == stored  # handed to the hook, nothing written

    lines = [json.dumps(record) for record in export_scope(keyword_service.engine, SCOPE)]
    lines = [line.replace("[REDACTED:acme-ticket]", "ACME-482913") for line in lines]  # a hand-edited file
    with other_store(tmp_path) as target:
        theirs = Watch()
        target.pm.register(theirs, name="watch")
        assert import_records(target.engine, lines)["memories"]["added"] == 10
        assert _stored(target) == stored and len(theirs.retained) == 10 and theirs.redacted >= 3


@pytest.mark.one_backend
def test_a_foreign_import_hands_its_records_over_in_process_and_past_a_bound_through_a_file(
        keyword_service, tmp_path, monkeypatch):
    path = _memory_json(tmp_path / "memory.jsonl", entities=400)  # 1,201 memories: three batches
    files = []
    real = tempfile.TemporaryFile

    def counted(*args, **kwargs):
        files.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", counted)
    held = keyword_service.transfer.import_foreign(path, fmt="memory-json")
    assert files == [] and held["scopes"][SCOPE]["memories"]["added"] == 1201
    monkeypatch.setattr(run, "HELD_BYTES", 0)
    with other_store(tmp_path) as target:
        spilled = target.transfer.import_foreign(path, fmt="memory-json")
        assert len(files) == 1
        assert spilled["scopes"] == held["scopes"] and _stored(target) == _stored(keyword_service)
