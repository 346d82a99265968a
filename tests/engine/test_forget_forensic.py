"""Forget leaves no trace a forensic read of the files would find.

Every file under $HERMES_HOME/cmms (SQLite database, WAL, shm, Chroma's SQLite and HNSW files)
is read as raw bytes and searched for a forgotten memory's distinctive words (UTF-8 and
UTF-16, lower case, and the middle of each word, so FTS5's stemmed and prefix-compressed terms
are found too), its id (hex text, UTF-16, raw bytes) and its vector (any 8 float32 values in a
row within 1e-5 of the embedder's output, at every byte alignment, so HNSW's renormalised copy
counts). An unforgotten memory's words and vector are found by the same search, so the search
can see. The audit trail keeps, by design, each forgotten memory's id on its 'forget' event and,
for `snapshot_days`, a single forget's snapshot: in cmms.db those are allowed on the pages of
the audit_log table and its indexes only (SQLite's dbstat says which pages those are). After a
forget --all the audit trail's pages are searched too: only the ids may be left there, not the
words a client put in an MCP actor or source, or in a failing tool call's arguments.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import embedded_only, server_only
from db import sql
from inprocess import cli, memory_bridge
from mcp_client import run

SCOPE, OTHER = "local:forensic", "local:bystander"
GONE = "Zanzibarquux telephoriscent marmaladewombat crystallofidget parliamentquiver"
KEPT = "Quetzalborrow figmentalune scrimshawdelta oxbowtinsel"
DOOR_WORDS = ("Yarrowquibble", "Snickerfrond", "Moltenwhisk")  # an MCP actor, a source, a tool argument
FILLER = [f"Filler note number {i} about the {('garden', 'kitchen', 'garage')[i % 3]} on day {i}" for i in range(24)]


def _words(text: str) -> list[str]:
    return [w for w in text.split() if len(w) > 8]


def _needles(text: str, memory_id: str) -> dict[str, list[bytes]]:
    """What would give the memory away, by kind: its words (whole and their middle, which a
    stemmer and FTS5's prefix compression leave intact) and its id."""
    found = {}
    for word in _words(text):
        middle = word.lower()[3:-3]
        found[f"word {word}"] = [form.encode(codec) for form in (word, word.lower(), middle)
                                 for codec in ("utf-8", "utf-16-le", "utf-16-be")]
    found["id"] = [memory_id.encode(), memory_id.encode("utf-16-le"), bytes.fromhex(memory_id)]
    return found


def _holds_vector(data: bytes, vector: np.ndarray, run: int = 8) -> bool:
    """Whether `data` holds `run` float32 values in a row within 1e-5 of a stretch of `vector`."""
    for align in range(4):
        usable = (len(data) - align) // 4 * 4
        if usable < 4 * run:
            continue
        values = np.nan_to_num(np.frombuffer(data, dtype="<f4", count=usable // 4, offset=align),
                               nan=9.0, posinf=9.0, neginf=9.0)
        for start in range(0, len(vector) - run, 48):
            for at in np.flatnonzero(np.abs(values[:len(values) - run] - vector[start]) < 1e-5):
                if np.allclose(values[at:at + run], vector[start:start + run], atol=1e-5, rtol=0):
                    return True
    return False


def _allowed_pages(path: Path) -> set[int]:
    """Page numbers of cmms.db holding the audit trail (the table and its indexes)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        names = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'audit_log'")}
        return {page for name, page in conn.execute("SELECT name, pageno FROM dbstat") if name in names}


def _blank_audit_pages(path: Path, data: bytes) -> bytes:
    """cmms.db with the audit trail's pages zeroed (what may hold a forgotten memory's id)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    blanked = bytearray(data)
    for page in _allowed_pages(path):
        blanked[(page - 1) * size:page * size] = bytes(size)
    return bytes(blanked)


def traces(root: Path, text: str, memory_id: str, vector: np.ndarray, audit_allowed: bool = False) -> dict:
    """{file: [kinds of trace found]} over every file under `root` (recursively)."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if audit_allowed and path.name == "cmms.db":  # (the WAL's frames are searched whole)
            data = _blank_audit_pages(path, data)
        kinds = [kind for kind, forms in _needles(text, memory_id).items() if any(f in data for f in forms)]
        if _holds_vector(data, vector):
            kinds.append("vector")
        if kinds:
            found[str(path.relative_to(root))] = kinds
    return found


def _all_kinds(found: dict) -> set[str]:
    return {kind for kinds in found.values() for kind in kinds}


def _remember(service) -> tuple[str, str]:
    gone = service.remember(SCOPE, GONE)
    for note in FILLER:  # later writes: the forgotten words sit in an older FTS5 segment
        service.remember(SCOPE, note)
    kept = service.remember(OTHER, KEPT)
    assert service.upkeep.drain(60)
    return gone, kept


def _stored_vector(service, scope: str, memory_id: str) -> np.ndarray:
    """The memory's vector as the index holds it (texts to store go through the int8 model, or
    the float32 one while that is made: the index, not a new embedding, says which)."""
    return np.asarray(service.indexer.vectors.get(scope, [memory_id])[memory_id], dtype=np.float32)


@pytest.fixture
def remembered(service, home):
    gone, kept = _remember(service)
    gone_vector, kept_vector = _stored_vector(service, SCOPE, gone), _stored_vector(service, OTHER, kept)
    return service, home / "cmms", (gone, gone_vector), (kept, kept_vector)


@embedded_only
def test_a_single_forget_leaves_no_trace_in_any_file(remembered):
    service, root, (gone, gone_vector), (kept, kept_vector) = remembered
    before = _all_kinds(traces(root, GONE, gone, gone_vector))
    assert {"vector", "id", *(f"word {w}" for w in _words(GONE))} <= before  # the search sees them

    service.forget(SCOPE, gone)

    assert traces(root, GONE, gone, gone_vector, audit_allowed=True) == {}
    kept_found = _all_kinds(traces(root, KEPT, kept, kept_vector))
    assert {"vector", "id", *(f"word {w}" for w in _words(KEPT))} <= kept_found
    assert "Zanzibarquux" not in service.recall(SCOPE, "Zanzibarquux marmaladewombat")
    # the audit snapshot is the one copy left, on purpose; once the sweep drops it, only the
    # forget event's id is left, on the audit trail's pages
    assert any("word" in kind for kind in _all_kinds(traces(root, GONE, gone, gone_vector)))
    service.upkeep.sweep(now=time.time() + (service.settings.snapshot_days + 1) * 86400)
    assert traces(root, GONE, gone, gone_vector, audit_allowed=True) == {}
    assert _all_kinds(traces(root, GONE, gone, gone_vector)) == {"id"}


async def _through_mcp(home: Path) -> None:
    """A memory stored with the client's words as its actor and source, and a failing call
    whose error repeats its argument: all of it on the scope's audit trail."""
    actor, source, argument = DOOR_WORDS
    async with memory_bridge(home, "--scope", SCOPE) as bridge:
        await bridge.ok("store_memory", scope=SCOPE, content="A note through the bridge",
                        source=f"clinic {source}", actor=f"Dana {actor}")
        failed = await bridge.call("forget_memory", scope=SCOPE, tier=f"my {argument} diary")
        assert failed.error and argument in failed.text


