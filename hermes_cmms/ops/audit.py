"""Health checks on the stored data, and the repair of what is derived from it.

`run` reads the store (and the vector index) in batches and reports findings by audit type;
`reindex` repairs what can be rebuilt from SQL: orphan rows, the entity graph, the vectors.
Nothing here reads memory content. See docs/health.md.
"""
from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from ..knowledge import graph
from ..common import lifecycle_rules as lifecycle
from ._audit_report import BATCH, MAX_FINDINGS, Report, _chain, _finding
from ._audit_vectors import _repair_vectors, _vector_drift
from ..common.errors import InvalidInput
from ._rows import audit as audit_rows
from ._rows.audit import GRAPH, ORPHANS, RECEIPTS, Check, lifecycle_checks as _lifecycle_checks
from ..common.checks import scope_of
from ..common.vocabulary import AUDIT_CHOICES, AUDIT_TYPES

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["AUDIT_TYPES", "CHECKS", "MAX_FINDINGS", "REPAIRED", "reindex", "run"]

GROUPS = {"full": AUDIT_TYPES, "all": AUDIT_TYPES,  # "all": our earlier name of "full"
          "consistency": ("receipts", "lifecycle", "graph_drift", "vector_drift")}
REPAIRED = ("orphans", "vector_drift", "graph_drift")  # what reindex brings to zero
TOLERANCE = 1e-4  # stored confidences are rounded to 4 places



def _report(check: Check, conn, scope: Optional[str], report: Report, audit_type: str) -> None:
    """Add what one SQL check finds to `report` (as many rows as it has room for, the true count)."""
    found = check.count(conn, scope, report.skipped)
    for row in check.rows(conn, scope, report.skipped, report.room(audit_type)):
        detail = {k: v for k, v in row.items() if k not in ("key", "scope")}
        report.findings[audit_type].append(_finding(check.name, check.key_name, row["key"], row["scope"], **detail))
    report.counts[audit_type] += found
    report.by_check[check.name] = report.by_check.get(check.name, 0) + found


# the checks of each audit type, by name (the SQL ones above, then those read in batches below)
CHECKS = {
    "orphans": tuple(c.name for c in ORPHANS),
    "receipts": tuple(c.name for c in RECEIPTS),
    "lifecycle": (*(c.name for c in _lifecycle_checks(0.0, 0.0)), "backward_move", "supersede_cycle"),
    "confidence": ("confidence_out_of_range", "reliability_out_of_range", "above_ceiling", "conflict_not_penalised"),
    "vector_drift": ("missing_vector", "stray_vector"),
    "graph_drift": (*(c.name for c in GRAPH), "relation_mismatch"),
}


# -- checks read in batches ---------------------------------------------------------------

def _backward_moves(engine: "Engine", scope: Optional[str], report: Report) -> Iterator[dict]:
    """Lifecycle events whose move is not forward (or names a state that does not exist)."""
    for rows in audit_rows.lifecycle_events(engine.store, scope, BATCH):
        report.checked["lifecycle_events"] = report.checked.get("lifecycle_events", 0) + len(rows)
        for row in rows:
            move = _detail(row.detail)
            old, new = move.get("state_from"), move.get("state_to")
            if old not in lifecycle.STATES or new not in lifecycle.STATES or not lifecycle.forward(old, new):
                yield _finding("backward_move", "id", row.id, row.scope, memory_id=row.memory_id,
                               state_from=old, state_to=new)


def _detail(text: Optional[str]) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _cycles(engine: "Engine", scope: Optional[str]) -> Iterator[dict]:
    """Chains of superseded_by that come back on themselves. Only rows pointing at a memory that
    is itself superseded can be in a cycle, so only those are read."""
    edges, scopes = {}, {}
    for rows in audit_rows.supersede_links(engine.store, scope, BATCH):
        edges.update((row.id, row.superseded_by) for row in rows)
        scopes.update((row.id, row.scope) for row in rows)
    for cycle in _find_cycles(edges):
        yield _finding("supersede_cycle", "memory_id", min(cycle), scopes[cycle[0]], cycle=cycle[:20],
                       length=len(cycle))


