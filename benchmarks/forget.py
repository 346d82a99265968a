"""What a forensic forget costs: a single forget at N memories in one scope, on the embedded default.

SQL part (always): N chat messages written in transactions of 5,000 (FTS5 kept by its triggers,
so the index has segments of several levels), then `MemoryService.forget` of an old memory,
`repeats` times: the whole call (delete, audit snapshot, FTS5 merged until no deleted word is
left, WAL truncated), the FTS5 merge steps it took, and the longest writer-lock hold of any
transaction during the call (Store.holds).

Vector part (`--vectors`): N random unit vectors (384 dimensions) in both views of the scope's
Chroma collections, then `VectorIndex.delete` of one id (overwrite, delete, the forced save of
the HNSW index that drops Chroma's log) and `VectorIndex.scrub` (VACUUM of chroma.sqlite3),
`repeats` times. This is what the index writer does before a forget returns.

    python benchmarks/forget.py --memories 10000 --vectors --json forget.json

With CMMS_DATABASE_URL set (a fresh PostgreSQL database) the SQL part runs there: the forget
then also waits for VACUUM, ANALYZE and REINDEX CONCURRENTLY of the word indexes.

`--all` (issue 42): `hermes-cmms forget --all` of a whole scope of N memories instead, as a user
runs it (a process of its own, CLI start included, the default embedder on, so the vectors go
before it returns). The store is built once: N memories as maintenance.py's fill writes them
(sessions, an audit event each, 2% facts with their graph), and random unit vectors in all three
views of the scope's Chroma collections (a sentence vector per sentence, as the indexer writes);
each run forgets a fresh copy of it. Wall time, CPU seconds (the child's rusage) and peak RSS,
medians of `--runs`, the load average beside each; after each run, what is left: memories and
unblanked events of the scope, the scope's collections, and any of a sample of its texts still readable
in the files under the home. `--against COMMIT` runs the package at that commit too, alternating.

    python benchmarks/forget.py --all --memories 60000 --runs 3 --against 6fa3763 --json forget-all.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import insert

from chat import Chat
from hermes_cmms import MemoryService, Settings
from hermes_cmms.store.models import Memory
from hermes_cmms.store.store import NewMemory, Store
from hermes_cmms.vectors.chroma import VectorIndex

SCOPE = "local:bench-forget"
CHUNK = 5000


def fill(service: MemoryService, count: int) -> list[str]:
    """`count` chat messages in SCOPE; returns the ids of the first chunk (the oldest)."""
    chat, oldest, now = Chat(seed=11), [], time.time()
    for start in range(0, count, CHUNK):
        rows = [Store._row(NewMemory(SCOPE, text, role="user", source="bench:forget"), now)
                for _ in range(min(CHUNK, count - start) // 2) for text in chat.turn()]
        with service.store.write() as conn:
            conn.execute(insert(Memory), rows)
        oldest = oldest or [row["id"] for row in rows]
    return oldest


def time_sql_forgets(service: MemoryService, ids: list[str], repeats: int) -> dict:
    index, steps = service.store.keyword, []
    purge = index.purge

    def counted(conn, first=True):
        steps[-1] += 1
        return purge(conn, first)
    index.purge = counted
    seconds, holds = [], []
    for memory_id in ids[:repeats]:
        steps.append(0)
        service.store.holds.reset()
        started = time.perf_counter()
        service.forget(SCOPE, memory_id)
        seconds.append(time.perf_counter() - started)
        holds.append(service.store.holds.reset()["longest_s"])
    return {"forget_s_median": round(statistics.median(seconds), 3), "forget_s_max": round(max(seconds), 3),
            "fts_merge_steps_median": statistics.median(steps), "longest_lock_hold_s": round(max(holds), 4)}


def time_vector_forgets(settings: Settings, count: int, repeats: int) -> dict:
    vectors, rng = VectorIndex(settings), np.random.default_rng(3)
    ids = [f"bench{i:07d}" for i in range(count)]
    started = time.perf_counter()
    for start in range(0, count, 1000):
        part = rng.standard_normal((len(ids[start:start + 1000]), 384)).astype(np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        for view in ("content", "context"):
            vectors.upsert(SCOPE, ids[start:start + 1000], part.tolist(), [{"kind": "message"}] * len(part), view)
    filled = time.perf_counter() - started
    deletes, scrubs = [], []
    for memory_id in ids[:repeats]:
        t0 = time.perf_counter()
        vectors.delete(SCOPE, [memory_id])
        t1 = time.perf_counter()
        vectors.scrub()
        deletes.append(t1 - t0)
        scrubs.append(time.perf_counter() - t1)
    size = (settings.chroma_path / "chroma.sqlite3").stat().st_size
    return {"vector_fill_s": round(filled, 1), "vector_delete_s_median": round(statistics.median(deletes), 3),
            "chroma_vacuum_s_median": round(statistics.median(scrubs), 3), "chroma_sqlite_mb": round(size / 1e6, 1)}


def run(count: int, with_vectors: bool, repeats: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="cmms-bench-forget-"))
    settings = Settings.load(home, embedder="none")  # keyword only: forget waits for no vector index
    service = MemoryService(settings, scheduler=False)
    try:
        started = time.perf_counter()
        oldest = fill(service, count)
        result = {"memories": count, "fill_s": round(time.perf_counter() - started, 1),
                  **time_sql_forgets(service, oldest, repeats)}
    finally:
        service.close()
    try:
        if with_vectors:
            result.update(time_vector_forgets(settings, count, repeats))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return result


# -- forget --all ------------------------------------------------------------------------------

ALL_SCOPE = "local:bench-forget-all"
SAMPLE = 40  # texts of the scope looked for in the files after a forget --all


def build(home: Path, count: int) -> list[str]:
    """A store of `count` memories in ALL_SCOPE with random vectors in every view; a sample of
    its texts (the longest, so none is a piece of another scope's text)."""
    from maintenance import fill
    from sqlalchemy import select

    from hermes_cmms.common.units import units
    from hermes_cmms.vectors.chroma import UNITS

    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        fill(service, ALL_SCOPE, count)
        with service.store.read() as conn:
            rows = list(conn.execute(select(Memory.id, Memory.content, Memory.kind, Memory.created_at)
                                     .where(Memory.scope == ALL_SCOPE)))
    finally:
        service.close()
    vectors, rng = VectorIndex(Settings.load(home)), np.random.default_rng(5)
    for start in range(0, len(rows), 1000):
        part = rows[start:start + 1000]
        ids, meta = [r.id for r in part], [{"kind": r.kind, "created_at": r.created_at} for r in part]
        for view in ("content", "context"):
            vectors.upsert(ALL_SCOPE, ids, _unit_vectors(rng, len(ids)), meta, view)
        pieces = [(r, f"{r.id}:{n}") for r in part for n, _ in enumerate(units(r.content) or [r.content])]
        vectors.upsert(ALL_SCOPE, [unit for _, unit in pieces], _unit_vectors(rng, len(pieces)),
                       [{"memory_id": r.id, "kind": r.kind, "created_at": r.created_at} for r, _ in pieces], UNITS)
        print(f"vectors: {start + len(part):,} of {len(rows):,}", file=sys.stderr, end="\r")
    return [r.content for r in sorted(rows, key=lambda r: -len(r.content))[:SAMPLE]]


def _unit_vectors(rng, count: int) -> list:
    part = rng.standard_normal((count, 384)).astype(np.float32)
    return (part / np.linalg.norm(part, axis=1, keepdims=True)).tolist()


def forget_all_once(built: Path, work: Path, sample: list[str], tree: Path | None) -> dict:
    """`hermes-cmms forget --all` on a fresh copy of the built home: time, CPU, peak RSS, residue."""
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(built, home)
    env = dict(os.environ, HERMES_HOME=str(home), **({"PYTHONPATH": str(tree)} if tree else {}))
    env.pop("CMMS_EMBEDDER", None)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("hermes-cmms")), "forget", "--all", "--scope",
                             ALL_SCOPE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close(), proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 4):  # 4: forgotten, but vectors still queued for removal when it gave up waiting
        raise SystemExit(f"forget --all failed ({code}):\n{err[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "load_1m": round(load, 2), "exit": code,
            "said": (out + err).strip()[:300], **residue(home, sample)}


