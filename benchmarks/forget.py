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
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, nargs="+", default=[10_000])
    parser.add_argument("--vectors", action="store_true", help="also time the Chroma side (slow past 10k)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    results = [run(count, args.vectors, args.repeats) for count in args.memories]
    for result in results:
        print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
