"""Faults, on servers of the test's own (never the shared ones) and on loopback only:

a. the Chroma server SIGKILLed mid-ingest and restarted on the same --path: writes go on being
   acknowledged, recall answers from keywords meanwhile (quickly), and afterwards the outbox
   drains and the vector index shows no drift;
b. PostgreSQL restarted (`pg_ctl restart -m fast`) under writers and readers at both doors:
   each call succeeds or gets one clear sentence, nothing acknowledged is lost, and the same
   processes work on afterwards;
c. a provider process SIGKILLed at a random point of its ingest (both backends): every turn or
   note it acknowledged is stored exactly once, the store is sound, a new process writes on and
   the vectors catch up. (tests/engine/test_crash.py kills after a fixed run on stdout acks; this one
   kills anywhere, with the acks fsynced to a file, through both provider write paths.)

Each test prints one `FIGURES {...}` line (see docs/benchmarks.md, "Load and faults").
"""
from __future__ import annotations

import asyncio
import glob
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, server_only, subprocess_env
from db import sql
from servers import free_port
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

TOKEN = re.compile(r"\btok[0-9a-f]{16}\b")
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _token() -> str:
    import uuid

    return "tok" + uuid.uuid4().hex[:16]


def _figures(name: str, **figures) -> None:
    print(f"FIGURES {json.dumps({'test': name, **figures})}")


def _stored(where, scope_prefix: str) -> dict[str, int]:
    """How many original memories (turns and notes, not learned or consolidated copies) hold
    each token, in scopes starting with `scope_prefix`."""
    counts: dict[str, int] = {}
    for (content,) in sql(where, "SELECT content FROM memories WHERE scope LIKE ? AND kind IN ('message', 'note')",
                          scope_prefix + "%"):
        for token in set(TOKEN.findall(content)):
            counts[token] = counts.get(token, 0) + 1
    return counts


def _load_harness():
    spec = importlib.util.spec_from_file_location("cmms_load_benchmark", REPO / "benchmarks" / "load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- servers of our own ----------------------------------------------------------------------

def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in re.findall(r"\d+", p)])
    if not found:
        pytest.skip("PostgreSQL binaries not installed (.ci/services installs them)")
    return Path(found[-1])


