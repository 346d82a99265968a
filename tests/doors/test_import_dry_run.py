"""`hermes-cmms import --dry-run` writes nothing: in a Hermes home without a store yet (and with
--create) it makes no cmms/ directory, database or vector index, and still says what the file
would add; on an existing store every file stays byte for byte as it was. The file is the
ChatGPT fixture (tests/data/imports/chatgpt, written as ChatGPT's data export writes
conversations.json)."""
import hashlib
import json
from pathlib import Path

import pytest

from hermes_cmms.ops.formats.run import NO_STORE
from imports import imported, run

CHATGPT = Path(__file__).parents[1] / "data" / "imports" / "chatgpt" / "conversations.json"


def _files(home: Path) -> dict[str, str]:
    """Every file under the home, and a hash of its bytes."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file()}


def _dry(home: Path, *args: str) -> dict:
    result = run(home, "import", "--dry-run", *args, str(CHATGPT))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.quick
@pytest.mark.embedded_only
@pytest.mark.parametrize("where", ["a Hermes home before its first chat", "any folder, with --create"])
def test_a_dry_run_where_there_is_no_store_creates_none(home, where):
    if where.startswith("a Hermes home"):
        (home / "config.yaml").write_text("model: {}\n", encoding="utf-8")  # what `hermes setup` leaves
    before = _files(home)
    dry = _dry(home, *(["--create"] if "--create" in where else []))
    assert _files(home) == before and not (home / "cmms").exists()
    assert dry["store"] == NO_STORE  # no store: nothing present, no session kept live (0, not "unknown")
    assert dry["scopes"]["local:default"]["sessions"] == {"new": 2, "present": 0}
    assert dry["scopes"]["local:default"]["memories"] == {"new": 7, "present": 0}
    assert dry["skipped"]["a tool call"]["count"] == 1
    assert imported(home, str(CHATGPT))["scopes"]["local:default"]["memories"]["added"] == 7  # what it said


@pytest.mark.embedded_only
def test_a_dry_run_leaves_an_existing_store_byte_for_byte(home):
    imported(home, str(CHATGPT))
    before = _files(home)
    dry = _dry(home)
    assert _files(home) == before
    assert "store" not in dry and dry["scopes"]["local:default"]["memories"] == {"new": 0, "present": 7}
