"""Many scopes on one Chroma server: a collection per scope and view against a few collections
holding every scope, the scope in each vector's metadata (Chroma's `where` filter).

For each layout, a fresh `chroma run` on 127.0.0.1 (its own data directory) is loaded with
`--scopes` scopes x `--memories` memories x the three views (content, context, sentences; one
sentence a memory), as random unit vectors of 384 dimensions written straight through chromadb
(no embedding) with the metadata our indexer writes ({kind, created_at}; the sentences view
also {memory_id}; the shared layout also {scope: sha256 of the scope}). Then it measures:

- load: wall time of the writes (4 client threads);
- prefetch: what one recall asks of the index, in one random scope: content n=50, context n=50,
  sentences n=100 (recall/search.py), `--queries` times; p50 / p95 of the three together;
- RSS of the server process (and its children) after the queries;
- start-up: the server stopped and started on its data: seconds until its heartbeat answers,
  then the first prefetch (cold) and p95 of `--queries` more, and RSS again;
- forget of one scope, as hermes-cmms does it: per scope, the scope's collections deleted;
  shared, its vectors overwritten with a blank vector, deleted by where, then the save that makes
  Chroma drop its log (chroma.py). Then the server is stopped and every file under its data
  directory is searched for the scope's memory ids and for the bytes of one of its vectors.

    python benchmarks/many_scopes.py --scopes 10000 --json many.json
    python benchmarks/many_scopes.py --scopes 200 --layouts per-scope,shared:1   # a quick run
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

DIM = 384
VIEWS = {"content": "cmms_", "context": "cmmsc_", "sentences": "cmmss_"}
QUERY = {"content": 50, "context": 50, "sentences": 100}  # recall/search.py's n per view
SPACE = {"hnsw:space": "cosine"}
BATCH = 2000  # vectors a request when loading the shared layout


def digest(scope: str) -> str:
    return hashlib.sha256(scope.encode("utf-8")).hexdigest()[:40]


def collection_of(layout: str, scope: str, view: str) -> str:
    if layout == "per-scope":
        return VIEWS[view] + digest(scope)
    buckets = int(layout.split(":")[1])
    return f"{VIEWS[view]}shared_{int(digest(scope), 16) % buckets}"


def memory_id(s: int, m: int) -> str:
    return f"mem{s:07d}x{m:03d}zq"  # unique bytes to search the files for


def vectors_of(s: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(s)
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def metadata(layout: str, scope: str, mid: str, view: str) -> dict:
    meta = {"kind": "message", "created_at": "2026-12-01T10:00:00+00:00"}
    if view == "sentences":
        meta["memory_id"] = mid
    if layout != "per-scope":
        meta["scope"] = digest(scope)
    return meta


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, path: Path, port: int):
        self.path, self.port, self.process = path, port, None

    def start(self) -> float:
        chroma = Path(sys.executable).with_name("chroma")
        began = time.perf_counter()
        self.process = subprocess.Popen([str(chroma), "run", "--host", "127.0.0.1", "--port", str(self.port),
                                         "--path", str(self.path)], stdout=subprocess.DEVNULL,
                                        stderr=open(self.path.parent / f"chroma-{self.port}.log", "ab"))  # noqa: SIM115 - the child keeps it
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=2)
                return time.perf_counter() - began
            except Exception:  # noqa: BLE001 - not up yet
                if self.process.poll() is not None:
                    raise RuntimeError("chroma exited; see its log")
                time.sleep(0.05)

    def rss_mb(self) -> float:
        pids, total = [self.process.pid], 0
        while pids:
            pid = pids.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                pids += [int(c) for c in children]
            except (OSError, StopIteration):
                pass
        return total / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


_clients: dict = {}


def client(port: int):
    """One chromadb client a thread and port (making one costs requests of its own)."""
    import threading
    key = (threading.get_ident(), port)
    if key not in _clients:
        _clients[key] = _new_client(port)
    return _clients[key]


def _new_client(port: int):
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    return chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))


def load(layout: str, server: "Server", scopes: list[str], memories: int, max_rss_mb: float) -> dict:
    """Write every scope's vectors; the server's RSS every 500 scopes. Stops early (and says
    at how many scopes) if the server's RSS passes `max_rss_mb`."""
    port, began, rss = server.port, time.perf_counter(), []

    def progress(done: int) -> bool:
        rss.append((done, round(server.rss_mb())))
        print(f"  {done} scopes, {time.perf_counter() - began:.0f} s, RSS {rss[-1][1]} MB", file=sys.stderr)
        return rss[-1][1] > max_rss_mb

    def summary(done: int) -> dict:
        return {"load_s": round(time.perf_counter() - began, 1), "loaded_scopes": done, "rss_during_load_mb": rss}
    if layout == "per-scope":
        def one(s: int):
            c = client(port)
            vs = vectors_of(s, memories)
            ids = [memory_id(s, m) for m in range(memories)]
            for view in VIEWS:
                col = c.get_or_create_collection(collection_of(layout, scopes[s], view), metadata=SPACE,
                                                 embedding_function=None)
                col.upsert(ids=ids if view != "sentences" else [f"{i}:0" for i in ids], embeddings=vs,
                           metadatas=[metadata(layout, scopes[s], i, view) for i in ids])
        done = 0
        with ThreadPoolExecutor(4) as pool:
            for start in range(0, len(scopes), 500):
                done += len(list(pool.map(one, range(start, min(start + 500, len(scopes))))))
                if progress(done):
                    break
        return summary(done)
    per_batch = max(1, BATCH // memories)

    def batch(start: int):
        c = client(port)
        chunk = range(start, min(start + per_batch, len(scopes)))
        for view in VIEWS:
            by_collection: dict[str, tuple[list, list, list]] = {}
            for s in chunk:
                ids, vs, metas = by_collection.setdefault(collection_of(layout, scopes[s], view), ([], [], []))
                for m, v in enumerate(vectors_of(s, memories)):
                    mid = memory_id(s, m)
                    ids.append(mid if view != "sentences" else f"{mid}:0")
                    vs.append(v)
                    metas.append(metadata(layout, scopes[s], mid, view))
            for name, (ids, vs, metas) in by_collection.items():
                c.get_or_create_collection(name, metadata=SPACE, embedding_function=None).upsert(
                    ids=ids, embeddings=np.array(vs), metadatas=metas)
    done, step = 0, max(per_batch, 500 // per_batch * per_batch)
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, len(scopes), step):
            list(pool.map(batch, range(start, min(start + step, len(scopes)), per_batch)))
            done = min(start + step, len(scopes))
            if progress(done):
                break
    return summary(done)


def prefetch(c, layout: str, scope: str, vector) -> float:
    """One recall's three vector queries in `scope`; seconds."""
    began = time.perf_counter()
    for view, n in QUERY.items():
        col = _opened(c, collection_of(layout, scope, view))
        where = None if layout == "per-scope" else {"scope": digest(scope)}
        found = col.query(query_embeddings=[vector], n_results=n, where=where, include=["distances"])
        assert found["ids"][0], f"nothing found in {scope}"
    return time.perf_counter() - began


_open: dict = {}


def _opened(c, name: str):
    """The collection, looked up once a client (as VectorIndex caches them)."""
    if (id(c), name) not in _open:
        _open[id(c), name] = c.get_collection(name, embedding_function=None)
    return _open[id(c), name]


def queries(port: int, layout: str, scopes: list[str], count: int, seed: int) -> dict:
    c, rng = client(port), random.Random(seed)
    times = []
    for _ in range(count):
        s = rng.randrange(len(scopes))
        times.append(prefetch(c, layout, scopes[s], vectors_of(10**9 + s, 1)[0].tolist()))
    times.sort()
    return {"p50_ms": round(1000 * statistics.median(times), 1),
            "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 1), "queries": count}


def forget(port: int, layout: str, scope: str, s: int, memories: int) -> float:
    c = client(port)
    began = time.perf_counter()
    if layout == "per-scope":
        for view in VIEWS:
            c.delete_collection(collection_of(layout, scope, view))
        return time.perf_counter() - began
    blank = [1.0] + [0.0] * (DIM - 1)
    for view in VIEWS:
        col = c.get_collection(collection_of(layout, scope, view), embedding_function=None)
        held = col.get(where={"scope": digest(scope)}, include=[])["ids"]
        col.upsert(ids=held, embeddings=[blank] * len(held))
        col.delete(where={"scope": digest(scope)})
        col.delete(ids=[f"cmms:scrub:{n}" for n in range(1000)])  # Chroma saves HNSW, drops its log
    return time.perf_counter() - began


def residue(path: Path, s: int, memories: int) -> dict:
    """Files under the server's data directory that still hold the forgotten scope's ids or
    the bytes of one of its vectors."""
    ids = [memory_id(s, m).encode() for m in range(memories)]
    vector = vectors_of(s, memories)[memories // 2].tobytes()[:32]
    found: dict[str, list[str]] = {"ids": [], "vector": []}
    for file in path.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            if any(i in data for i in ids):
                found["ids"].append(str(file.relative_to(path)))
            if vector in data:
                found["vector"].append(str(file.relative_to(path)))
    return found


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def run(layout: str, scopes: list[str], args, base: Path) -> dict:
    path = base / layout.replace(":", "_")
    path.mkdir(parents=True)
    server = Server(path, free_port())
    result: dict = {"layout": layout, "scopes": len(scopes), "memories": args.memories}
    result["start_empty_s"] = round(server.start(), 2)
    try:
        result.update(load(layout, server, scopes, args.memories, args.max_rss_mb))
        scopes = scopes[:result["loaded_scopes"]]
        result["collections"] = len(client(server.port).list_collections(limit=10**6))
        result["prefetch"] = queries(server.port, layout, scopes, args.queries, 1)
        result["rss_mb"] = round(server.rss_mb())
        server.stop()
        result["disk_mb"] = disk_mb(path)
        result["start_s"] = round(server.start(), 2)
        _clients.clear()
        _open.clear()
        c, s = client(server.port), len(scopes) // 2
        result["first_prefetch_ms"] = round(1000 * prefetch(c, layout, scopes[s], vectors_of(7, 1)[0].tolist()), 1)
        result["prefetch_after_start"] = queries(server.port, layout, scopes, args.queries, 2)
        result["rss_after_start_mb"] = round(server.rss_mb())
        victim = len(scopes) // 3
        result["forget_s"] = round(forget(server.port, layout, scopes[victim], victim, args.memories), 2)
        for view in VIEWS:
            if layout != "per-scope":
                left = client(server.port).get_collection(collection_of(layout, scopes[victim], view)).get(
                    where={"scope": digest(scopes[victim])}, include=[])["ids"]
                assert not left, f"{len(left)} vectors of the forgotten scope still answer"
        other = prefetch(client(server.port), layout, scopes[victim + 1], vectors_of(8, 1)[0].tolist())
        result["prefetch_after_forget_ms"] = round(1000 * other, 1)
    finally:
        server.stop()
    result["residue_after_forget"] = residue(path, victim, args.memories)
    chroma = Path(sys.executable).with_name("chroma")
    subprocess.run([str(chroma), "vacuum", "--path", str(path), "--force"], capture_output=True, check=True)
    result["residue_after_vacuum"] = residue(path, victim, args.memories)
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scopes", type=int, default=10000)
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--layouts", default="per-scope,shared:1",
                        help="per-scope and/or shared:B (B collections per view, scopes hashed into them)")
    parser.add_argument("--max-rss-mb", type=float, default=8000, help="stop loading a layout past this server RSS")
    parser.add_argument("--dir", help="where the servers' data go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="many-scopes-"))
    scopes = [f"hermes:user-{n:06d}" for n in range(args.scopes)]
    results = []
    for layout in args.layouts.split(","):
        print(f"{layout}: {args.scopes} scopes x {args.memories} memories x 3 views", file=sys.stderr)
        results.append(run(layout, scopes, args, base))
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
