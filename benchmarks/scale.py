"""Scale-out: acknowledged turns/s, vectors/s and prefetch p95 with 1, 2 and 4 worker processes
on PostgreSQL + a Chroma server.

Each worker is a process as a gateway worker is: a HERMES_HOME of its own, one
`CmmsMemoryProvider` per user (platform `scale`, scopes `user:scale:<n>`; the users are split
among the workers), WRITERS threads calling `sync_turn` round the worker's users as fast as
they are acknowledged (`--writers`), and one thread calling `prefetch` for them, all with the packaged
MiniLM (`CMMS_EMBEDDER=onnx`), so the worker's indexer embeds while it serves. For each worker
count, fresh databases; the workers load, start together on a signal, write for `--seconds`
(the load phase: turns/s acknowledged, prefetch p95, memories embedded meanwhile), then stop
writing and go on embedding until the outbox is empty or `--drain` seconds pass (the drain
phase: vectors/s with nothing else to do). Vectors/s counts memories (each written to three
views).

    python benchmarks/scale.py [--workers 1,2,4] [--writers 4] [--seconds 30] [--users 64] [--json OUT]
        [--code DIR]   (import hermes_cmms from DIR, e.g. an export of the commit to compare)
        [--embedder none]   (keyword-only workers: the write path alone, no embedding on the cores)
        [--reads per-turn|in-turn]   (a prefetch thread making one prefetch per acknowledged turn at most;
                      in-turn: each writer recalls, then writes, as a Hermes turn does; default: a flat-out thread)
        [--rate R]   (R turns/s offered by all workers together, spread over their writer threads:
                      prefetch latency at a set load, not flat out)

The servers default to $CMMS_TEST_PG_URL / $CMMS_TEST_CHROMA_URL (.ci/services prints them).
Each run also records the CPU each acknowledged turn cost: in the writer threads (sync_turn
itself, and the recall with `--reads in-turn`), in the workers' whole processes (with the
indexer's embedding), in the servers (the processes listening on the PostgreSQL and Chroma ports
and their children), `ours` (the workers and the servers: what the turns cost, whatever else the
machine runs), `ours_drained` (the same from the start of the load to the end of the drain, once
the outbox is empty: each turn written, recalled and embedded, whatever the indexer managed during
the load), and on the whole machine (anything else running too); and how busy the machine's cores were (`cpu_busy`, /proc/stat: 1.0 = every
core, all the time): with the cores full, more workers cannot add turns.
The run tries to raise its own priority (nice -15: needs the right to) and records the load
average before and after, since the machine it runs on may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import server_databases  # shared with the tests
from sqlalchemy.engine import make_url

WRITERS = 4  # sync_turn threads per worker (--writers)
QUESTIONS = ("Where did I leave the bike?", "What is the locker code?", "When is the dentist?",
             "Which train do I take on Mondays?", "What did I say about the boiler?")


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def worker(home: str, users: list[int], seconds: float, writers: int, pace: float = 0.0,
           reads: str = "flat") -> int:
    """One gateway-like worker: ready, then `go` on stdin, write and read for `seconds`, print
    the figures, then keep embedding until `stop` on stdin. With `pace`, each writer thread
    starts a turn every `pace` seconds at most (a set rate, not flat out). `reads` "per-turn":
    the prefetch thread makes one prefetch per acknowledged turn at most (else flat out); "in-turn": no prefetch thread, each writer recalls before each turn, as a
    Hermes turn does (the model's answer left out), so turns/s counts whole turns."""
    import hermes_cmms
    from hermes_cmms.provider import CmmsMemoryProvider

    providers = []
    for user in users:
        provider = CmmsMemoryProvider()
        provider.initialize(f"scale-{user}", hermes_home=home, platform="scale", user_id=str(user),
                            agent_context="primary")
        providers.append(provider)
    readers = []  # the same users' recall, from providers of its own (as another chat of theirs)
    for user in users[:writers]:
        provider = CmmsMemoryProvider()
        provider.initialize(f"scale-read-{user}", hermes_home=home, platform="scale", user_id=str(user),
                            agent_context="primary")
        readers.append(provider)
    providers[0].service.indexer.ready.wait(120)
    print(json.dumps({"ready": hermes_cmms.__file__}), flush=True)
    if sys.stdin.readline().strip() != "go":
        return 2
    deadline = time.monotonic() + seconds
    acked, errors, prefetch_s = [0] * writers, [], []
    cpu_began, write_cpu = time.process_time(), [0.0] * writers

    def write(index: int) -> None:
        mine, n, began, cpu = providers[index::writers], 0, time.monotonic(), time.thread_time()
        while mine and time.monotonic() < deadline:
            if pace:
                time.sleep(max(0.0, began + n * pace - time.monotonic()))
            provider = mine[n % len(mine)]
            n += 1
            token = uuid.uuid4().hex[:10]
            try:
                if reads == "in-turn":  # a Hermes turn: the recall first, then the turn's write
                    started = time.perf_counter()
                    provider.prefetch(QUESTIONS[n % len(QUESTIONS)])
                    prefetch_s.append(time.perf_counter() - started)
                provider.sync_turn(f"Note {token}: the parcel for flat {n} goes to the side door at {n % 24}:00.",
                                   f"Noted parcel {token} for flat {n}.")
                acked[index] += 1
            except Exception as exc:  # noqa: BLE001 - counted, the load goes on
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
        write_cpu[index] = time.thread_time() - cpu

    def read() -> None:
        n = 0
        while time.monotonic() < deadline:
            if reads == "per-turn" and n >= sum(acked):
                time.sleep(0.002)
                continue
            provider = readers[n % len(readers)]
            started = time.perf_counter()
            try:
                provider.prefetch(QUESTIONS[n % len(QUESTIONS)])
                prefetch_s.append(time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            n += 1

    threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(writers)]
    if reads != "in-turn":
        threads.append(threading.Thread(target=read, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"turns": sum(acked), "errors": errors[:5], "error_count": len(errors),
                      "prefetch_s": prefetch_s, "cpu_s": time.process_time() - cpu_began,
                      "write_cpu_s": sum(write_cpu)}), flush=True)
    sys.stdin.readline()  # "stop": the indexer embeds meanwhile
    for provider in providers + readers:
        provider.session_id = ""  # no session flush: not what is measured
        provider.shutdown()
    return 0


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


