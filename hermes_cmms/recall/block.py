"""The block the built-in auto-recall gives a turn: hybrid search, packed into the budget, and
a recall event saying which memories went in at which rank (ids and ranks only)."""
from __future__ import annotations

import logging
import re
import threading
import time
from concurrent.futures import Executor, wait
from typing import TYPE_CHECKING, Callable, Optional

from ..common.checks import scope_of
from ..common.text import clean_key, terms
from ..common.units import MAX_CHARS
from . import _rows as recall_events
from .rank import Hit
from .render import render
from .search import search

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

# A block is given only when something stored is about the prompt: a memory within GATE_COSINE of
# it by meaning, or one of the first keyword hits holding GATE_WORDS of its words (by their stems).
# Prompts about nothing stored (code, arithmetic, trivia) then get nothing (benchmarks/precision.py).
GATE_COSINE = 0.3
GATE_WORDS = 0.5
# Below SURE_COSINE, with no such keyword hit, only the memories within CLOSE_COSINE go in.
SURE_COSINE = 0.4
CLOSE_COSINE = 0.25
NOT_ABOUT = "not about the prompt"  # why a hit the gate left out is not in the block (explain)
LINE_TOKENS = 15  # enough candidates to fill the budget even with short memories (~15 tokens a line)
MIN_CANDIDATES = 30
SETTLE_S = 10.0  # how long a read of the events waits for this process's queued ones
# A recall event is written on a thread of its own, in the order recalled: its transaction (a
# commit the disk must hold, ~20 ms) never lengthens the turn it was recalled for. The thread is
# started by the spawner of the first engine that records one (the host's, in Hermes 0.23).
_writer: Optional[Executor] = None
_writer_lock = threading.Lock()


def candidates(budget_tokens: int) -> int:
    """How many ranked hits a block of `budget_tokens` is packed from."""
    return max(MIN_CANDIDATES, budget_tokens // LINE_TOKENS)


def recall_block(engine: "Engine", scope: str, query: str, budget_tokens: int, seen: Optional[set[str]] = None,
                 session_id: Optional[str] = None, explain: Optional[dict] = None,
                 prepared: Optional[tuple[list[Hit], dict]] = None, kind: str = "turn") -> str:
    """The memory block for `query` (see render.render for `seen`). A recall event of `kind`
    (RECALL_KINDS: a turn's, or asked ahead for a next turn) is recorded;
    with `explain` (a dict: an inspection, not a recall) none is, and `explain` gets the
    ranking's reasons under "ranked" (rank.rank), the packing's under "packing" (render) and
    what the search saw under "searched" (search.search). `prepared`: the hits and what the
    search saw of a search of this very query already made (any limit: a limit only cuts the
    one ranking), packed instead of searching again."""
    begun = time.time()  # an event is dated when its recall began: of two for one turn, the later asked is the one given
    ranked = packing = None
    searched: dict = {}
    if explain is not None:
        ranked, packing = explain.setdefault("ranked", {}), explain.setdefault("packing", {})
        searched = explain.setdefault("searched", {})
    if prepared is not None and explain is None:
        found, searched = prepared
        hits = found[:candidates(budget_tokens)]
    else:
        hits = search(engine, scope, query, candidates(budget_tokens), explain=ranked, searched=searched)
    kept = about_the_prompt(hits, query, searched.get("by_meaning", False),
                            lambda ids: _without_vector(engine, scope, ids))
    if explain is not None and len(kept) < len(hits):
        kept_ids = {hit.memory.id for hit in kept}
        packing.setdefault("left_out", {}).update(
            {hit.memory.id: (NOT_ABOUT, None) for hit in hits if hit.memory.id not in kept_ids})
    hits = kept
    if explain is not None:
        explain["hits"] = hits
        return render(hits, budget_tokens, query, seen, packing)
    packing = {}
    text = render(hits, budget_tokens, query, seen, packing)
    _record(engine, scope, session_id, [memory_id for memory_id, _ in packing.get("packed", ())], kind, begun)
    return text


def about_the_prompt(hits: list[Hit], query: str, by_meaning: bool = True,
                     without_vector: Optional[Callable[[list[str]], set[str]]] = None) -> list[Hit]:
    """The hits worth a line in the block (see GATE_COSINE): all of them when the prompt is
    surely about something stored, those close to it by meaning when it may be, none when not.
    A first keyword hit that has no vector yet (stored a moment ago, an import the indexer has
    not reached: `without_vector` of their ids says which) is kept, as its meaning is unknown.
    When the search compared no meaning (`by_meaning` false: no vector index, the model still
    loading, the index failing), all of them: words alone cannot tell a topic in common from a
    word in common, and recall is already degraded."""
    if not by_meaning:
        return hits
    wanted = _stems(query)
    if wanted and any(hit.keyword_rank is not None and hit.keyword_rank < 3
                      and len(wanted & _stems(hit.memory.content)) >= GATE_WORDS * len(wanted) for hit in hits):
        return hits
    best = max((hit.similarity for hit in hits if hit.similarity is not None), default=0.0)
    if best >= SURE_COSINE:
        return hits
    unknown = [hit.memory.id for hit in hits if hit.similarity is None and hit.keyword_rank is not None
               and hit.keyword_rank < 3]
    fresh = without_vector(unknown) if unknown and without_vector is not None else set()
    if best < GATE_COSINE:
        return [hit for hit in hits if hit.memory.id in fresh]
    return [hit for hit in hits if (hit.similarity is not None and hit.similarity >= CLOSE_COSINE)
            or hit.memory.id in fresh]


def _without_vector(engine: "Engine", scope: str, ids: list[str]) -> set[str]:
    """Those of `ids` with no vector in the index yet (all of them if the index cannot say)."""
    try:
        return set(ids) - engine.indexer.vectors.present(scope, ids)
    except Exception as exc:  # noqa: BLE001 - unknown meaning: kept, as keyword-only recall keeps it
        log.debug("hermes-cmms: could not ask the vector index which hits it holds: %s", exc)
        return set(ids)


_SUFFIX = re.compile(r"(?:ing|ed|es|e|s)$")


def _stems(text: str) -> set[str]:
    """The content words of `text`, each less a common ending (lives, live, living: liv)."""
    return {_SUFFIX.sub("", word) if len(word) > 3 else word for word in terms(text[:MAX_CHARS], MAX_CHARS)}


def settled(timeout: float = SETTLE_S) -> bool:
    """Wait (`timeout` at most) until the recall events this process queued are written or
    given up; whether they are."""
    return _writer is None or not wait([_writer.submit(lambda: None)], timeout).not_done


def _record(engine: "Engine", scope: str, session_id: Optional[str], memory_ids: list[str], kind: str,
            begun: float) -> None:
    """Queue the recall event of a block that gave something (see _writer), dated `begun`."""
    global _writer
    if memory_ids:
        with _writer_lock:
            _writer = _writer or engine.settings.threads.pool(1, "cmms-recall-events")
        _writer.submit(engine.settings.threads.bind(_write), engine.store, scope_of(scope), clean_key(session_id) if session_id else None,
                       memory_ids, engine.settings.recall_events, begun, kind)


def _write(store, scope: str, session_id: Optional[str], memory_ids: list[str], keep: int, at: float,
           kind: str) -> None:
    """The recall event (the scope keeping its newest `keep`); a store that cannot take it
    (read-only, busy, closed) costs the event only."""
    try:
        recall_events.record(store, scope, session_id, memory_ids, keep, at, kind)
    except Exception as exc:  # noqa: BLE001 - a recall never fails for want of its event
        log.debug("hermes-cmms: recall event not recorded: %s", exc)