def residue(home: Path, sample: list[str]) -> dict:
    """What of the scope is left: its memories and events (SQL), its collections, and how many
    of the sample texts any file under the home still holds."""
    import sqlite3

    from hermes_cmms.store.availability import store_file
    from hermes_cmms.vectors.chroma import VIEWS, collection_name, scope_key

    with sqlite3.connect(store_file(Settings.load(home))) as conn:
        memories = conn.execute("SELECT COUNT(*) FROM memories WHERE scope = ?", (ALL_SCOPE,)).fetchone()[0]
        events = conn.execute("SELECT COUNT(*) FROM audit_log WHERE scope = ? AND action != 'forget_all' "
                              "AND (snapshot IS NOT NULL OR detail != '{}')", (ALL_SCOPE,)).fetchone()[0]
    with sqlite3.connect(Settings.load(home).chroma_path / "chroma.sqlite3") as conn:
        names = [collection_name(ALL_SCOPE, view) for view in VIEWS]
        collections = conn.execute(f"SELECT COUNT(*) FROM collections WHERE name IN ({','.join('?' * 3)})",
                                   names).fetchone()[0]
    blobs = [p.read_bytes() for p in home.rglob("*") if p.is_file()]
    readable = sum(any(text.encode() in blob for blob in blobs) for text in sample)
    segments = sum(scope_key(ALL_SCOPE).encode() in blob for blob in blobs)
    return {"memories_left": memories, "events_unblanked": events, "collections_left": collections,
            "sample_texts_readable": readable, "files_naming_scope": segments}


