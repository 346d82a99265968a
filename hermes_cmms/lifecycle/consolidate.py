"""Consolidation: cluster a scope's episodic memories by their vector neighbours and write one
semantic summary per cluster; the originals are kept, marked superseded by it.

Neighbours come from the vector index (one batched ANN query), so the work grows with the
number of new memories, not with the square of the scope.
"""
from __future__ import annotations

import importlib.util
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..common import lifecycle_rules as lifecycle, tokens
from ..store.models import Memory
from ..common.plugins import run_redactors
from ..store.store import NewMemory
from ..common.text import clean

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

NEIGHBOURS = 8  # ANN neighbours looked at per memory
CLUSTER_SIMILARITY = 0.75  # cosine at or above which two memories are about the same thing
REPEAT_SIMILARITY = 0.97  # cosine at or above which a message (with the same gist) repeats an older one
MIN_CLUSTER = 3
MAX_CLUSTER = 24
MAX_SEEDS = 5000  # new memories looked at per run (the rest wait for the next)
SUMMARY_LINES = 3
LINE_TOKENS = 40

Summariser = Callable[[Sequence[str]], Optional[str]]


@dataclass
class Report:
    scope: str
    examined: int = 0
    folded: int = 0  # repeats folded into the memory they repeat
    clusters: int = 0
    consolidated: int = 0
    summaries: list[str] = field(default_factory=list)
    summariser: str = "extractive"

    def as_dict(self) -> dict:
        return {"scope": self.scope, "examined": self.examined, "folded": self.folded, "clusters": self.clusters,
                "consolidated": self.consolidated, "summaries": self.summaries,
                "summariser": self.summariser}


LLM_PROMPT = ("Summarise these related memories in one to three plain sentences. Keep names, dates "
              "and numbers; add nothing that is not in them.\n\n")
LLM_TIMEOUT_S = 30.0


def hermes_summariser() -> Optional[Summariser]:
    """A summariser on Hermes' plugin LLM facility (the user's model and auth), or None when
    not running with Hermes installed."""
    from ..common.llm import hermes_complete

    if importlib.util.find_spec("agent") is None or importlib.util.find_spec("agent.plugin_llm") is None:
        return None

    def summarise(texts: Sequence[str]) -> Optional[str]:
        prompt = LLM_PROMPT + "\n".join(f"- {' '.join(t.split())[:600]}" for t in texts)
        return hermes_complete([{"role": "user", "content": prompt}], 200, LLM_TIMEOUT_S,
                               "cmms consolidation") or None
    return summarise


def consolidate(engine: "Engine", scope: str, session_id: Optional[str] = None,
                summarise: Optional[Summariser] = None, wait: float = 60.0) -> Report:
    """Consolidate the scope's episodic memories not yet looked at (of one session, if given),
    waiting up to `wait` seconds for the embedding model to load."""
    report = Report(scope)
    if not engine.indexer.ready.wait(wait) or not engine.indexer.active:
        return report  # no vectors, no neighbours: try again when the index is up
    vectors = engine.indexer.vectors
    engine.indexer.refresh()
    seeds = engine.store.unconsolidated(scope, session_id, MAX_SEEDS)
    own = vectors.get(scope, [m.id for m in seeds])
    seeds = [m for m in seeds if m.id in own]  # not indexed yet: left for a later run
    if not seeds:
        return report
    report.examined = len(seeds)
    near = vectors.query_many(scope, [own[m.id] for m in seeds], NEIGHBOURS + 1)
    candidates = {i for hits in near for i, sim in hits if sim >= CLUSTER_SIMILARITY}
    members = {**{m.id: m for m in seeds}, **engine.store.get(list(candidates - own.keys()), scope)}
    known = {**own, **vectors.get(scope, [i for i in members if i not in own])}  # for the summaries
    eligible = {i for i, m in members.items() if _eligible(m)}
    taken = _fold_repeats(engine, scope, seeds, near, members, eligible, report)
    for seed, hits in zip(seeds, near):
        if seed.id in taken:
            continue
        cluster = [seed.id] + [i for i, sim in hits if sim >= CLUSTER_SIMILARITY and i != seed.id
                               and i in eligible and i not in taken][:MAX_CLUSTER - 1]
        if len(cluster) < MIN_CLUSTER:
            continue
        taken.update(cluster)
        group = sorted((members[i] for i in cluster), key=lambda m: m.created_at)
        summary_id = _store_summary(engine, scope, group, known, summarise, report)
        if summary_id is None:  # a member changed meanwhile (forgotten, or another run took it)
            taken.difference_update(cluster)
            continue
        report.summaries.append(summary_id)
        report.clusters += 1
        report.consolidated += len(group)
    engine.store.mark_examined([m.id for m in seeds if m.id not in taken], time.time())
    engine.indexer.notify()
    return report


