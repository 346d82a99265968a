"""The scrub after a forget (a VACUUM of embedded Chroma's chroma.sqlite3) while the same process
reads the index on another thread, as a recall or an audit does while the indexer thread
finishes a forget. Run through Python's own sqlite3 in this process, the VACUUM was not locked
against Chroma's SQLite: readers failed with "database disk image is malformed" or "Failed to
get segments", and the file was at times left broken for good."""
from __future__ import annotations

import random
import threading
import time

from conftest import embedded_only

from hermes_cmms import Settings
from hermes_cmms.vectors.chroma import VectorIndex, chroma_sql

pytestmark = embedded_only

KEPT, GONE = "local:kept", "local:gone"
RUN_S = 3.0


def _unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(16)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def _read(index: VectorIndex, kept: dict[str, list[float]], stop: threading.Event, seen: dict) -> None:
    """Query and get the kept vectors until `stop`: what came back wrong or failed goes in `seen`."""
    ids = sorted(kept)
    while not stop.is_set():
        name = ids[seen["reads"] % len(ids)]
        try:
            [(found, similarity)] = index.query(KEPT, kept[name], 1)
            got = index.get(KEPT, ids[:5])
        except Exception as exc:  # noqa: BLE001 - every failure is what the test looks for
            seen["errors"].append(f"{type(exc).__name__}: {exc}")
            stop.set()
            return
        if found != name or similarity < 0.999 or sorted(got) != ids[:5]:
            seen["wrong"].append((name, found, similarity, sorted(got)))
        seen["reads"] += 1


def test_readers_in_the_same_process_see_no_error_and_the_right_vectors_while_forgets_are_scrubbed(home):
    settings = Settings.load(home, embedder="none")
    index, rng = VectorIndex(settings), random.Random(7)
    kept = {f"kept-{n}": _unit(rng) for n in range(40)}
    index.upsert(KEPT, list(kept), list(kept.values()), [{"kind": "note"}] * len(kept))
    stop, seen = threading.Event(), {"reads": 0, "errors": [], "wrong": []}
    reader = threading.Thread(target=_read, args=(index, kept, stop, seen))
    reader.start()
    scrubs, deadline = 0, time.monotonic() + RUN_S
    try:
        while time.monotonic() < deadline and not stop.is_set():
            doomed = [f"gone-{scrubs}-{n}" for n in range(50)]
            index.upsert(GONE, doomed, [_unit(rng) for _ in doomed], [{"kind": "note"}] * len(doomed))
            index.delete(GONE, doomed, save=False)
            index.scrub()
            scrubs += 1
    finally:
        stop.set()
        reader.join(30)
    assert seen["errors"] == [] and seen["wrong"] == [], seen
    assert scrubs >= 5 and seen["reads"] >= 50, (scrubs, seen["reads"])  # the two did overlap
    assert chroma_sql(settings.chroma_path, "PRAGMA integrity_check") == [["ok"]]
    assert index.count(GONE) == 0 and index.count(KEPT) == len(kept)