def _door_words(root: Path) -> set[str]:
    """Which of DOOR_WORDS any file under `root` holds (audit trail included)."""
    data = b"".join(path.read_bytes() for path in root.rglob("*") if path.is_file())
    return {word for word in DOOR_WORDS if word.lower()[2:-2].encode() in data.lower()}


@embedded_only
def test_forget_all_through_the_cli_leaves_no_trace_in_any_file(remembered):
    service, root, (gone, gone_vector), (kept, kept_vector) = remembered
    service.forget(SCOPE, service.remember(SCOPE, "A note forgotten first"))  # Chroma saves its HNSW files
    assert any(path.endswith("data_level0.bin") for path in traces(root, GONE, gone, gone_vector))
    service.close()  # the CLI's engine writes the vector index
    run(_through_mcp(root.parent))
    assert _door_words(root) == set(DOOR_WORDS)  # the search sees them

    done = cli(root.parent, "forget", "--scope", SCOPE, "--all")

    assert done.returncode == 0, done.stderr
    assert _all_kinds(traces(root, GONE, gone, gone_vector)) <= {"id"}  # the audit trail searched too
    assert _door_words(root) == set()
    kept_found = _all_kinds(traces(root, KEPT, kept, kept_vector))
    assert {"vector", "id", *(f"word {w}" for w in _words(KEPT))} <= kept_found


