"""Long maintenance against a live writer: `forget --all`, an import, decay and consolidation of
a large scope while another process does `sync_turn` in another scope every ~20 ms.

One store (a fresh HERMES_HOME; `--backend server`: a fresh PostgreSQL database and Chroma
database) is bulk-filled with one scope of `--memories` conversation memories (rows as
`Store.add` writes them, 5,000 per transaction: messages in sessions of 20 turns, one 'retain'
audit event each, 2% of them facts with their graph, 500 older forget snapshots). Then, each
with the writer running:
- forget: `forget_all` of that scope (after it has been exported to a file);
- import: `import_file` of that export back into the store;
- decay: `decay` 400 days later, so every memory changes confidence and state;
- consolidate (`--consolidate N`, needs the packaged MiniLM): N episodic memories with bulk
  vectors (a pool of real embeddings plus noise, see bulk.py), one `consolidate` run.

The writer is a real `CmmsMemoryProvider` (a gateway user of its own) in a subprocess. For each
operation the summary gives its wall time, the longest and total time its write transactions
held the writer lock (the store's always-on `holds` gauge, in this process) and how many there
were, and the writer's `sync_turn` latency p50/p99/max and failures during it (must be 0).
Keyword-only (CMMS_EMBEDDER=none) except the consolidation part. At the end, on SQLite, FTS5's
own integrity check of the keyword index (`keyword_index`: "ok" or the error; else exit 1).

    python benchmarks/maintenance.py --memories 200000 [--backend server] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from chat import Chat
from servers import server_databases

SCOPE = "user:bench:maintenance"
WRITER_SCOPE_USER = "bystander"
CHUNK = 5000
SESSION_TURNS = 20
FACT_EVERY = 50  # one memory in 50 is a fact with its graph
SNAPSHOTS = 500  # earlier single forgets of the scope, their snapshots kept
WRITE_EVERY_S = 0.02


def fill(service, scope: str, target: int, seed: int = 7) -> float:
    """Bulk-fill `scope` with `target` memories; return the seconds it took."""
    from sqlalchemy import insert

    from hermes_cmms.store import graph_rows
    from hermes_cmms.store.models import AuditEvent, ConversationSession, Fact, Memory
    from hermes_cmms.store.store import NewMemory, Store, _fact_keys, _tail

    chat, store, started, count, turn = Chat(seed), service.store, time.perf_counter(), 0, 0
    while count < target:
        rows, sessions, facts, previous, now = [], [], [], None, time.time()
        while len(rows) < min(CHUNK, target - count):
            session, number = f"s{turn // SESSION_TURNS:06d}", turn % SESSION_TURNS + 1
            if number == 1:
                sessions.append({"scope": scope, "session_id": session, "started_at": now,
                                 "last_turn": SESSION_TURNS, "flushed_at": now})
                previous = None
            for role, content in zip(("user", "assistant"), chat.turn()):
                fact = (f"person {turn}", "likes", f"thing {turn % 997}") if len(rows) % FACT_EVERY == 0 else None
                item = NewMemory(scope, " ".join(fact) if fact else content, role=role, session_id=session,
                                 source="bench:bulk", kind="fact" if fact else "message",
                                 tier="semantic" if fact else "episodic", fact=fact)
                row = Store._row(item, now)
                row.update(turn=number, context=_tail(previous))
                rows.append(row)
                if fact:
                    facts.append({"memory_id": row["id"], "scope": scope, "subject": fact[0],
                                  "predicate": fact[1], "object": fact[2], **_fact_keys(fact)})
                previous = content
            turn += 1
        events = [{"at": now, "action": "retain", "actor": "bench:bulk", "scope": scope, "memory_id": row["id"],
                   "detail": "{}", "snapshot": None} for row in rows]
        if count == 0:
            events += [{"at": now, "action": "forget", "actor": "bench", "scope": scope, "memory_id": f"old{i}",
                        "detail": "{}", "snapshot": json.dumps({"content": f"an old note {i}"})}
                       for i in range(SNAPSHOTS)]
        with store.write() as conn:
            if sessions:
                conn.execute(insert(ConversationSession), sessions)
            conn.execute(insert(Memory), rows)
            conn.execute(insert(AuditEvent), events)
            if facts:
                conn.execute(insert(Fact), facts)
                graph_rows.add_facts(conn, facts, now)
        count += len(rows)
    return time.perf_counter() - started


# -- the writer: a gateway user's provider in a subprocess ------------------------------------

def writer(home: str, out: str) -> int:
    """sync_turn every WRITE_EVERY_S until a line on stdin says stop; latencies to `out`."""
    from hermes_cmms.provider import CmmsMemoryProvider

    provider = CmmsMemoryProvider()
    provider.initialize("maintenance-writer", hermes_home=home, platform="bench", user_id=WRITER_SCOPE_USER,
                        agent_context="primary")
    provider.sync_turn("warm up", "ok")
    stop, log = threading.Event(), []
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    turn = 0
    while not stop.is_set():
        turn += 1
        started, error = time.time(), None
        try:
            provider.sync_turn(f"Bystander note number {turn}: the lamp is on.", f"Noted {turn}.",
                               session_id=f"bystander-{turn // SESSION_TURNS}")  # a conversation of 20 turns
        except Exception as exc:  # noqa: BLE001 - counted: a failure is what this measures
            error = f"{type(exc).__name__}: {str(exc)[:200]}"
        log.append((started, time.time() - started, error))
        time.sleep(max(0.0, WRITE_EVERY_S - (time.time() - started)))
    provider.session_id = ""
    provider.shutdown()
    Path(out).write_text(json.dumps(log), encoding="utf-8")
    return 0


class Writer:
    def __init__(self, home: Path, env: dict):
        self.out = home / f"writer-{time.monotonic_ns()}.json"
        self.process = subprocess.Popen([sys.executable, __file__, "--writer", "--home", str(home), "--out",
                                         str(self.out)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the writer did not start (exit {self.process.wait(30)})")

    def stop(self) -> list:
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        if self.process.wait(120) != 0:
            raise RuntimeError(f"the writer failed (exit {self.process.returncode})")
        return json.loads(self.out.read_text(encoding="utf-8"))


def _ms(values: list[float]) -> dict:
    values = sorted(values)
    if not values:
        return {}
    at = lambda p: round(1000 * values[min(len(values) - 1, int(len(values) * p))], 1)  # noqa: E731
    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": round(1000 * values[-1], 1)}


def _longest_from(holds) -> list:
    """Make `holds` remember where its longest transaction came from: [(ms, call site)]."""
    import traceback

    longest, observe = [(0.0, "")], holds.observe

    def observed(seconds: float) -> None:
        if seconds > longest[0][0]:
            frames = [f"{f.name}:{f.lineno}" for f in traceback.extract_stack()[-6:-2]]
            longest[0] = (seconds, " < ".join(reversed(frames)))
        observe(seconds)
    holds.observe = observed
    return longest


def measured(service, home: Path, env: dict, name: str, run: Callable[[], object]) -> dict:
    """Run one maintenance operation while the writer writes; its figures."""
    writer_process = Writer(home, env)
    longest = _longest_from(service.store.holds)
    time.sleep(0.5)  # the writer's own pace first
    service.store.holds.reset()
    started = time.time()
    result = run()
    ended = time.time()
    holds = service.store.holds.reset()
    time.sleep(0.3)
    log = [entry for entry in writer_process.stop() if started <= entry[0] <= ended]
    errors = [error for _, _, error in log if error]
    figures = {"operation": name, "wall_s": round(ended - started, 2), "result": result,
               "write_transactions": holds["transactions"], "longest_hold_ms": round(1000 * holds["longest_s"], 1),
               "longest_at": longest[0][1], "held_s": round(holds["total_s"], 2), "sync_turns": len(log), "failures": len(errors),
               "errors": sorted(set(errors))[:3], **_ms([seconds for _, seconds, error in log if not error])}
    print(json.dumps(figures), flush=True)
    return figures


def run(home: Path, env: dict, memories: int, consolidate: int, parts: str) -> dict:
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.ops.transfer import export_scope, import_file

    os.environ.update(env)
    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    summary = {"memories": memories, "fill_s": round(fill(service, SCOPE, memories), 1), "operations": []}
    print(f"filled {memories:,} memories in {summary['fill_s']} s", file=sys.stderr, flush=True)
    export = home / "scope.jsonl"
    if "import" in parts:
        with export.open("w", encoding="utf-8") as handle:
            for record in export_scope(service, SCOPE):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    operations = summary["operations"]
    operations.append(measured(service, home, env, "forget --all",
                               lambda: service.forget_all(SCOPE, "bench", progress=_progress("forget"))))
    if "import" in parts:
        operations.append(measured(service, home, env, "import", lambda: _added(import_file(service, export))))
    if "decay" in parts:
        operations.append(measured(service, home, env, "decay", lambda: service.upkeep.decay(time.time() + 400 * 86400)))
    summary["keyword_index"] = keyword_index_check(service)
    service.close()
    if consolidate:
        operations.append(consolidation(home, env, consolidate))
    return summary


def keyword_index_check(service) -> str:
    """'ok', or why FTS5's own integrity check of the keyword index failed (SQLite only): a
    writer's failures are counted only while an operation runs, a broken index outlives it."""
    if service.store.engine.dialect.name != "sqlite":
        return "not checked (PostgreSQL)"
    try:
        with service.store.write() as conn:
            conn.exec_driver_sql("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        return "ok"
    except Exception as exc:  # noqa: BLE001 - reported: this is what the check is for
        return str(getattr(exc, "orig", exc))


def _progress(name: str) -> Callable[[int], None]:
    """Print how far an operation is, every 10 s (to stderr)."""
    started = last = time.monotonic()

    def report(done: int) -> None:
        nonlocal last
        if time.monotonic() - last >= 10:
            last = time.monotonic()
            print(f"{name}: {done:,} after {last - started:.0f} s", file=sys.stderr, flush=True)
    return report


def _added(report: dict) -> dict:
    return {kind: counts["added"] for kind, counts in report.items() if isinstance(counts, dict)}


def consolidation(home: Path, env: dict, count: int) -> dict:
    """`count` episodic memories with bulk vectors in a scope of their own, one consolidate run."""
    from bulk import bulk_fill
    from hermes_cmms import MemoryService, Settings

    service = MemoryService(Settings.load(home, embedder="auto"), scheduler=False)
    try:
        service.indexer.ready.wait(300)
        scope = "user:bench:consolidate"
        bulk_fill(service, scope, count, Chat(11), pool=512)
        return measured(service, home, env, "consolidate",
                        lambda: {k: v for k, v in service.consolidate(scope, wait=300).as_dict().items()
                                 if k in ("examined", "folded", "clusters", "consolidated")})
    finally:
        service.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--parts", default="import,decay", help="after the forget: import, decay (default both)")
    parser.add_argument("--consolidate", type=int, default=0, help="memories for the consolidation part (0: skip)")
    parser.add_argument("--backend", choices=["embedded", "server"], default="embedded")
    parser.add_argument("--pg-url", default=os.environ.get("CMMS_TEST_PG_URL",
                                                           "postgresql+psycopg://postgres@127.0.0.1:55432/postgres"))
    parser.add_argument("--chroma-url", default=os.environ.get("CMMS_TEST_CHROMA_URL", "http://127.0.0.1:58000"))
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        return writer(args.home, args.out)
    home = Path(tempfile.mkdtemp(prefix="cmms-maintenance-"))
    env = {k: v for k, v in os.environ.items() if k not in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL")}
    env.update(HERMES_HOME=str(home), CMMS_EMBEDDER="none", CMMS_SCHEDULER="off", CMMS_MIRROR="off")
    try:
        if args.backend == "server":
            with server_databases(args.pg_url, args.chroma_url, prefix="maint") as (database_url, chroma_url):
                env.update(CMMS_DATABASE_URL=database_url, CMMS_CHROMA_URL=chroma_url)
                summary = run(home, env, args.memories, args.consolidate, args.parts)
        else:
            summary = run(home, env, args.memories, args.consolidate, args.parts)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    summary.update(backend=args.backend, machine={"cpus": len(os.sched_getaffinity(0)),
                                                  "load_avg_end": [round(x, 2) for x in os.getloadavg()]})
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    sound = summary["keyword_index"] in ("ok", "not checked (PostgreSQL)")
    return 0 if sound and all(op["failures"] == 0 for op in summary["operations"]) else 1


if __name__ == "__main__":
    sys.exit(main())