def _find_cycles(edges: dict[str, str]) -> list[list[str]]:
    """Each cycle of a graph where every node has at most one successor, once."""
    state, cycles = {}, []  # node -> walk number that reached it
    for walk, start in enumerate(edges):
        path, node = [], start
        while node in edges and node not in state:
            state[node] = walk
            path.append(node)
            node = edges[node]
        if node in state and state[node] == walk:
            cycles.append(path[path.index(node):])
    return cycles


def _confidences(engine: "Engine", scope: Optional[str], report: Report) -> Iterator[dict]:
    """Confidence and reliability in [0, 1]; confidence never above what reliability and
    reinforcement allow (age only lowers it); a conflict's loser carries the penalty."""
    for rows in audit_rows.confidences(engine.store, scope, BATCH):
        report.checked["memories"] = report.checked.get("memories", 0) + len(rows)
        suspects = []
        for row in rows:
            found = _confidence_finding(row)
            if found is not None:
                yield found
            elif row.superseded_by and row.tier != "episodic":
                suspects.append(row)
        yield from _unpenalised(engine, suspects)


def _in_range(value) -> bool:
    return isinstance(value, (int, float)) and not math.isnan(value) and 0.0 <= value <= 1.0


def _ceiling(row) -> float:
    return lifecycle.confidence(row.reliability, row.access_count or 0, row.kind, 0.0, False)


def _confidence_finding(row) -> Optional[dict]:
    for name in ("confidence", "reliability"):
        if not _in_range(getattr(row, name)):
            return _finding(f"{name}_out_of_range", "memory_id", row.id, row.scope, **{name: getattr(row, name)})
    ceiling = _ceiling(row)
    if row.confidence > ceiling + TOLERANCE:
        return _finding("above_ceiling", "memory_id", row.id, row.scope, confidence=row.confidence,
                        ceiling=ceiling, reliability=row.reliability, reinforcements=row.access_count)
    return None


def _unpenalised(engine: "Engine", rows: list) -> Iterator[dict]:
    """Rows superseded by a conflict (the supersede event that set their current pointer says
    so) whose confidence is above the penalised ceiling."""
    over = {row.id: row for row in rows
            if row.confidence > _ceiling(row) * lifecycle.CONFLICT_PENALTY + TOLERANCE}
    if not over:
        return
    last = {e.memory_id: _detail(e.detail) for e in audit_rows.supersede_events(engine.store, list(over))}
    for memory_id, row in over.items():
        event = last.get(memory_id, {})
        if event.get("reason") == "conflict" and event.get("superseded_by") == row.superseded_by:
            yield _finding("conflict_not_penalised", "memory_id", row.id, row.scope, confidence=row.confidence,
                           ceiling=round(_ceiling(row) * lifecycle.CONFLICT_PENALTY, 4))


def _relation_mismatches(engine: "Engine", scope: Optional[str]) -> Iterator[dict]:
    """Relations whose ends, predicate or scope are not what their fact says."""
    for rows in audit_rows.relations_with_facts(engine.store, scope, BATCH):
        for row in rows:
            wrong = _mismatch(row)
            if wrong:
                yield _finding("relation_mismatch", "id", row.id, row.scope, memory_id=row.memory_id, **wrong)


def _mismatch(row) -> dict:
    expected = {"source": graph.entity_key(row.subject), "target": graph.entity_key(row.object),
                "predicate": " ".join(row.fact_predicate.split()), "scope": row.fact_scope}
    actual = {"source": row.source_key, "target": row.target_key, "predicate": row.predicate, "scope": row.scope}
    return {name: {"is": actual[name], "fact_says": want} for name, want in expected.items()
            if actual[name] != want}


# -- run ----------------------------------------------------------------------------------

def _audit_scope(scope) -> Optional[str]:
    return None if scope is None else scope_of(scope)


def _types(audit_type) -> tuple[str, ...]:
    if audit_type not in AUDIT_CHOICES:
        raise InvalidInput(f"Unknown audit type {audit_type!r}; choose one of {', '.join(AUDIT_CHOICES)}.")
    return GROUPS.get(audit_type, (audit_type,))


def _sql_checks(engine: "Engine", audit_type: str) -> tuple[Check, ...]:
    grace = float(engine.settings.sweep_interval_s)
    return {"orphans": ORPHANS, "receipts": RECEIPTS, "graph_drift": GRAPH,
            "lifecycle": _lifecycle_checks(time.time(), grace)}.get(audit_type, ())