class OwnPostgres:
    """A throwaway PostgreSQL cluster on a free port (as .ci/services starts one)."""

    def __init__(self):
        self.bin = _pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="cmms-faults-pg-"))  # not under pytest's 0700 tmp
        self.dir.chmod(0o755)
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.port = free_port()
        self.log = self.dir / "pg.log"

    def _pg_ctl(self, *args: str) -> float:
        started = time.monotonic()
        # stdout to /dev/null: the server inherits it, and a pipe would never reach EOF
        subprocess.run(self._as_pg(str(self.bin / "pg_ctl"), "-D", str(self.dir / "pg"), "-l", str(self.log),
                                   "-w", *args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120)
        return time.monotonic() - started

    @staticmethod
    def _as_pg(*command: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else list(command)

    def start(self) -> None:
        subprocess.run(self._as_pg(str(self.bin / "initdb"), "-D", str(self.dir / "pg"), "-U", "postgres",
                                   "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        self._pg_ctl("-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=on", "start")

    def restart(self) -> float:
        return self._pg_ctl("-m", "fast", "restart")

    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self._pg_ctl("-m", "immediate", "stop")
        except Exception:  # noqa: BLE001 - already down
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class OwnChroma:
    """`chroma run` on a free port over a given --path, killable and restartable."""

    def __init__(self, path: Path):
        self.path, self.port = path, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self) -> float:
        started = time.monotonic()
        log = open(self.path.parent / "chroma.log", "a")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen([str(Path(sys.executable).with_name("chroma")), "run", "--host", "127.0.0.1",
                                         "--port", str(self.port), "--path", str(self.path)],
                                        stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2).close()
                return time.monotonic() - started
            except OSError:
                assert self.process.poll() is None, (self.path.parent / "chroma.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "chroma did not start within 60 s"
                time.sleep(0.1)

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(20)


@pytest.fixture
def own_postgres():
    pg = OwnPostgres()
    try:
        pg.start()
        yield pg
    finally:
        pg.stop()


@pytest.fixture
def own_chroma(tmp_path):
    chroma = OwnChroma(tmp_path / "chroma")
    try:
        chroma.start()
        yield chroma
    finally:
        chroma.stop()


# -- a. the Chroma server dies mid-ingest ----------------------------------------------------

CHROMA_TURNS = 80  # 160 memories, each embedded by MiniLM
KILL_AFTER = 25


def _drift(service) -> int:
    return service.upkeep.audit("vector_drift")["counts"]["vector_drift"]


@server_only
def test_chroma_server_killed_mid_ingest_writes_go_on_recall_falls_back_then_catches_up(home, own_chroma,
                                                                                         monkeypatch):
    from hermes_cmms import MemoryService, Settings

    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    chroma = own_chroma
    monkeypatch.setenv("CMMS_CHROMA_URL", f"{chroma.url}/faults")
    scope = "user:faults:chroma"
    service = MemoryService(Settings.load(home), scheduler=False)  # the real MiniLM embedder
    try:
        assert service.upkeep.wait_vectors(180) and service.indexer.active, service.indexer.error
        key = service.remember(scope, "The spare key of the boathouse hangs behind the zeppelin poster.")
        assert service.upkeep.drain(60)
        acked, failed = [], []

        def ingest() -> None:
            for i in range(CHROMA_TURNS):
                token = _token()
                try:
                    service.retain_turn(scope, "chroma-fault", f"Entry {token}: parcel {i} reached the depot.",
                                        f"Logged parcel {i} at the depot.")
                    acked.append(token)
                except Exception as exc:  # noqa: BLE001 - asserted below
                    failed.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.05)

        writer = threading.Thread(target=ingest)
        writer.start()
        while len(acked) < KILL_AFTER and writer.is_alive():
            time.sleep(0.01)
        chroma.kill()
        killed_with = len(acked)
        recall_ms = []
        for _ in range(5):
            started = time.perf_counter()
            hits = ranked(service.engine, scope, "where is the spare key of the boathouse", limit=5)
            block = service.recall(scope, "Where does the boathouse spare key hang?")
            recall_ms.append((time.perf_counter() - started) * 1000)
            assert hits and hits[0].memory.id == key and hits[0].vector_rank is None
            assert "zeppelin poster" in block
            time.sleep(0.2)
        writer.join(120)
        assert not writer.is_alive()
        assert failed == [] and len(acked) == CHROMA_TURNS  # every write acknowledged, server down or not
        assert max(recall_ms) < 2500, recall_ms  # keyword fallback at once, not after HTTP timeouts
        pending_at_restart = service.store.counts()["outbox"]
        assert pending_at_restart > 0  # the index really fell behind while the server was away

        restart_s = chroma.start()  # same --path: the vectors written before the kill are there
        restarted = time.monotonic()
        deadline = restarted + 120
        while service.store.counts()["outbox"] or _drift(service):
            assert time.monotonic() < deadline, ("the index did not catch up within 120 s",
                                                 service.store.counts(), service.upkeep.audit("vector_drift"))
            time.sleep(0.5)
        catch_up_s = time.monotonic() - restarted
        stored = _stored(service, scope)
        assert all(stored.get(token) == 1 for token in acked) and len(stored) == len(acked)
        assert service.indexer.vectors.count() == 2 * CHROMA_TURNS + 1
        last = f"Entry {acked[-1]}: parcel {CHROMA_TURNS - 1} reached the depot."
        hits = ranked(service.engine, scope, last, limit=3)
        assert hits[0].memory.content == last and hits[0].vector_rank == 0  # vector recall is back
        _figures("chroma_killed", writes_attempted=CHROMA_TURNS, writes_acked=len(acked),
                 memories=2 * CHROMA_TURNS, acked_before_kill=killed_with, outbox_at_restart=pending_at_restart,
                 recall_ms_while_down={"max": round(max(recall_ms), 1),
                                       "median": round(sorted(recall_ms)[len(recall_ms) // 2], 1)},
                 chroma_restart_s=round(restart_s, 2), catch_up_s=round(catch_up_s, 1), drift_after=0)
    finally:
        service.close(drain_timeout=0.0)


# -- b. PostgreSQL restarts under load --------------------------------------------------------

PG_BEFORE_S, PG_AFTER_S = 2.0, 3.0


@server_only
def test_postgres_restart_mid_run_clear_errors_nothing_lost_and_recovers(home, own_postgres, monkeypatch):
    from hermes_cmms.common.errors import CmmsError
    from hermes_cmms.provider import CmmsMemoryProvider

    pg = own_postgres
    monkeypatch.setenv("CMMS_DATABASE_URL", pg.url())
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    harness = _load_harness()
    bridge = harness.start_bridge(home, {**os.environ}, port := free_port())
    providers = []
    outcomes: list[tuple] = []  # (door.op, finished at, ok, error type, message)
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def record(op: str, ok: bool, kind: str = "", message: str = "", token: str = "") -> None:
        with lock:
            outcomes.append((op, time.monotonic(), ok, kind, message))
            if ok and token:
                acked.append(token)

    def provider_writer(provider, op: str) -> None:
        while not stop.is_set():
            token = _token()
            try:
                if op == "sync_turn":
                    provider.sync_turn(f"Restart entry {token}: the tide was low.", f"Logged tide for {token[3:9]}.")
                    record("provider.sync_turn", True, token=token)
                else:
                    result = json.loads(provider.handle_tool_call("cmms_remember",
                                                                  {"content": f"Restart note {token}: tide low."}))
                    record("provider.cmms_remember", "error" not in result, "tool error",
                           result.get("error", ""), token)
            except CmmsError as exc:
                record(f"provider.{op}", False, type(exc).__name__, str(exc))
            except Exception as exc:  # noqa: BLE001 - the defect this test looks for
                record(f"provider.{op}", False, f"RAW {type(exc).__module__}.{type(exc).__name__}", str(exc))
            time.sleep(0.01)

    def provider_reader(provider) -> None:
        calls = 0
        while not stop.is_set():
            calls += 1
            try:
                if calls % 2:
                    provider.prefetch("when was the tide low")  # swallows failures by design: never raises
                    record("provider.prefetch", True)
                else:
                    result = json.loads(provider.handle_tool_call("cmms_recall", {"query": "tide low"}))
                    record("provider.cmms_recall", "error" not in result, "tool error", result.get("error", ""))
            except Exception as exc:  # noqa: BLE001
                record("provider.read", False, f"RAW {type(exc).__module__}.{type(exc).__name__}", str(exc))
            time.sleep(0.01)

    async def mcp_door() -> None:
        async with harness.mcp_session(f"http://127.0.0.1:{port}/mcp") as session:
            calls = 0
            while not stop.is_set():
                calls += 1
                token = _token()
                if calls % 2:
                    _, error = await harness._call(session, "store_memory", {
                        "content": f"Bridge entry {token}: the tide was high.", "scope": "user:faults:mcp"})
                    record("mcp.store_memory", error is None, "tool error", error or "", token)
                else:
                    _, error = await harness._call(session, "recall_memory",
                                                   {"query": "tide high", "scope": "user:faults:mcp"})
                    record("mcp.recall_memory", error is None, "tool error", error or "")
                await asyncio.sleep(0.01)

    try:
        for index in range(3):
            provider = CmmsMemoryProvider()
            provider.initialize(f"pg-{index}", hermes_home=str(home), platform="faults", user_id=str(index),
                                agent_context="primary")
            providers.append(provider)
        threads = [threading.Thread(target=provider_writer, args=(providers[0], "sync_turn")),
                   threading.Thread(target=provider_writer, args=(providers[1], "cmms_remember")),
                   threading.Thread(target=provider_reader, args=(providers[2],)),
                   threading.Thread(target=lambda: asyncio.run(mcp_door()))]
        for thread in threads:
            thread.start()
        time.sleep(PG_BEFORE_S)
        restart_began = time.monotonic()
        restart_s = pg.restart()
        restarted = time.monotonic()
        time.sleep(PG_AFTER_S)
        stop.set()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        stop.set()
        bridge.terminate()
        bridge.wait(30)
        for provider in providers:
            provider.session_id = ""
            provider.shutdown()

    raw = [o for o in outcomes if o[3].startswith("RAW")]
    assert raw == [], raw[:5]  # only CmmsError subclasses (or a tool's error result) reach a caller
    errors = [o for o in outcomes if not o[2]]
    for op, _, _, kind, message in errors:
        assert "\n" not in message and len(message) < 400, (op, message)  # one sentence, not a dump
        assert not any(word in message for word in ("OperationalError", "Traceback", "failed inside")), message
    ops = {o[0] for o in outcomes}
    assert ops == {"provider.sync_turn", "provider.cmms_remember", "provider.prefetch", "provider.cmms_recall",
                   "mcp.store_memory", "mcp.recall_memory"}
    for op in ops:  # each door works on after the restart, in the same processes
        after = [o for o in outcomes if o[0] == op and o[1] > restarted + 1.0]
        assert after and all(o[2] for o in after), (op, after[-3:])
    stored = _stored(pg.url(), "user:faults:")
    assert all(stored.get(token) == 1 for token in acked), [t for t in acked if stored.get(t) != 1][:5]
    assert all(count == 1 for count in stored.values())
    _figures("postgres_restart", calls=len(outcomes), writes_acked=len(acked), writes_failed=sum(
        1 for o in errors if o[0].split(".")[1] in ("sync_turn", "cmms_remember", "store_memory")),
             failed_calls=len(errors), stored=len(stored), lost=0, restart_s=round(restart_s, 2),
             failures_after_restart=sum(1 for o in errors if o[1] > restarted),
             error_window_s=round(max((o[1] for o in errors), default=restart_began) - restart_began, 2),
             errors=sorted({f"{o[0]}: {o[4][:200]}" for o in errors})[:6])


# -- c. SIGKILL of a provider process mid-ingest (both backends) ------------------------------

INGEST = textwrap.dedent("""
    import json, os, sys
    from hermes_cmms.provider import CmmsMemoryProvider

    home, acks, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    provider = CmmsMemoryProvider()
    provider.initialize("sigkill-" + sys.argv[4], hermes_home=home, platform="faults", user_id="kill",
                        agent_context="primary")
    provider.service.upkeep.wait_vectors(180)
    print("ready", provider.service.indexer.active, flush=True)
    with open(acks, "a", encoding="utf-8") as out:
        for i in range(count):
            token = "tok" + os.urandom(8).hex()
            if i % 2:
                result = json.loads(provider.handle_tool_call(
                    "cmms_remember", {"content": f"Courier note {token}: the van left at {i} past nine."}))
                if "error" in result:
                    raise SystemExit(result["error"])
            else:
                provider.sync_turn(f"Ingest entry {token}: box {i} went to shelf {i % 7}.", f"Shelved box {i}.")
            out.write(token + "\\n")  # acknowledged: on disk before the next write starts
            out.flush()
            os.fsync(out.fileno())
    provider.shutdown()
    print("done", flush=True)
""")


def _acks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [line for line in text.split("\n")[:-1] if line]  # a torn last line was never acknowledged


@pytest.mark.store
def test_sigkill_of_a_provider_mid_ingest_loses_no_acknowledged_write(home, tmp_path):
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.store.store import Store

    acks, rng = tmp_path / "acks.txt", random.Random()
    kill_at = rng.randint(15, 60)
    env = subprocess_env(home, **OFFLINE)
    child = subprocess.Popen([sys.executable, "-c", INGEST, str(home), str(acks), "1000", "1"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout.readline().split() == ["ready", "True"]  # indexing is live in the child
        deadline = time.monotonic() + 120
        while len(_acks(acks)) < kill_at:
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(rng.random() * 0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    before = _acks(acks)

    settings = Settings.load(home)
    store = Store(settings.database_url)  # no indexer: what the dead process left, as it left it
    try:
        assert store.integrity() == "ok"
        pending = store.counts()["outbox"]
    finally:
        store.close()
    stored = _stored(home, "user:faults:kill")
    assert all(stored.get(token) == 1 for token in before), [t for t in before if stored.get(t) != 1]
    assert len(stored) - len(before) in (0, 1)  # at most the write in flight, itself stored once
    stored_at_kill = len(stored)

    more = subprocess.run([sys.executable, "-c", INGEST, str(home), str(acks), "10", "2"], env=env,
                          capture_output=True, text=True, timeout=300)  # a new process writes on
    assert more.returncode == 0 and more.stdout.split()[-1] == "done", more.stderr[-2000:]
    after = _acks(acks)
    assert len(after) == len(before) + 10

    started = time.monotonic()
    service = MemoryService(settings, scheduler=False)
    try:
        assert service.upkeep.wait_vectors(180) and service.indexer.active, service.indexer.error
        deadline = started + 120  # on a server, the dead writer's indexer lease runs out first (30 s)
        while service.store.counts()["outbox"] or _drift(service):
            assert time.monotonic() < deadline, ("vectors did not catch up", service.store.counts())
            time.sleep(0.5)
        catch_up_s = time.monotonic() - started
        stored = _stored(service, "user:faults:kill")
        assert all(stored.get(token) == 1 for token in after) and service.store.integrity() == "ok"
        _figures("provider_sigkill", backend="server" if settings.database_url.startswith("postgresql")
                 else "embedded", acked_before_kill=len(before), stored_at_kill=stored_at_kill,
                 outbox_at_kill=pending, acked_total=len(after), lost=0, duplicates=0,
                 catch_up_s=round(catch_up_s, 1))
    finally:
        service.close()