@embedded_only
def test_forget_all_in_the_process_that_writes_the_index_returns_once_no_trace_is_left(remembered):
    """forget_all returns when the index writer is done with the scope: its collections deleted
    and Chroma's file vacuumed, not merely its queued deletions answered."""
    service, root, (gone, gone_vector), (kept, kept_vector) = remembered

    assert service.forget_all(SCOPE) == 1 + len(FILLER)

    assert _all_kinds(traces(root, GONE, gone, gone_vector)) <= {"id"}  # the audit trail keeps ids only
    assert "vector" in _all_kinds(traces(root, KEPT, kept, kept_vector))


def _middles(text: str) -> list[str]:
    return [word.lower()[3:-3] for word in _words(text)]


def postgres_tuples(service, text: str, memory_id: str) -> set[str]:
    """The tables (and TOAST tables) but the audit trail with a tuple, live or dead, holding one
    of the memory's words or its id: what pageinspect (or pg_dirtyread) shows of the pages."""
    sql(service, "CREATE EXTENSION IF NOT EXISTS pageinspect")
    found = set()
    for needle in (*_middles(text), memory_id):
        found |= {name for (name,) in sql(
            service, "SELECT DISTINCT c.relname FROM pg_class AS c "
                     "CROSS JOIN LATERAL generate_series(0, pg_relation_size(c.oid) / 8192 - 1) AS page "
                     "CROSS JOIN LATERAL heap_page_items(get_raw_page(c.oid::regclass::text, page::int)) AS item "
                     "WHERE c.relkind IN ('r', 't') AND c.relnamespace IN ('public'::regnamespace, 'pg_toast'::regnamespace) "
                     "AND c.oid NOT IN (SELECT 'audit_log'::regclass UNION SELECT reltoastrelid FROM pg_class "
                     "WHERE oid = 'audit_log'::regclass) AND position(convert_to(?, 'UTF8') IN item.t_data) > 0",
            needle)}
    return found


def postgres_index_files(service, text: str) -> set[str]:
    """The indexes of `memories` whose files (read after a CHECKPOINT) hold one of the words."""
    sql(service, "CHECKPOINT")
    where = Path(sql(service, "SELECT current_setting('data_directory')")[0][0])
    found = set()
    for name, path in sql(service, "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_index AS i "
                                   "JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = 'memories'::regclass"):
        data = b"".join(p.read_bytes() for p in (where / path).parent.glob(Path(path).name + "*"))
        if any(middle.encode() in data for middle in _middles(text)):
            found.add(name)
    return found


def postgres_statistics(service, text: str, memory_id: str) -> set[str]:
    """Tables but the audit trail whose planner statistics (pg_stats) hold a word or the id."""
    rows = sql(service, "SELECT tablename, CAST(most_common_vals AS text), CAST(histogram_bounds AS text) "
                        "FROM pg_stats WHERE schemaname = 'public' AND tablename <> 'audit_log'")
    return {table for table, *values in rows
            if any(n in (v or "").lower() for v in values for n in (*_middles(text), memory_id))}


