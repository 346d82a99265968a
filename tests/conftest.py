"""Shared fixtures: a fresh Hermes home per test, real SQLite, real Chroma, real MiniLM.

Two passes run this suite (README, "Two commands"): the embedded default, and
CMMS_TEST_BACKEND=server, which runs the tests marked `store` (they touch storage, vectors or
concurrency) on PostgreSQL + a Chroma server. A test that opens a store without that mark fails
in the embedded pass (`_store_marked` below), so the server pass cannot silently miss it.
Tests that open a store for another reason say so: `embedded_only` (the embedded default's own
files) or `one_backend` (a door's own behaviour over the engine, which the `store` tests cover on
both backends). A new store starts from a migrated template (copied, or cloned on PostgreSQL) instead of
replaying every migration; tests marked `migrates` open theirs from empty.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from servers import drop_templates, free_port, server_databases  # tests import server_databases from here

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


# The second CI pass: CMMS_TEST_BACKEND=server runs the `store` tests on PostgreSQL + a Chroma
# server (started by .ci/services), each test in databases of its own on both.
SERVER = os.environ.get("CMMS_TEST_BACKEND") == "server"
server_only = pytest.mark.server_only  # skipped in the embedded pass; a `store` test
embedded_only = pytest.mark.embedded_only  # checks the embedded default's own files: not in the server pass
STORE_FIXTURES = {"service", "keyword_service", "shared_keyword_service"}  # a test taking one opens a store


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true",
                     help="the quick loop: only the tests marked `quick`, about two minutes on two cores "
                          "(docs/testing.md)")


def pytest_configure(config):
    """Under --quick, keep the compiled test modules and package even where PYTHONDONTWRITEBYTECODE
    is set (as on this project's machines and in .ci/run): rewriting the asserts of every test
    module and compiling the package again was most of a collection (12 s of 15 s). They are
    kept under .pytest_cache/pycache, not beside the sources."""
    if config.getoption("quick") and sys.dont_write_bytecode:
        sys.dont_write_bytecode = False
        sys.pycache_prefix = str(config.rootpath / ".pytest_cache" / "pycache")


def pytest_collection_modifyitems(config, items):
    """Under --quick keep only the tests marked `quick`. Mark what opens a store through the
    shared fixtures; on the server backend keep only the `store` tests (and not the embedded-only
    ones); in the embedded pass skip the server-only."""
    if config.getoption("quick"):
        _deselect(config, items, [i for i in items if i.get_closest_marker("quick")])
    for item in items:
        if item.get_closest_marker("one_backend"):
            continue
        if STORE_FIXTURES & set(item.fixturenames) or item.get_closest_marker("server_only"):
            item.add_marker(pytest.mark.store)
    if SERVER:
        _deselect(config, items, [i for i in items if i.get_closest_marker("store") and not (
            i.get_closest_marker("embedded_only") or i.get_closest_marker("one_backend"))])
        return
    skip = pytest.mark.skip(reason="needs CMMS_TEST_BACKEND=server (PostgreSQL + Chroma server)")
    for item in items:
        if item.get_closest_marker("server_only"):
            item.add_marker(skip)


def _deselect(config, items: list, kept: list) -> None:
    kept_ids = {id(i) for i in kept}
    dropped = [i for i in items if id(i) not in kept_ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# -- stores opened by this test process: the migrated template, and the check of the mark ------

_opened: list[str] = []  # the URL of every store the current test opened, in any thread
_template: dict = {"on": True, "path": None}


def _migrated_template(store_class) -> Path:
    """A SQLite store with every migration applied, made once per test process."""
    if _template["path"] is None:
        where = Path(tempfile.mkdtemp(prefix="cmms-template-")) / "cmms.db"
        _template["on"], before = False, len(_opened)
        try:
            store_class(f"sqlite:///{where}").close()
        finally:
            _template["on"] = True
            del _opened[before:]  # (the template's own open is not the test's)
        _template["path"] = where
    return _template["path"]


def _watched(opening, store_class):
    """Store.__init__ wrapped: record each store opened, and start a new SQLite file as a copy of
    the migrated template (its migrations then found all applied), unless the test is `migrates`."""
    from sqlalchemy.engine import make_url

    def watched(self, url: str, *args, **kwargs):
        _opened.append(url)
        if _template["on"] and url.startswith("sqlite:///"):
            path = make_url(url).database or ""
            if path and path != ":memory:" and not path.startswith("file:") and not Path(path).exists():
                try:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(_migrated_template(store_class), path)
                except OSError:  # an unwritable place (a full disk): the store says so, its own way
                    with contextlib.suppress(OSError):
                        Path(path).unlink(missing_ok=True)  # (no half copy left for it to open)
        opening(self, url, *args, **kwargs)

    return watched


@pytest.fixture(scope="session", autouse=True)
def _stores_watched():
    """Every Store this test process opens goes through `_watched`, for the whole session.

    A wrap of Store.__init__, not a fixture a test takes: stores are opened deep inside the doors
    (`cli()`, the in-memory bridge, Hermes' provider, a `MemoryService` a test builds), which know
    nothing of tests, and only the store knows when it is about to create a new SQLite file (a
    `home` with the file already in it would not be an empty home). Put in place before any
    other fixture opens a store (session scope, autouse) and taken away after the last test."""
    from hermes_cmms.store.store import Store

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Store, "__init__", _watched(Store.__init__, Store))
        yield
    if _template["path"] is not None:  # (its directory, made by mkdtemp, is this process' own)
        shutil.rmtree(_template["path"].parent, ignore_errors=True)


@pytest.fixture(autouse=True)
def _store_marked(request):
    """Fail a test that opens a store (here, or in a process it starts under its tmp_path)
    without the `store` mark: the server pass would leave it out. `migrates` tests open theirs
    from empty, without the template."""
    _opened.clear()
    _template["on"] = request.node.get_closest_marker("migrates") is None
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    _template["on"] = True
    opened, marked = list(_opened), request.node.get_closest_marker("store") is not None
    _opened.clear()
    if SERVER or marked or any(request.node.get_closest_marker(m) for m in ("embedded_only", "one_backend")):
        return
    if tmp is not None:  # (a thread a test before this one left running may open its own store)
        opened = [url for url in opened if str(tmp) in url]
    left = [str(p) for p in tmp.rglob("cmms.db")] if tmp is not None else []
    if opened or left:
        pytest.fail(f"{request.node.nodeid} opens a store ({(opened + left)[0]}) but is not marked: mark it "
                    "`store` if what it checks can differ by backend (the server pass runs those), "
                    "`embedded_only` if it checks the embedded default's own files, or `one_backend` "
                    "if it checks a door's own behaviour over the engine.", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def servers():
    """On the server backend, PostgreSQL and a Chroma server on 127.0.0.1: the ones named by
    CMMS_TEST_PG_URL / CMMS_TEST_CHROMA_URL, else started here by .ci/services (and stopped)."""
    if not SERVER:
        yield
        return
    if os.environ.get("CMMS_TEST_PG_URL"):
        yield
        drop_templates()
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
        drop_templates()
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
    with server_databases(migrated=_template["on"]) as (database_url, chroma_url):  # (off: `migrates`)
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


@pytest.fixture(scope="module")
def shared_keyword_service(tmp_path_factory):
    """One keyword-only MemoryService for a whole module, in a home of its own: for tests that
    only read what a module fixture stored there, or write in a scope no other test reads
    (`keyword_service` is the one for a test that counts every row of the store)."""
    from hermes_cmms import MemoryService, Settings

    home = tmp_path_factory.mktemp("shared_home")
    with pytest.MonkeyPatch.context() as env, exported_home(home, env):
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


@pytest.fixture
def kw_home(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    monkeypatch.setenv("CMMS_SCHEDULER", "off")
    return home



def refuse_writes(home) -> None:
    """Make the store unwritable in a way that stops root too: the data directory's path is
    a file (embedded), or the database refuses every write (PostgreSQL)."""
    from sqlalchemy.engine import make_url

    from db import sql

    if SERVER:
        name = make_url(os.environ["CMMS_DATABASE_URL"]).database
        sql(home, f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    else:
        shutil.rmtree(home / "cmms", ignore_errors=True)
        (home / "cmms").write_text("not a directory\n", encoding="utf-8")


# -- a real headless Chromium (Debian's chromium + chromedriver; nothing downloads a browser) ----

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _no_browser() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(os.path.basename(path))):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return ""


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a module: skipped with the reason when it is missing, a failure
    instead under CMMS_CI=1 (.ci/run installs it)."""
    missing = _no_browser()
    if missing:
        if os.environ.get("CMMS_CI") == "1":
            pytest.fail(f"the browser tests cannot run under CMMS_CI=1: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER if os.path.exists(CHROMEDRIVER)
                                                                else shutil.which("chromedriver")))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def terminal_output(main: int, proc, timeout: float, answer=None) -> bytes:
    """All a process wrote on the pseudo-terminal whose controlling side is `main`, until it
    closed the terminal or ended, or `timeout` passed; `answer(seen)` may give bytes to type
    once (the answer to a prompt), or None to wait."""
    import select
    import time

    seen, answered, deadline = b"", False, time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        typed = answer(seen) if answer is not None and not answered else None
        if typed is not None:
            os.write(main, typed)
            answered = True
        if proc.poll() is not None and not ready:
            break
    return seen