def _listening(port: int) -> list[int]:
    """The pids of the processes listening on 127.0.0.1:`port` (/proc/net/tcp, then their fds)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # 0A: LISTEN
            inodes.add(f"socket:[{fields[9]}]")
    pids = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in inodes for fd in fd_dir.iterdir()):
                pids.append(int(fd_dir.parent.name))
        except OSError:
            continue
    return pids


def server_cpu(ports: list[int]) -> float:
    """CPU seconds so far of the servers listening on `ports` (PostgreSQL, Chroma): each
    listener with its children, live (utime + stime) and reaped (cutime + cstime: a backend whose
    connection closed), so a run's difference counts what the servers did for it alone."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(stat.parent.name)] = (int(fields[1]), sum(map(int, fields[11:15])), sum(map(int, fields[11:13])))
    for pid in {pid for port in ports for pid in _listening(port)}:
        total += stats.get(pid, (0, 0, 0))[1]  # the listener, and its children it reaped
        total += sum(own for parent, _, own in stats.values() if parent == pid)  # its live children
    return total / tick


def process_cpu(pids: list[int]) -> float:
    """CPU seconds so far of these processes, all their threads."""
    total = 0
    for pid in pids:
        try:
            total += sum(map(int, Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13]))
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _count(database_url: str, statement: str) -> int:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(statement).scalar_one()
    finally:
        engine.dispose()