def dump_without_audit(service) -> str:
    """Every row of every table but the audit trail, as one string."""
    from db import tables

    return repr({name: sql(service, f'SELECT * FROM "{name}"') for name in tables(service) if name != "audit_log"})


def _dump(service) -> str:
    """Every row of every table, the audit trail's too, as one lower-case string."""
    from db import tables

    return repr({name: sql(service, f'SELECT * FROM "{name}"') for name in tables(service)}).lower()


def _chroma_shows(service, scope: str, memory_id: str, vector: np.ndarray) -> bool:
    vectors = service.indexer.vectors
    near = {i for i, _ in vectors.query(scope, vector.tolist(), 50)}
    return bool(vectors.get(scope, [memory_id])) or memory_id in near


def _server_has_no_trace(service, gone: str, gone_vector: np.ndarray) -> None:
    assert postgres_tuples(service, GONE, gone) == set()
    assert postgres_index_files(service, GONE) == set()
    assert postgres_statistics(service, GONE, gone) == set()
    dump = dump_without_audit(service).lower()
    assert not any(n in dump for n in (*_middles(GONE), gone))
    assert not _chroma_shows(service, SCOPE, gone, gone_vector)


@server_only
def test_forget_on_the_server_backend_leaves_no_trace_the_servers_show(remembered):
    service, _, (gone, gone_vector), (kept, kept_vector) = remembered
    sql(service, "ANALYZE")  # statistics that sample the memories, as autovacuum takes them
    assert "memories" in postgres_tuples(service, GONE, gone)
    assert postgres_index_files(service, GONE) >= {"ix_memories_fts_content", "ix_memories_fts_all"}

    service.forget(SCOPE, gone)

    _server_has_no_trace(service, gone, gone_vector)
    assert postgres_tuples(service, KEPT, kept) == {"memories"}  # the same search finds what is kept
    assert _chroma_shows(service, OTHER, kept, kept_vector)


@server_only
def test_forget_all_through_the_cli_on_the_server_backend_leaves_no_trace_the_servers_show(remembered):
    service, root, (gone, gone_vector), (kept, kept_vector) = remembered
    sql(service, "ANALYZE")
    run(_through_mcp(root.parent))
    assert all(word.lower() in _dump(service) for word in DOOR_WORDS)

    done = cli(root.parent, "forget", "--scope", SCOPE, "--all")

    assert done.returncode == 0, done.stderr
    assert not any(word.lower() in _dump(service) for word in DOOR_WORDS)  # the audit trail too
    _server_has_no_trace(service, gone, gone_vector)
    assert "filler note number 3 " not in dump_without_audit(service).lower()
    assert postgres_tuples(service, KEPT, kept) == {"memories"}
    assert _chroma_shows(service, OTHER, kept, kept_vector)


HEAP_PROBE = '''
import ctypes, sys
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "scrub":
    from hermes_cmms.common.scrub import scrub_freed_memory
    assert scrub_freed_memory()
secret = b"Zanzibarquux telephoriscent " * 140
first = libc.malloc(len(secret))
ctypes.memmove(first, secret, len(secret))
libc.free(first)
again = libc.malloc(len(secret))  # glibc hands the block just freed back out
print(again == first, secret[64:128] in ctypes.string_at(again, len(secret)))
'''


@pytest.mark.quick
@pytest.mark.parametrize("mode, stale", [("plain", True), ("scrub", False)])
def test_a_block_the_heap_hands_out_again_holds_nothing_of_what_was_freed(mode, stale):
    """Chroma's embedded index writes a buffer malloc gave it whole, unused slots included: with
    the store open (scrub_freed_memory), what was freed before cannot be in it. Without it, the
    same probe finds the freed text (so the probe can see)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", HEAP_PROBE, mode], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", str(stale)]
