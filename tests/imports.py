"""What the `hermes-cmms import` tests share: the command line on a store without an embedder,
an import's summary, a reader's records and skip reasons, the memory a reader holds at once,
and a real import process killed while it writes."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from conftest import subprocess_env
from hermes_cmms import Settings
from hermes_cmms.ops.formats import Skipped
from hermes_cmms.store.availability import store_file
from inprocess import Ran, cli


def run(home: Path, *args: str) -> Ran:
    """`hermes-cmms ARGS` on the store in `home`, without an embedder."""
    return cli(home, *args, env={"CMMS_EMBEDDER": "none"})


def imported(home: Path, *args: str) -> dict:
    """The JSON summary of `hermes-cmms import --create ARGS`, which must succeed."""
    result = run(home, "import", "--create", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def nothing_stored(home: Path) -> bool:
    """Whether the store in `home` holds no memory, or is not there (a dry run where there was
    no store makes none)."""
    result = run(home, "status", "--json")
    if result.returncode != 0:
        return "No cmms store at " in result.stderr
    return json.loads(result.stdout)["memories"] == 0


def read(reader, path: Path) -> tuple[list[dict], Counter]:
    """What `reader` (a module of hermes_cmms.ops.formats) keeps of `path`, and how many
    records it skipped for each reason."""
    records = list(reader.records(path, scope="local:default"))
    skipped = Counter(r.reason for r in records if isinstance(r, Skipped))
    return [r for r in records if not isinstance(r, Skipped)], skipped


def memories_and_peak(reader, path: Path) -> tuple[int, int]:
    """How many memories `reader` gives for `path`, and the most bytes it held at once."""
    tracemalloc.start()
    try:
        count = sum(1 for record in reader.records(path, scope="local:default") if record["type"] == "memory")
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def database(home: Path) -> Path:
    """The SQLite file of the embedded store in `home`."""
    return store_file(Settings.load(home))


def stored(home: Path) -> int:
    """The memories committed in the store in `home` so far (0 before its file exists)."""
    path = database(home)
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    except sqlite3.OperationalError:  # created, not yet migrated
        return 0


def killed_mid_import(home: Path, path: Path) -> int:
    """Run a real `hermes-cmms import --create` of `path`, kill it (SIGKILL) once it has
    committed memories, and give how many it had committed."""
    command = [str(Path(sys.executable).with_name("hermes-cmms")), "import", "--create", "-q", str(path)]
    process = subprocess.Popen(command, env=subprocess_env(home, CMMS_EMBEDDER="none"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while stored(home) == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
    finally:
        process.kill()  # mid-import: its batches so far are committed
        process.wait(30)
    ended = f"the import ended before it could be killed mid-way: {process.stderr.read()!r}"
    assert process.returncode == -signal.SIGKILL, ended
    return stored(home)
