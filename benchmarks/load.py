"""Load: 8 writers and 8 readers for a fixed time through both doors of one store, then checked in SQL.

Half the workers use the Hermes door: a worker process holds one `CmmsMemoryProvider` per
thread (each a gateway user with a scope of its own, as Hermes sets them up), two writers
calling `sync_turn`, two calling the `cmms_remember` tool through `handle_tool_call`, and four
readers alternating `prefetch` and the `cmms_recall` tool. The other half use the MCP door:
`hermes-cmms mcp --transport http` runs as a subprocess on 127.0.0.1 and this process opens
one real MCP client session (streamable HTTP) per worker: four writers calling `store_memory`,
four readers calling `recall_memory`. Both processes share the one store (SQLite file, or
PostgreSQL). Scopes are `user:load:0..3`; each scope has a writer and a reader at each door.

Every write carries a unique token. Afterwards the store is read in SQL, and the summary says
how many writes were attempted, acknowledged and found, how many acknowledged writes are
missing (`lost`), how many tokens are stored more than once (`duplicates`) or in another scope
(`misplaced`), and how many read results came from a scope other than the reader's
(`foreign_reads`), with p50/p95 latencies per door and operation and the errors by message.
Keyword-only (CMMS_EMBEDDER=none) unless `--embedder` says otherwise.

    python benchmarks/load.py --seconds 60 [--backend embedded|server] [--json OUT]

`--backend server` creates a fresh PostgreSQL database (and names a Chroma database) on the
servers given by `--pg-url` / `--chroma-url` (default: $CMMS_TEST_PG_URL / $CMMS_TEST_CHROMA_URL),
and drops them afterwards. `tests/quality/test_load.py` runs `run_load` for a shorter time.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import free_port, server_databases  # shared with the tests

from hermes_cmms.common.ids import stored_id  # the doors show ids dashed, SQL keeps hex

SCOPES = 4
WRITERS_PER_DOOR = 4
READERS_PER_DOOR = 4
CALL_TIMEOUT_S = 60.0  # one MCP call; a hung bridge counts as an error, not a hang
TOKEN = re.compile(r"\btok[0-9a-f]{16}\b")

COLOURS = ["red", "blue", "green", "yellow", "black", "white", "orange", "purple"]
ITEMS = ["parcel", "crate", "envelope", "box", "suitcase", "basket", "bicycle", "guitar"]
PLACES = ["gate", "garage", "porch", "office", "kitchen", "garden", "cellar", "lobby"]


def scope_of(index: int) -> str:
    return f"user:load:{index % SCOPES}"


def new_token() -> str:
    return "tok" + uuid.uuid4().hex[:16]


def note(token: str, rng: random.Random) -> str:
    return (f"Delivery {token}: the courier left a {rng.choice(COLOURS)} {rng.choice(ITEMS)} "
            f"at the {rng.choice(PLACES)}.")


def question(rng: random.Random) -> str:
    return f"Where did the courier leave the {rng.choice(COLOURS)} {rng.choice(ITEMS)}?"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def latency_ms(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50": round(percentile(ms, 50), 2), "p95": round(percentile(ms, 95), 2),
            "max": round(max(ms), 2)}


class Log:
    """What one door's workers did: every write attempt, the reads' results and the latencies."""

    def __init__(self, door: str):
        self.door = door
        self.writes: list[list] = []  # [token, scope, acked, error, op]
        self.reads: dict[str, list] = defaultdict(list)  # scope -> [[ids], [tokens]] per read
        self.reads_done = 0
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter = Counter()
        self._lock = threading.Lock()

    def write(self, op: str, token: str, scope: str, seconds: float, error: Optional[str]) -> None:
        with self._lock:
            self.writes.append([token, scope, error is None, error, op])
            self.times[op].append(seconds)
            if error is not None:
                self.errors[f"{self.door}.{op}: {error[:300]}"] += 1

    def read(self, op: str, scope: str, seconds: float, ids: list[str], text: str,
             error: Optional[str]) -> None:
        with self._lock:
            self.reads_done += 1
            self.times[op].append(seconds)
            if error is not None:
                self.errors[f"{self.door}.{op}: {error[:300]}"] += 1
                return
            self.reads[scope].append([ids, sorted(set(TOKEN.findall(text)))])

    def as_dict(self) -> dict:
        return {"door": self.door, "writes": self.writes, "reads": dict(self.reads), "reads_done": self.reads_done,
                "times": dict(self.times), "errors": dict(self.errors)}


# -- the Hermes door: a worker process -----------------------------------------------------

def provider_worker(home: str, seconds: float, out: str, seed: int) -> int:
    """Run the provider's writers and readers (threads of this process) for `seconds` after
    the parent says `go` on stdin; write the log to `out`."""
    from hermes_cmms.provider import CmmsMemoryProvider

    log = Log("provider")
    providers = []
    for index in range(WRITERS_PER_DOOR + READERS_PER_DOOR):
        provider = CmmsMemoryProvider()
        provider.initialize(f"load-{index}", hermes_home=home, platform="load", user_id=str(index % SCOPES),
                            agent_context="primary")
        providers.append(provider)
    providers[0].service.indexer.ready.wait(120)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 2
    deadline = time.monotonic() + seconds

    def writer(index: int, provider) -> None:
        rng, op = random.Random(seed * 100 + index), ("sync_turn", "cmms_remember")[index % 2]
        seq = 0
        while time.monotonic() < deadline:
            seq += 1
            token, error = new_token(), None
            started = time.perf_counter()
            try:
                if op == "sync_turn":
                    provider.sync_turn(note(token, rng), f"Noted delivery number {seq} for writer {index}.")
                else:
                    result = json.loads(provider.handle_tool_call("cmms_remember", {"content": note(token, rng)}))
                    error = result.get("error")
            except Exception as exc:  # noqa: BLE001 - counted, the load goes on
                error = f"{type(exc).__name__}: {exc}"
            log.write(op, token, provider.scope, time.perf_counter() - started, error)

    def reader(index: int, provider) -> None:
        rng = random.Random(seed * 100 + 50 + index)
        calls = 0
        while time.monotonic() < deadline:
            calls += 1
            query, op, ids, text, error = question(rng), ("prefetch", "cmms_recall")[calls % 2], [], "", None
            started = time.perf_counter()
            try:
                if op == "prefetch":
                    text = provider.prefetch(query)
                else:
                    result = json.loads(provider.handle_tool_call("cmms_recall", {"query": query, "limit": 8}))
                    error = result.get("error")
                    ids = [stored_id(r["id"]) for r in result.get("results", [])]
                    text = "\n".join(r["content"] for r in result.get("results", []))
            except Exception as exc:  # noqa: BLE001
                error = f"{type(exc).__name__}: {exc}"
            log.read(op, provider.scope, time.perf_counter() - started, ids, text, error)

    threads = [threading.Thread(target=writer if i < WRITERS_PER_DOOR else reader, args=(i, p), daemon=True)
               for i, p in enumerate(providers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for provider in providers:
        provider.session_id = ""  # no session flush: the load is what is measured, not learning
        provider.shutdown()
    Path(out).write_text(json.dumps(log.as_dict()), encoding="utf-8")
    return 0


# -- the MCP door: client sessions in this process -----------------------------------------

def _get(obj, *names):
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(names[0])


@asynccontextmanager
async def mcp_session(url: str):
    """A real MCP client session over streamable HTTP (mcp 2.x or 1.x)."""
    from mcp import ClientSession
    import importlib.util

    try:
        if importlib.util.find_spec("httpx2") is None:  # mcp 2.x ships its own httpx
            raise ImportError("mcp 1.x")
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(url)
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client

        transport = streamablehttp_client(url)
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session


async def _call(session, name: str, args: dict) -> tuple[Optional[dict], Optional[str]]:
    """(result, None) or (None, error message) of one tool call."""
    try:
        raw = await asyncio.wait_for(session.call_tool(name, args), CALL_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - a transport failure is an error like any other
        return None, f"{type(exc).__name__}: {exc}"
    text = "\n".join(getattr(c, "text", "") for c in raw.content)
    if _get(raw, "is_error", "isError"):
        return None, text
    data = _get(raw, "structured_content", "structuredContent")
    return (data if data is not None else json.loads(text)), None


async def mcp_workers(url: str, seconds: float, seed: int, go) -> Log:
    """Open one session per worker; once all are open, call `go()` and run for `seconds`."""
    log = Log("mcp")
    started = asyncio.Event()
    deadline = [0.0]

    async def writer(index: int, session) -> None:
        rng, scope, seq = random.Random(seed * 100 + 200 + index), scope_of(index), 0
        while time.monotonic() < deadline[0]:
            seq += 1
            token = new_token()
            t0 = time.perf_counter()
            _, error = await _call(session, "store_memory", {"content": note(token, rng), "scope": scope,
                                                             "actor": f"load-{index}"})
            log.write("store_memory", token, scope, time.perf_counter() - t0, error)

    async def reader(index: int, session) -> None:
        rng, scope = random.Random(seed * 100 + 250 + index), scope_of(index)
        while time.monotonic() < deadline[0]:
            t0 = time.perf_counter()
            data, error = await _call(session, "recall_memory", {"query": question(rng), "scope": scope, "k": 8})
            results = (data or {}).get("results", [])
            log.read("recall_memory", scope, time.perf_counter() - t0, [stored_id(r["id"]) for r in results],
                     "\n".join(r["content"] for r in results), error)

    async def worker(index: int) -> None:
        async with mcp_session(url) as session:
            ready.append(index)
            await started.wait()
            await (writer(index, session) if index < WRITERS_PER_DOOR else reader(index - WRITERS_PER_DOOR, session))

    ready: list[int] = []
    tasks = [asyncio.create_task(worker(i)) for i in range(WRITERS_PER_DOOR + READERS_PER_DOOR)]
    while len(ready) < len(tasks):
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            raise failed[0].exception()
        await asyncio.sleep(0.05)
    go()
    deadline[0] = time.monotonic() + seconds
    started.set()
    await asyncio.gather(*tasks)
    return log


# -- running -------------------------------------------------------------------------------

def start_bridge(home: Path, env: dict, port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "hermes_cmms.cli", "mcp", "--hermes-home", str(home),
                                "--create", "--transport", "http", "--port", str(port)],  # (a fresh home)
                               env=env, stdout=subprocess.DEVNULL, stderr=open(home / "bridge.log", "w"))  # noqa: SIM115 - the child keeps it
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the MCP bridge exited: " + (home / "bridge.log").read_text()[-2000:])
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the MCP bridge did not start listening")


def run_load(home: Path, seconds: float, env: Optional[dict] = None, seed: int = 7) -> dict:
    """Run the load on the store that `env` (default: this process's environment) names for
    `home`; return the summary."""
    env = {**(env if env is not None else os.environ), "HERMES_HOME": str(home)}
    env.setdefault("CMMS_EMBEDDER", "none")
    database_url = env.get("CMMS_DATABASE_URL") or f"sqlite:///{home / 'cmms' / 'cmms.db'}"
    home.mkdir(parents=True, exist_ok=True)
    port, out = free_port(), home / "provider-load.json"
    bridge = start_bridge(home, env, port)
    worker = None
    try:
        worker = subprocess.Popen([sys.executable, __file__, "--worker", "--home", str(home), "--seconds",
                                   str(seconds), "--out", str(out), "--seed", str(seed)],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if worker.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the provider worker did not start (exit {worker.wait(30)})")

        def go() -> None:
            worker.stdin.write("go\n")
            worker.stdin.flush()

        t0 = time.monotonic()
        mcp_log = asyncio.run(mcp_workers(f"http://127.0.0.1:{port}/mcp", seconds, seed, go)).as_dict()
        code = worker.wait(seconds + 300)
        wall = time.monotonic() - t0
        if code != 0:
            raise RuntimeError(f"the provider worker failed (exit {code})")
        provider_log = json.loads(out.read_text(encoding="utf-8"))
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait(30)
        bridge.terminate()
        try:
            bridge.wait(30)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait(30)
    summary = verify(database_url, [provider_log, mcp_log])
    summary.update(seconds=seconds, wall_s=round(wall, 1), backend=backend_name(database_url),
                   embedder=env["CMMS_EMBEDDER"], workers={"writers": 2 * WRITERS_PER_DOOR,
                                                           "readers": 2 * READERS_PER_DOOR})
    return summary


def backend_name(database_url: str) -> str:
    return "server (PostgreSQL)" if database_url.startswith("postgresql") else "embedded (SQLite)"


def verify(database_url: str, logs: list[dict]) -> dict:
    """Read the store in SQL and hold the workers' logs against it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    writes = [w for log in logs for w in log["writes"]]
    writer_scope = {token: scope for token, scope, *_ in writes}
    acked = {token for token, _, ok, *_ in writes if ok}
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, scope, kind, source, content FROM memories "
                                     "WHERE scope LIKE 'user:load:%'")).all()
            returned = {i for log in logs for reads in log["reads"].values() for ids, _ in reads for i in ids}
            scope_by_id = {row.id: row.scope for row in rows}
            missing_ids = [i for i in returned if i not in scope_by_id]
            for start in range(0, len(missing_ids), 500):  # results outside user:load:* (should be none)
                chunk = missing_ids[start:start + 500]
                marks = ", ".join(f":i{n}" for n in range(len(chunk)))
                found = conn.execute(text(f"SELECT id, scope FROM memories WHERE id IN ({marks})"),
                                     {f"i{n}": i for n, i in enumerate(chunk)}).all()
                scope_by_id.update({row.id: row.scope for row in found})
    finally:
        engine.dispose()
    originals = [row for row in rows if row.kind in ("message", "note") and not row.source.startswith("consol")]
    stored: dict[str, list[str]] = defaultdict(list)
    for row in originals:
        for token in set(TOKEN.findall(row.content)):
            stored[token].append(row.scope)
    foreign = Counter()
    for log in logs:
        for scope, results in log["reads"].items():
            for ids, tokens in results:
                foreign["ids"] += sum(1 for i in ids if scope_by_id.get(i, "?") != scope)
                foreign["tokens"] += sum(1 for t in tokens if writer_scope.get(t, scope) != scope)
    times = {f"{log['door']}.{op}": latency_ms(values) for log in logs for op, values in log["times"].items()}
    per_door = {}
    for log in logs:
        ops = log["times"]
        write_ops = {w[4] for w in log["writes"]}
        per_door[log["door"]] = {
            "write": latency_ms([s for op in write_ops for s in ops.get(op, [])]),
            "read": latency_ms([s for op in ops if op not in write_ops for s in ops[op]])}
    lost = sorted(t for t in acked if t not in stored)
    return {
        "attempted": len(writes),
        "acknowledged": len(acked),
        "found": sum(1 for t in acked if t in stored),
        "lost": len(lost),
        "lost_tokens": lost[:20],
        "duplicates": sum(1 for scopes in stored.values() if len(scopes) > 1),
        "misplaced": sum(1 for t, scopes in stored.items() if any(s != writer_scope.get(t, s) for s in scopes)),
        "unacknowledged_but_stored": sum(1 for t, *_ in writes if t not in acked and t in stored),
        "unknown_tokens_stored": sum(1 for t in stored if t not in writer_scope),
        "reads": sum(log["reads_done"] for log in logs),
        "nonempty_reads": sum(1 for log in logs for results in log["reads"].values() for ids, toks in results
                              if ids or toks),
        "foreign_reads": foreign["ids"] + foreign["tokens"],
        "per_door": per_door,
        "latency_ms": times,
        "errors": dict(Counter({k: v for log in logs for k, v in log["errors"].items()})),
    }


