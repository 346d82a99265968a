"""`doctor` on an embedded Chroma index that is already broken: a real store whose index (built by
the engine with the real MiniLM, then saved as a forget saves it, so its HNSW files hold the
vectors and the log does not) is broken on disk the ways a disk, a hand or a partial restore
breaks it. Each break is first shown to break Chroma itself (it fails, or answers nothing), then
doctor must say FAIL in one sentence with the fix, and change no file. The fix it names works."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import embedded_only
from inprocess import cli

pytestmark = embedded_only  # (the embedded index's own files)

SCOPES = ("user:doctor:ana", "user:doctor:ben")
NOTES = ("The heron nests in the reeds at the north end of the lake.",
         "Grandmother's brass compass is in the cedar chest.",
         "The allotment's water tap is shut off from November.")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A home whose store has memories in two scopes, every vector written and saved to HNSW."""
    from hermes_cmms import MemoryService, Settings

    home = tmp_path_factory.mktemp("doctor_home")
    with pytest.MonkeyPatch.context() as env:
        for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER"):
            env.delenv(name, raising=False)
        service = MemoryService(Settings.load(home), scheduler=False)
        try:
            assert service.upkeep.wait_vectors(120) and service.indexer.active, service.indexer.error
            for scope in SCOPES:
                for note in NOTES:
                    service.remember(scope, note)
            assert service.upkeep.drain(60)
            for scope in SCOPES:
                service.indexer.vectors.save(scope)  # (as after a forget: the log is dropped)
        finally:
            service.close()
    return home


@pytest.fixture
def copy(built, tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(built, home)
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


def _chroma(home: Path) -> Path:
    return home / "cmms" / "chroma"


def _segments(home: Path) -> list[Path]:
    return [p for p in _chroma(home).iterdir() if p.is_dir()]


def _cut(path: Path, keep: float) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(int(path.stat().st_size * keep))


def _scribble(path: Path) -> None:
    with open(path, "r+b") as handle:  # pages 3 and 4 overwritten, as a bad disk block
        handle.seek(8192)
        handle.write(os.urandom(8192))


CHROMA_OPENED = """
import sys, chromadb
from chromadb.config import Settings
client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
if sys.argv[2] == "drop":
    client.delete_collection(sys.argv[3])
    sys.exit(0)
found = 0
for collection in client.list_collections():
    if collection.name.startswith("cmms"):  # every view
        found += len(client.get_collection(collection.name).query(query_embeddings=[[1.0] + [0.0] * 383],
                                                                  n_results=3)["ids"][0])
print(found)
"""


def _chroma_says(home: Path, *args: str) -> subprocess.CompletedProcess:
    """Chroma itself, in a process of its own, opening the index (it may write: only on copies)."""
    return subprocess.run([sys.executable, "-c", CHROMA_OPENED, str(_chroma(home)), *(args or ("query",))],
                          capture_output=True, text=True, timeout=120)


BREAKS = {
    "index directory deleted": lambda home: shutil.rmtree(_chroma(home)),
    "chroma.sqlite3 deleted": lambda home: (_chroma(home) / "chroma.sqlite3").unlink(),
    "chroma.sqlite3 cut short": lambda home: _cut(_chroma(home) / "chroma.sqlite3", 0.5),
    "chroma.sqlite3 scribbled on": lambda home: _scribble(_chroma(home) / "chroma.sqlite3"),
    "an HNSW length.bin deleted": lambda home: (_segments(home)[0] / "length.bin").unlink(),
    "HNSW data_level0.bin emptied": lambda home: [_cut(s / "data_level0.bin", 0) for s in _segments(home)],
    "HNSW segment directories deleted": lambda home: [shutil.rmtree(s) for s in _segments(home)],
    "HNSW segments deleted, then Chroma opened": lambda home: (
        [shutil.rmtree(s) for s in _segments(home)], _chroma_says(home)),
    "a scope's collection deleted": lambda home: _chroma_says(home, "drop", _collection(SCOPES[1])),
}


def _collection(scope: str) -> str:
    from hermes_cmms.vectors.chroma import collection_name

    return collection_name(scope)


def _files(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(home.rglob("*"))}


def _vectors_line(home: Path) -> tuple[str, str]:
    from hermes_cmms.ops import doctor

    lines = [(status, detail) for status, name, detail in doctor.run_checks(home) if name == "vectors"]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.quick
def test_doctor_reads_a_whole_embedded_index_as_ok_and_makes_nothing(copy):
    before = _files(copy)
    status, detail = _vectors_line(copy)
    assert status == "ok" and "2 scope(s) indexed" in detail, detail
    assert _files(copy) == before


@pytest.mark.parametrize("how", list(BREAKS))
def test_doctor_says_fail_for_an_embedded_index_broken_on_disk(copy, how):
    BREAKS[how](copy)
    opened = copy.parent / "opened"  # Chroma, on a copy, shows the break is real
    shutil.copytree(copy, opened)
    said = _chroma_says(opened)
    assert said.returncode != 0 or int(said.stdout.strip() or 0) < 3 * 3 * len(SCOPES), (said.stdout, said.stderr)
    before = _files(copy)
    status, detail = _vectors_line(copy)
    assert status == "FAIL", detail
    assert "recall finds" in detail and "words only" in detail and "`hermes-cmms reindex --hermes-home" in detail
    assert detail.count(". ") == 0 and detail.endswith("again."), detail  # one sentence
    assert _files(copy) == before  # doctor made, repaired and wrote nothing


def test_the_fix_doctor_names_for_a_damaged_index_works(copy):
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.recall.search import search

    (_segments(copy)[0] / "length.bin").unlink()
    status, detail = _vectors_line(copy)
    assert status == "FAIL" and "move it aside" in detail
    shutil.move(_chroma(copy), str(_chroma(copy)) + ".damaged")
    done = cli(copy, "reindex", "--quiet")
    assert done.returncode == 0, done.stderr
    assert _vectors_line(copy)[0] == "ok"
    with MemoryService(Settings.load(copy), scheduler=False) as service:
        assert service.upkeep.wait_vectors(120)
        hits = search(service.engine, SCOPES[0], "Where do the wading birds breed?", limit=3)
        assert hits[0].memory.content == NOTES[0] and hits[0].vector_rank is not None


@pytest.mark.quick
@pytest.mark.parametrize("runs_out", ["SQLite's busy wait", "the child's time"])
def test_doctor_calls_an_index_locked_by_another_writer_busy_not_damaged(copy, monkeypatch, runs_out):
    import sqlite3

    from hermes_cmms.vectors import chroma

    monkeypatch.setattr(chroma, "BUSY_S", 0.5 if runs_out == "SQLite's busy wait" else 60.0)
    monkeypatch.setattr(chroma, "CHILD_S", 60.0 if runs_out == "SQLite's busy wait" else 2.0)
    before = _files(copy)  # (before the lock: closing any handle on the file drops this process's locks)
    writer = sqlite3.connect(_chroma(copy) / "chroma.sqlite3", isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")  # (as Chroma writing a batch: journal_mode delete)
        status, detail = _vectors_line(copy)
    finally:
        writer.close()
    assert status == "warn" and "is busy (another process is writing it" in detail, detail
    assert detail.endswith("run doctor again.") and "damaged" not in detail and "mv " not in detail, detail
    assert _files(copy) == before
    assert _vectors_line(copy)[0] == "ok"  # (the lock let go: the same index reads whole)