def consolidate_audited(engine: "Engine", scope: str, session_id: Optional[str] = None, actor: str = "",
                        wait: float = 60.0) -> Report:
    """`consolidate` with the engine's summariser, put on the audit trail when it examined
    anything (what the facade's verb and the built-in session flush both run)."""
    report = consolidate(engine, scope, session_id, engine.summariser, wait)
    if report.examined:
        engine.store.record("consolidate", actor or "cmms", scope,
                            **{k: v for k, v in report.as_dict().items() if k != "scope"})
    return report


def _fold_repeats(engine: "Engine", scope: str, seeds: list[Memory], near, members: dict[str, Memory],
                  eligible: set[str], report: Report) -> set[str]:
    """Fold each new memory that repeats an older current one (cosine >= REPEAT_SIMILARITY and
    the same gist) into it; return the ids folded away."""
    folds, gone, kept = [], set(), set()
    for seed, hits in zip(seeds, near):
        twin = next((members[i] for i, sim in hits if sim >= REPEAT_SIMILARITY and i != seed.id
                     and i in eligible and members[i].seq < seed.seq), None)
        if (twin is not None and seed.id not in kept and twin.id not in gone
                and twin.state not in lifecycle.FADED and lifecycle.same_gist(seed.content, twin.content)):
            folds.append((seed.id, twin.id))
            gone.add(seed.id)
            kept.add(twin.id)
    report.folded = engine.store.merge(scope, folds) if folds else 0
    return gone


def _eligible(memory: Memory) -> bool:
    return (memory.tier == "episodic" and memory.superseded_by is None and not memory.pinned
            and memory.state in lifecycle.CONSOLIDATING)  # (a pinned memory is left as the user pinned it)


def _store_summary(engine: "Engine", scope: str, group: list[Memory], vectors: dict[str, list[float]],
                   summarise: Optional[Summariser], report: Report) -> Optional[str]:
    text = None
    if summarise is not None:
        try:
            text = summarise([m.content for m in group])
            report.summariser = "llm" if text else report.summariser
        except Exception as exc:  # noqa: BLE001 - fall back to the extractive summary
            log.warning("hermes-cmms: LLM summary failed, using the extractive one: %s", exc)
    if not text:
        text = extractive(group, vectors)
    text = run_redactors(engine.pm, clean(text), scope)
    summary = NewMemory(scope=scope, content=text, kind="summary", tier="semantic",
                        source="consolidation", confidence=0.85,
                        session_id=group[0].session_id if len({m.session_id for m in group}) == 1 else None)
    return engine.store.consolidate(summary, [m.id for m in group])


def extractive(group: Sequence[Memory], vectors: dict[str, list[float]]) -> str:
    """The most central memories of the group (nearest its centroid), in time order."""
    dims = len(next(iter(vectors.values()))) if vectors else 0
    centroid = [sum(vectors[m.id][d] for m in group if m.id in vectors) for d in range(dims)]

    def centrality(memory: Memory) -> float:
        vector = vectors.get(memory.id)
        return sum(a * b for a, b in zip(vector, centroid)) if vector else 0.0

    best = sorted(group, key=centrality, reverse=True)[:SUMMARY_LINES]
    lines = [tokens.truncate(" ".join(m.content.split()), LINE_TOKENS)
             for m in sorted(best, key=lambda m: m.created_at)]
    first, last = (datetime.fromtimestamp(m.created_at, timezone.utc).strftime("%Y-%m-%d")
                   for m in (group[0], group[-1]))
    span = first if first == last else f"{first} to {last}"
    return f"Summary of {len(group)} related memories ({span}): " + " / ".join(lines)