def run(workers: int, users: int, seconds: float, drain: float, pg_url: str, chroma_url: str,
        code: str | None, writers: int = WRITERS, embedder: str = "onnx", rate: float = 0.0,
        reads: str = "flat") -> dict:
    with server_databases(pg_url, chroma_url, prefix="scale") as (database_url, chroma), \
            tempfile.TemporaryDirectory(prefix="cmms-scale-") as tmp:
        env = dict(os.environ, CMMS_DATABASE_URL=database_url, CMMS_CHROMA_URL=chroma, CMMS_EMBEDDER=embedder,
                   CMMS_MIRROR="off", HF_HUB_OFFLINE="1")
        if code:
            env["PYTHONPATH"] = code
        procs, ports = [], [make_url(database_url).port or 5432, urlsplit(chroma).port or 8000]
        for w in range(workers):
            home = Path(tmp) / f"home{w}"
            home.mkdir()
            mine = [u for u in range(users) if u % workers == w]
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--worker", str(home), "--seconds", str(seconds), "--writers", str(writers),
                 "--users", ",".join(map(str, mine)), "--pace", str(workers * writers / rate if rate else 0), "--reads", reads],
                env={**env, "HERMES_HOME": str(home)}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        try:
            code_at = {json.loads(p.stdout.readline())["ready"] for p in procs}
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
            started, cpu_before, servers_before = time.monotonic(), machine_cpu(), server_cpu(ports)
            workers_before = process_cpu([p.pid for p in procs])
            results = [json.loads(p.stdout.readline()) for p in procs]
            load_s = time.monotonic() - started
            busy, total = (after - before for after, before in zip(machine_cpu(), cpu_before))
            servers = server_cpu(ports) - servers_before
            memories = _count(database_url, "SELECT count(*) FROM memories")
            queued = _count(database_url, "SELECT count(*) FROM outbox")
            drained_at, left = time.monotonic(), queued
            while left and embedder != "none" and time.monotonic() - drained_at < drain:
                time.sleep(0.5)
                left = _count(database_url, "SELECT count(*) FROM outbox")
            drain_s = time.monotonic() - drained_at
            whole = process_cpu([p.pid for p in procs]) - workers_before + server_cpu(ports) - servers_before
        finally:
            for p in procs:
                try:
                    p.stdin.write("stop\n")
                    p.stdin.close()
                except OSError:
                    pass
            for p in procs:
                p.wait(120)
    turns = sum(r["turns"] for r in results)
    prefetch = [s for r in results for s in r["prefetch_s"]]
    return {"workers": workers, "code": sorted(code_at), "turns": turns, "load_s": round(load_s, 1),
            "turns_per_s": round(turns / load_s, 1), "memories": memories,
            "embedded_during_load_per_s": round((memories - queued) / load_s, 1),
            "drained": queued - left, "left": left, "drain_s": round(drain_s, 1),
            "vectors_per_s": round((queued - left) / drain_s, 1) if drain_s > 0.5 else None,
            "prefetch_p50_ms": round(percentile(prefetch, 50) * 1000, 1),
            "prefetch_p95_ms": round(percentile(prefetch, 95) * 1000, 1), "prefetches": len(prefetch),
            "cpu_ms_per_turn": {"writer_threads": round(1000 * sum(r["write_cpu_s"] for r in results) / max(turns, 1), 2),
                                "workers": round(1000 * sum(r["cpu_s"] for r in results) / max(turns, 1), 2),
                                "servers": round(1000 * servers / max(turns, 1), 2),
                                "ours": round(1000 * (servers + sum(r["cpu_s"] for r in results)) / max(turns, 1), 2),
                                "machine": round(1000 * busy / max(turns, 1), 2),
                                "ours_drained": round(1000 * whole / max(turns, 1), 2) if not left else None},
            "cpu_busy": round(busy / total, 2) if total else None,
            "errors": sum(r["error_count"] for r in results), "error_sample": [e for r in results for e in r["errors"]][:3]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--drain", type=float, default=60, help="at most this long for the drain phase")
    parser.add_argument("--users", default="64", help="users in all (or, with --worker, this worker's)")
    parser.add_argument("--pg-url", default=os.environ.get("CMMS_TEST_PG_URL"))
    parser.add_argument("--chroma-url", default=os.environ.get("CMMS_TEST_CHROMA_URL"))
    parser.add_argument("--writers", type=int, default=WRITERS, help="sync_turn threads per worker")
    parser.add_argument("--embedder", default="onnx", help="none: no vectors (the write path alone)")
    parser.add_argument("--code", help="import hermes_cmms from this directory (a checkout to compare)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="turns/s offered by all workers together (default: each writer flat out)")
    parser.add_argument("--json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pace", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--reads", choices=("flat", "per-turn", "in-turn"), default="flat",
                        help="a prefetch thread flat out, or making one prefetch per acknowledged turn at most; "
                             "in-turn: each writer recalls before each turn it writes, as Hermes does")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, [int(u) for u in args.users.split(",") if u], args.seconds, args.writers, args.pace,
                      args.reads)
    try:
        os.nice(-15)  # the workers inherit it
        niced = -15
    except OSError:
        niced = os.nice(0)
    before = os.getloadavg()
    rows = [run(int(n), int(args.users), args.seconds, args.drain, args.pg_url, args.chroma_url, args.code,
                args.writers, args.embedder, args.rate, args.reads) for n in args.workers.split(",")]
    summary = {"nice": niced, "cpus": os.cpu_count(), "loadavg_before": before, "loadavg_after": os.getloadavg(),
               "seconds": args.seconds, "users": int(args.users), "writers_per_worker": args.writers, "embedder": args.embedder,
               "rate": args.rate or "flat out", "reads": args.reads, "runs": rows}
    for row in rows:
        print(json.dumps({k: v for k, v in row.items() if k != "error_sample"}), flush=True)
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