def run_all(count: int, runs: int, against: str | None, keep: str | None) -> dict:
    from cli_times import tree_at

    work = Path(keep or tempfile.mkdtemp(prefix="cmms-bench-forget-all-"))
    built, trees = work / f"built-{count}", {"this": None}
    try:
        work.mkdir(parents=True, exist_ok=True)
        if against:
            shutil.rmtree(work / "against", ignore_errors=True)
            (work / "against").mkdir()
            trees = {against: tree_at(against, work / "against"), "this": None}
        sample_file = built / "sample.json"
        if not sample_file.exists():
            shutil.rmtree(built, ignore_errors=True)
            started = time.perf_counter()
            sample = build(built / "home", count)
            sample_file.write_text(json.dumps(sample))
            print(f"built {count:,} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        sample = json.loads(sample_file.read_text())
        times: dict[str, list[dict]] = {label: [] for label in trees}
        if not runs:
            return {"memories": count, "built": str(built)}
        for n in range(runs):
            for label, tree in trees.items():
                times[label].append(forget_all_once(built / "home", work, sample, tree))
                print(label, json.dumps(times[label][-1]), file=sys.stderr)
        return {"memories": count, "runs": runs, **{label: {
            "wall_s_median": statistics.median(r["wall_s"] for r in got),
            "cpu_s_median": statistics.median(r["cpu_s"] for r in got),
            "peak_rss_mib_median": statistics.median(r["peak_rss_mib"] for r in got),
            "load_1m": [r["load_1m"] for r in got], "each": got} for label, got in times.items()}}
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, nargs="+", default=[10_000])
    parser.add_argument("--vectors", action="store_true", help="also time the Chroma side (slow past 10k)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="time `hermes-cmms forget --all` of a whole scope instead")
    parser.add_argument("--runs", type=int, default=3, help="--all: runs (medians)")
    parser.add_argument("--against", metavar="COMMIT", help="--all: also the package at this commit, alternating")
    parser.add_argument("--dir", help="--all: work here and keep the built store (reused by the next run)")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    if args.all:
        results = [run_all(count, args.runs, args.against, args.dir) for count in args.memories]
    else:
        results = [run(count, args.vectors, args.repeats) for count in args.memories]
    for result in results:
        print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