def _streamed(engine: "Engine", audit_type: str, scope: Optional[str], report: Report) -> Iterator[dict]:
    streams: dict[str, Callable[[], Iterator[dict]]] = {
        "lifecycle": lambda: _chain(_backward_moves(engine, scope, report), _cycles(engine, scope)),
        "confidence": lambda: _confidences(engine, scope, report),
        "graph_drift": lambda: _relation_mismatches(engine, scope),
        "vector_drift": lambda: _vector_drift(engine, scope, report)}
    return streams[audit_type]() if audit_type in streams else iter(())


def run(engine: "Engine", audit_type: str = "full", scope: Optional[str] = None) -> dict:
    """Audit the store: findings by audit type (see AUDIT_TYPES; "full" or "all" runs them all,
    "consistency" all but orphans and confidence), at most MAX_FINDINGS listed per type with the
    true count, what was checked, and `ok` when nothing was found; as the CMMS contract has
    it, one sentence per check that found something under `errors` (broken integrity) or
    `warnings` (drift and what a person should judge), and the confidence distribution of
    the memories under `stats`."""
    types, scope = _types(audit_type), _audit_scope(scope)
    report = Report(types, skipped=_being_forgotten(engine, scope))
    for name in types:
        with engine.store.read() as conn:
            for check in _sql_checks(engine, name):
                _report(check, conn, scope, report, name)
        for finding in _streamed(engine, name, scope, report):
            report.add(name, finding)
    answer = report.answer(audit_type, scope, CHECKS)
    answer["stats"] = {"confidence": _confidence_stats(engine, scope)}
    if audit_type in ("full", "all") and scope is None:  # the store's health: the drift gauges read it back
        engine.store.record("audit", "cmms", None, counts=answer["counts"])
    return answer


BUCKETS = ("0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0")  # the last one holds 1.0 too
LOW_CONFIDENCE = 0.3  # a current memory below this is listed in stats.confidence.low_confidence
MAX_LOW = 100


def _confidence_stats(engine: "Engine", scope: Optional[str]) -> dict:
    """How many memories there are, how many in each fifth of the confidence range (a value
    outside 0..1 in the nearest bucket), and the ids of the first MAX_LOW current ones (not
    superseded) below LOW_CONFIDENCE, least sure first: all counted in SQL."""
    counts, low, total = audit_rows.confidence_counts(engine.store, scope, len(BUCKETS), LOW_CONFIDENCE, MAX_LOW)
    buckets = {name: int(counts.get(n, 0)) for n, name in enumerate(BUCKETS)}
    return {"total": total, "buckets": buckets, "low_confidence": list(low)}


# -- reindex ------------------------------------------------------------------------------

def _being_forgotten(engine: "Engine", scope: Optional[str]) -> tuple[str, ...]:
    """The scopes (of `scope`, or all) whose forget --all has begun and not finished: an audit
    says so and leaves their rows alone (what the forget has not reached yet is not an orphan)."""
    return tuple(s for s in engine.store.forgetting_scopes() if scope is None or s == scope)


def _delete_orphans(engine: "Engine", scope: Optional[str]) -> dict[str, int]:
    """Delete every orphan row (a dangling superseded_by is cleared instead), one transaction;
    the rows of a scope being forgotten are left to its forget."""
    return audit_rows.delete_orphans(engine.store, scope, _being_forgotten(engine, scope))


def reindex(engine: "Engine", scope: Optional[str] = None, drain_timeout: float = 600.0,
            progress: Optional[Callable[[int], None]] = None, claim: bool = False) -> dict:
    """Repair what SQL can rebuild, in `scope` (None: every scope): delete orphan rows, rebuild
    the entity graph from the facts, queue the missing vectors and the removal of stray ones
    and wait for the indexer to apply them. Receipts, lifecycle and confidence findings are
    left for a person to judge. Returns what was done; the reindex is on the audit trail."""
    scope = _audit_scope(scope)
    orphans = _delete_orphans(engine, scope)
    done = {"scope": scope, "orphans_deleted": orphans, "graph": graph.rebuild(engine, scope),
            **_repair_vectors(engine, scope, drain_timeout, progress, claim)}
    engine.store.record("reindex", "cmms:reindex", scope, **{k: v for k, v in done.items() if k != "scope"})
    return done