# -- server databases for --backend server ---------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--backend", choices=["embedded", "server"], default="embedded")
    parser.add_argument("--pg-url", default=os.environ.get("CMMS_TEST_PG_URL",
                                                           "postgresql+psycopg://postgres@127.0.0.1:55432/postgres"))
    parser.add_argument("--chroma-url", default=os.environ.get("CMMS_TEST_CHROMA_URL", "http://127.0.0.1:58000"))
    parser.add_argument("--embedder", default="none", help="CMMS_EMBEDDER for both processes (default none)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return provider_worker(args.home, args.seconds, args.out, args.seed)
    load_start = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="cmms-load-"))
    env = {k: v for k, v in os.environ.items() if k not in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL")}
    env["CMMS_EMBEDDER"] = args.embedder
    try:
        if args.backend == "server":
            with server_databases(args.pg_url, args.chroma_url, prefix="load") as (database_url, chroma_url):
                summary = run_load(home / "home", args.seconds,
                                   {**env, "CMMS_DATABASE_URL": database_url, "CMMS_CHROMA_URL": chroma_url}, args.seed)
        else:
            summary = run_load(home / "home", args.seconds, env, args.seed)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    summary["machine"] = {"cpus": len(os.sched_getaffinity(0)), "load_avg_start": [round(x, 2) for x in load_start],
                          "load_avg_end": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    ok = not (summary["lost"] or summary["duplicates"] or summary["misplaced"] or summary["foreign_reads"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
