"""Shared fixtures: a fresh Hermes home per test, real SQLite, real Chroma, real MiniLM."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from servers import free_port, server_databases  # noqa: F401 - tests import server_databases from here

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


# The second CI pass: CMMS_TEST_BACKEND=server runs every test on PostgreSQL + a Chroma server
# (started by .ci/services), each test in a database of its own on both.
SERVER = os.environ.get("CMMS_TEST_BACKEND") == "server"
server_only = pytest.mark.skipif(not SERVER, reason="needs CMMS_TEST_BACKEND=server (PostgreSQL + Chroma server)")
embedded_only = pytest.mark.skipif(SERVER, reason="checks the embedded default's own files")


@pytest.fixture(scope="session", autouse=True)
def servers():
    """On the server backend, PostgreSQL and a Chroma server on 127.0.0.1: the ones named by
    CMMS_TEST_PG_URL / CMMS_TEST_CHROMA_URL, else started here by .ci/services (and stopped)."""
    if not SERVER or os.environ.get("CMMS_TEST_PG_URL"):
        yield
        return
    import shutil
    import subprocess
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="cmms-servers-"))  # not under pytest's 0700 tree:
    where.chmod(0o755)  # PostgreSQL runs as its own user and must reach it
    script = REPO / ".ci" / "services"
    started = subprocess.run([str(script), "start", str(where), str(Path(sys.executable).parent.parent)],
                             capture_output=True, text=True,
                             env={**os.environ, "PG_PORT": str(free_port()), "CHROMA_PORT": str(free_port())})
    try:
        assert started.returncode == 0, f"could not start the servers: {started.stderr[-2000:]}"
        for line in started.stdout.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            os.environ[name] = value.strip("'")
        yield
    finally:
        subprocess.run([str(script), "stop", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty HERMES_HOME, exported so every layer (Hermes, hermes-cmms) uses it. On the
    server backend, CMMS_DATABASE_URL and CMMS_CHROMA_URL name fresh databases for the test."""
    path = tmp_path / "hermes_home"
    path.mkdir()
    with exported_home(path, monkeypatch):
        yield path


@contextmanager
def exported_home(path: Path, env: pytest.MonkeyPatch) -> Iterator[Path]:
    """`path` exported as HERMES_HOME through `env`, none of the user's CMMS_* settings, and on
    the server backend fresh databases for it (CMMS_DATABASE_URL, CMMS_CHROMA_URL)."""
    env.setenv("HERMES_HOME", str(path))
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_EMBEDDER", "CMMS_RECALL_TOKENS"):
        env.delenv(name, raising=False)
    if not SERVER:
        yield path
        return
    with server_databases() as (database_url, chroma_url):
        env.setenv("CMMS_DATABASE_URL", database_url)
        env.setenv("CMMS_CHROMA_URL", chroma_url)
        yield path




@pytest.fixture
def service(home):
    """A MemoryService on the embedded default (SQLite + Chroma + packaged MiniLM)."""
    from hermes_cmms import MemoryService, Settings

    svc = MemoryService(Settings.load(home), scheduler=False)  # jobs run when a test says so
    yield svc
    svc.close()


@pytest.fixture
def keyword_service(home):
    """A MemoryService with CMMS_EMBEDDER=none: keyword-only recall, no model."""
    from hermes_cmms import MemoryService, Settings

    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    yield svc
    svc.close()


def python() -> str:
    return sys.executable


def hermes_bin() -> str:
    return str(Path(sys.executable).with_name("hermes"))


def subprocess_env(home: Path, **extra: str) -> dict:
    env = dict(os.environ, HERMES_HOME=str(home), **extra)
    return env


class ScriptedLLM:
    """tests/fake_llm.py running on 127.0.0.1: `say` scripts its next replies."""

    def __init__(self, port: int, log: Path, reply: Path):
        self.url, self.log, self.reply = f"http://127.0.0.1:{port}/v1", log, reply

    def say(self, content: str) -> None:
        self.reply.write_text(content, encoding="utf-8")

    def requests(self) -> list[dict]:
        import json

        records = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [r["body"] for r in records if r["method"] == "POST"]  # not GET /models


@pytest.fixture
def llm_server(tmp_path):
    """A fake OpenAI-compatible server in its own process, answering what the test scripts."""
    import subprocess

    log, reply = tmp_path / "requests.jsonl", tmp_path / "reply.txt"
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fake_llm.py")), str(log), "0"],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "FAKE_LLM_REPLY": str(reply)})
    try:
        first = proc.stdout.readline().split()
        assert first[:1] == ["PORT"], f"fake LLM did not start: {first!r}"
        yield ScriptedLLM(int(first[1]), log, reply)
    finally:
        proc.terminate()
        proc.wait(10)
