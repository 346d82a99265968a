"""Vector drift: memories with no vector in a view, vectors with no memory, each confirmed by
reading again; and their repair through the outbox (docs/health.md)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from ._audit_report import BATCH, Report, _chain, _finding
from ..store import vector_rows
from ..vectors.chroma import VIEWS

if TYPE_CHECKING:
    from ..engine import Engine

READY_WAIT_S = 120.0  # how long an audit waits for the embedding model and vector index
REPAIR_PASSES = 3  # vector repair re-checks after draining, at most this many times


def _vectors(engine: "Engine"):
    """The open vector index, or None when there is none (keyword-only, or it failed)."""
    indexer = engine.indexer
    if not indexer.ready.wait(READY_WAIT_S) or not indexer.active:
        return None
    indexer.refresh()
    return indexer.vectors


def _known_scopes(engine: "Engine", scope: Optional[str]) -> list[str]:
    if scope is not None:
        return [scope]
    return vector_rows.known_scopes(engine.store)


def _missing_vectors(engine: "Engine", vectors, scope: str, view: str, report: Report) -> Iterator[dict]:
    """Memories of `scope` with no vector in `view` and no upsert queued. Each page of ids and
    its queued upserts are read in one transaction, then the index; a candidate is confirmed
    by reading the store again (a memory forgotten meanwhile is not missing)."""
    after = 0
    while True:
        rows, queued = vector_rows.memory_page(engine.store, scope, after, BATCH)
        ids = [memory_id for _, memory_id in rows]
        if not rows:
            return
        after = rows[-1][0]
        report.checked[f"memories_{view}"] = report.checked.get(f"memories_{view}", 0) + len(ids)
        unqueued = [i for i in ids if i not in queued]
        present = vectors.present(scope, unqueued, view) if unqueued else set()  # one index read per page
        candidates = [i for i in unqueued if i not in present]
        for memory_id in vector_rows.still_stored(engine.store, scope, candidates):
            yield _finding("missing_vector", "memory_id", memory_id, scope, view=view)


def _stray_vectors(engine: "Engine", vectors, scope: str, view: str, report: Report) -> Iterator[dict]:
    """Vectors in the scope's `view` with no memory of that scope and no delete queued,
    confirmed by reading the index again after the store."""
    for page in vectors.ids(scope, view, BATCH):
        report.checked[f"vectors_{view}"] = report.checked.get(f"vectors_{view}", 0) + len(page)
        candidates = vector_rows.not_stored(engine.store, scope, page)
        present = vectors.present(scope, candidates, view) if candidates else set()
        for memory_id in candidates:
            if memory_id in present:
                yield _finding("stray_vector", "memory_id", memory_id, scope, view=view)


def _vector_drift(engine: "Engine", scope: Optional[str], report: Report) -> Iterator[dict]:
    """Missing and stray vectors of every view of each scope; the index lag, and (for every
    scope) the collections no scope maps to, go in `checked`."""
    vectors = _vectors(engine)
    _index_lag(engine, scope, report)
    if vectors is None:
        report.checked["vector_index"] = "none (keyword-only or unavailable): not checked"
        return
    scopes = _known_scopes(engine, scope)
    report.checked["scopes"] = len(scopes)
    for name in (s for s in scopes if s not in report.skipped):
        for view in VIEWS:
            yield from _missing_vectors(engine, vectors, name, view, report)
            yield from _stray_vectors(engine, vectors, name, view, report)
    if scope is None:  # a Chroma server may hold other stores' collections: counted, never touched
        mine = set().union(*(vectors.collection_names(s) for s in scopes))
        report.checked["unmapped_collections"] = sum(
            1 for name, count in vectors.collection_counts().items() if name not in mine and count)


def _index_lag(engine: "Engine", scope: Optional[str], report: Report) -> None:
    """Pending outbox rows: lag, not drift."""
    pending, oldest = vector_rows.outbox_lag(engine.store, scope)
    report.checked["index_lag"] = pending
    report.checked["index_lag_seconds"] = round(time.time() - oldest, 3) if oldest is not None else 0.0


def _queue_repairs(engine: "Engine", vectors, scope: Optional[str]) -> tuple[int, int]:
    """Queue an upsert for each missing vector and a delete for each stray one (one row per
    memory, whichever views it concerns); return (upserts, deletes)."""
    report = Report(("vector_drift",))
    work: set[tuple[str, str, str]] = set()
    skipped = set(engine.store.forgetting_scopes())  # their forget removes their vectors
    for name in (s for s in _known_scopes(engine, scope) if s not in skipped):
        for view in VIEWS:
            for finding in _chain(_missing_vectors(engine, vectors, name, view, report),
                                  _stray_vectors(engine, vectors, name, view, report)):
                work.add((finding["memory_id"], name, "upsert" if finding["check"] == "missing_vector" else "delete"))
    vector_rows.queue(engine.store, sorted(work))
    upserts = sum(1 for _, _, op in work if op == "upsert")
    return upserts, len(work) - upserts


def _repair_vectors(engine: "Engine", scope: Optional[str], drain_timeout: float,
                    progress: Optional[Callable[[int], None]] = None, claim: bool = False) -> dict:
    """Queue the vector repairs and wait for the indexer (`progress(outbox rows left)` while it
    waits); checked again, up to REPAIR_PASSES times. `claim`: the Chroma server's database made
    this store's first (VectorIndex.take)."""
    waiting = vector_rows.outbox_lag(engine.store)[0]  # what was queued before (an import) is made first
    if waiting and progress is not None:  # (before the model has loaded)
        progress(waiting)
    vectors = _vectors(engine)
    if vectors is None:
        return {"vectors": "none (keyword-only or unavailable): not repaired" + ("; nothing claimed" if claim else "")}
    if claim:
        vectors.take()
        engine.indexer.notify()
    queued = removed = passes = 0
    drained = True
    forgetting = set(engine.store.forgetting_scopes())  # their forget removes their vectors
    moved = sum(vectors.move_old(s) for s in _known_scopes(engine, scope)  # a server layout from before:
                if s not in forgetting)  # moved, not embedded again
    if waiting:
        engine.indexer.notify()
        drained = engine.indexer.drain(drain_timeout, progress)
    while passes < REPAIR_PASSES:
        upserts, deletes = _queue_repairs(engine, vectors, scope)
        passes += 1
        if not upserts and not deletes:
            break
        queued, removed = queued + upserts, removed + deletes
        engine.indexer.notify()
        drained = engine.indexer.drain(drain_timeout, progress)
    done = {"vectors_queued": queued, "vectors_removed": removed, "vector_passes": passes, "drained": drained}
    if moved:
        done["vectors_moved"] = moved
    if scope is None and (emptied := vectors.drop_empty_old_buckets()):
        done["old_buckets_dropped"] = emptied
    return done
