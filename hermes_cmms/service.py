"""The facade: the one engine behind every door (the Hermes provider, the MCP bridge, the CLI,
the dashboards). A door imports this module and `hermes_cmms.common` only.

`MemoryService` holds the verbs a user's memory is read and written with (at most 40, each
answering values every door prints: common/answers.py); `service.upkeep`, `service.transfer`
and `service.copies` (upkeep.py) hold maintenance, exports and imports, and the Hermes mirror's
reads. The plain functions at the end are what a door needs before a service exists: its
settings, whether a store can be opened, the doctor's checks.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import pluggy

from .common.answers import Event, Item, Stored
from .common.checks import scope_of as _scope, tags_of as _tags, tier_of as _tier
from .common.config import Settings
from .common.errors import InvalidInput, UnknownMemory
from .common.plugins import make_plugin_manager
from .common.shared import Shared
from .common.text import clean_key
from .common.vocabulary import MAX_AUDIT_OFFSET, MAX_AUDIT_PAGE, RECALL_KINDS
from .engine import open_engine
from .lifecycle.consolidate import Report, consolidate_audited
from .lifecycle.scheduler import Scheduler
from .ops.metrics import Metrics
from .recall import search as retrieval, shape
from .retain import admission
from .store.store import safe_url
from .upkeep import HISTORY_BATCH, Copies, Transfer, Upkeep

log = logging.getLogger(__name__)

FORGET_WAIT_S = 10.0  # a forget returns once its vectors are scrubbed from the index, or after this
# (then `upkeep.vectors_pending` says how many are still queued: the doors tell the caller)


class MemoryService:
    """Retain, recall, forget and flush, for any number of scopes in one store."""

    def __init__(self, settings: Settings, pm: Optional[pluggy.PluginManager] = None,
                 scheduler: bool = True, start_indexer: bool = True):
        """`start_indexer=False` (the CLI): the embedder and the vector index load only when
        something first needs them (a search, a write, a drain), not for a read of SQL."""
        self.engine = open_engine(settings, pm or make_plugin_manager(), start_indexer, service=self)
        self.settings, self.pm, self.store, self.indexer = settings, self.engine.pm, self.engine.store, self.engine.indexer
        self.metrics = Metrics(self.engine)  # Prometheus registry and spans of this service
        self.upkeep, self.transfer, self.copies = Upkeep(self), Transfer(self), Copies(self)
        self.scheduler: Optional[Scheduler] = None
        if scheduler and settings.scheduler == "on":
            self.scheduler = Scheduler(self.store, {
                "sweep": (settings.sweep_interval_s, self.upkeep.sweep),
                "decay": (settings.decay_interval_s, self.upkeep.decay),
                "consolidate": (settings.consolidate_interval_s, self.upkeep.consolidate_all),
                "learn": (settings.sweep_interval_s, lambda now: self.upkeep.learn_history(
                    HISTORY_BATCH, stop=lambda: self.scheduler is not None and self.scheduler.stopping))},
                threads=settings.threads, after=self.engine.recalled).start()

    # -- writes ---------------------------------------------------------------------------

    def retain_turn(self, scope: str, session_id: str, user: str, assistant: str,
                    source: str = "hermes", author: Optional[dict] = None, client: str = "") -> list[str]:
        """Store one conversation turn verbatim; durable when this returns. `author` ({"id",
        "name", "is_bot"}) wrote the user's message (its speaker), sent through `client`."""
        return admission.retain_turn(self.engine, scope, session_id, user, assistant, source, author, client)

    def checkpoint(self, scope: str, session_id: str, turns: Sequence[tuple[str, str]],
                   source: str = "hermes") -> int:
        """Before a compaction: store the (user, assistant) `turns` the scope does not hold yet
        (idempotent); how many messages were stored."""
        return admission.checkpoint(self.engine, scope, session_id, turns, source)

    def remember(self, scope: str, content: str, **kwargs) -> str:
        """Store one explicit memory (a note, an observation, a fact); return its id (the
        existing memory's, when this one repeats it). See `store_note` for the arguments."""
        return admission.store_note(self.engine, scope, content, **kwargs).id

    def store_note(self, scope: str, content: str, **kwargs) -> Stored:
        """Store one explicit memory; answer its id, whether it reinforced one, its tier and
        kind, and what it superseded.

        Keyword arguments: kind ("note"), tier ("semantic"), tags, source, session_id,
        confidence, ttl_seconds, fact, detail, learned_from, supersedes, duplicate_of, judge,
        dedup, belief, evidence. A note's kind (preference, decision, status, or note) comes from
        whole-word rules. Without `confidence`, it is the source's reliability. With
        `ttl_seconds` it is working memory: never recalled or listed after that time. A current
        memory of the same tier with the same text (or, for semantic notes, nearly the same
        meaning) is reinforced instead of inserting; a semantic note close to an older one of
        its kind supersedes it (`judge=False` skips that comparison: exact repeats are still
        reinforced; `dedup=False` stores even an exact repeat as a new memory).
        `detail` holds a learned item's structured parts, `learned_from` the ids of the memories
        it was learned from (forgetting all of them forgets it), `supersedes` ids it replaces,
        `duplicate_of` an id it repeats (reinforced instead of inserting); `belief` and `evidence`
        a belief's row and evidence rows, written in the same transaction (see beliefs.py).
        """
        stored = admission.store_note(self.engine, scope, content, **kwargs)
        return Stored(stored.id, stored.reinforced, stored.tier, stored.kind, tuple(stored.supersedes))

    def remember_fact(self, scope: str, subject: str, predicate: str, obj: str, *,
                      confidence: float = 1.0, source: str = "", tags: Sequence[str] = ()) -> str:
        """Store a subject-predicate-object fact; it is recalled like any memory and can be
        filtered by its parts."""
        return admission.remember_fact(self.engine, scope, subject, predicate, obj,
                                       confidence=confidence, source=source, tags=tags)

    def forget_where(self, scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
                     actor: str = "") -> list[str]:
        """Delete every memory of `scope` in `tier` and/or carrying all `tags`; return their ids."""
        tags, tier = _tags(tags), _tier(tier)
        if tier is None and not tags:
            raise InvalidInput("Name a memory id, a tier or tags to forget; nothing was forgotten.")
        scope = _scope(scope)
        gone = self.store.delete_where(scope, tier=tier, tags=tags, actor=actor)
        self._scrubbed(scope)
        return gone

    def forget(self, scope: str, memory_id: str, actor: str = "") -> str:
        """Delete a memory from the store and every index (after an audit snapshot); answer its
        stored id (`memory_id` may be short); UnknownMemory if not in `scope`."""
        scope = _scope(scope)
        key = self._id(scope, memory_id)
        if not isinstance(key, str) or not self.store.delete(scope, clean_key(key), actor):
            raise UnknownMemory(f"Unknown memory id {memory_id!r} in this scope.")
        self._scrubbed(scope)
        return clean_key(key)

    def forget_all(self, scope: str, actor: str = "", progress: Optional[Callable[[int], None]] = None) -> int:
        """A user's right to be forgotten: delete every memory of `scope` from the store and
        every index, its sessions, and the content of its earlier audit snapshots, in short
        batches (`progress(memories so far)` after each); see Store.forget_all."""
        scope = _scope(scope)
        gone = self.store.forget_all(scope, actor, progress)
        self._scrubbed(scope)
        return gone

    def _id(self, scope: Optional[str], memory_id):
        """A memory id as any door prints it, whole (dashed or stored) or short (its first 8 or
        more digits), as the verbs take it: a short one resolved among `scope`'s memories only
        (None: every scope's, for a read of every scope; store/short_ids.py); AmbiguousId when it
        starts several."""
        from .store.short_ids import resolved

        return resolved(self.store, _scope(scope) if scope is not None else None, memory_id)

    def _ids(self, scope: str, memory_ids):
        """`_id` of each of a list of ids (anything else as given, for the verb to refuse)."""
        from .lifecycle.steer import MAX_IDS

        if isinstance(memory_ids, (list, tuple)) and len(memory_ids) <= MAX_IDS:
            return [self._id(scope, i) for i in memory_ids]
        return memory_ids

    def _scrubbed(self, scope: str) -> None:
        """After a forget: wait (FORGET_WAIT_S at most) for the index writer to delete the vectors
        and scrub them from Chroma's files, then empty the WAL of the outbox rows it deleted."""
        if self.indexer.wait_deleted(scope, FORGET_WAIT_S):
            self.store.scrub(outbox_only=True)

    # -- steer: what a user changes by hand (lifecycle/steer.py) ----------------------------

    def correct(self, scope: str, memory_id: str, text: str, *, actor: str) -> str:
        """Store `text` as a new memory that supersedes `memory_id` (marked corrected: never
        recalled again); return the new id. See steer.correct."""
        from .lifecycle import steer

        return steer.correct(self.engine, scope, self._id(scope, memory_id), text, actor=actor)

    def pin(self, scope: str, memory_id: str, pinned: bool = True, *, actor: str) -> bool:
        """Pin (never decays, expires or is consolidated) or unpin a memory; return whether it is pinned."""
        from .lifecycle import steer

        return steer.pin(self.engine, scope, self._id(scope, memory_id), pinned, actor=actor)

    def tag(self, scope: str, memory_id: str, add: Sequence[str] = (), remove: Sequence[str] = (), *,
            actor: str) -> list[str]:
        """Add and remove tags of a memory; return its tags now."""
        from .lifecycle import steer

        return steer.tag(self.engine, scope, self._id(scope, memory_id), add, remove, actor=actor)

    def forget_preview(self, scope: str, memory_ids: Sequence[str]) -> dict:
        """Everything forgetting these memories would delete, changing nothing (steer.forget_preview)."""
        from .lifecycle import steer

        return steer.forget_preview(self.engine, scope, self._ids(scope, memory_ids))

    def forget_many(self, scope: str, memory_ids: Sequence[str], *, actor: str) -> int:
        """Forget these memories of `scope` (all or none) with all that goes with them; return how many."""
        from .lifecycle import steer

        gone = steer.forget_many(self.engine, scope, self._ids(scope, memory_ids), actor=actor)
        self._scrubbed(_scope(scope))
        return gone

    # -- lifecycle ------------------------------------------------------------------------

    def consolidate(self, scope: str, session_id: Optional[str] = None, actor: str = "",
                    wait: float = 60.0) -> Report:
        """Cluster the scope's new episodic memories and write a semantic summary per cluster;
        fold near repeats first. Waits up to `wait` seconds for the embedding model."""
        return consolidate_audited(self.engine, _scope(scope), clean_key(session_id) if session_id else None,
                                   actor, wait)

    def audit_log(self, scope: Optional[str] = None, *, memory_id: Optional[str] = None,
                  action: Optional[str] = None, door: Optional[str] = None, since: Optional[float] = None,
                  until: Optional[float] = None, limit: int = 50, offset: int = 0) -> list[Event]:
        """Audit events, newest first: `limit` 1 to MAX_AUDIT_PAGE from `offset` 0 to MAX_AUDIT_OFFSET;
        `door` an actor whole or up to a colon ("mcp"), `since` / `until` Unix times. A forget's
        snapshot of the row is in `snapshot` while the snapshot days keep it."""
        if not (1 <= limit <= MAX_AUDIT_PAGE and 0 <= offset <= MAX_AUDIT_OFFSET):
            raise InvalidInput(f"An audit page is 1 to {MAX_AUDIT_PAGE} events from an offset of 0 to "
                               f"{MAX_AUDIT_OFFSET:,}, not {limit} from {offset}.")
        for name, value in (("since", since), ("until", until)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidInput(f"{name} must be a Unix time, not {value!r}.")
        if memory_id is not None:  # (a short id: a memory of the asked scope, of any when the log asks every scope)
            memory_id = self._id(scope, memory_id)
        rows = self.store.audit_events(_scope(scope) if scope is not None else None, memory_id=clean_key(memory_id),
                                       action=clean_key(action), door=clean_key(door), since=since, until=until,
                                       limit=limit, offset=offset)
        return [Event(e.at, e.action, e.actor, e.scope, e.memory_id, json.loads(e.detail or "{}"),
                      json.loads(e.snapshot) if e.snapshot else None) for e in rows]

    # -- reads ----------------------------------------------------------------------------

    def search(self, scope: str, query: str, limit: int = 30, *, tags: Sequence[str] = (),
               source: Optional[str] = None, fact: Optional[dict] = None) -> list[Item]:
        """Hybrid search inside one scope, best first, each with its `score`.

        Filters: memories carrying every one of `tags`; whose source (receipt) starts with
        `source`; facts whose given parts (`subject`, `predicate`, `object`) match, ignoring case.
        """
        hits = retrieval.search(self.engine, scope, query, limit, tags=tags, source=source, fact=fact)
        return shape.items(self.store, _scope(scope), [h.memory for h in hits], scores=[h.score for h in hits])

    def semantic_search(self, scope: str, query: str, top_k: int = 10, score_threshold: float = 0.0) -> list[Item]:
        """Vector-only search: memories at or above the threshold, each with its cosine `similarity`."""
        found = retrieval.semantic_search(self.engine, scope, query, top_k, score_threshold)
        return shape.items(self.store, _scope(scope), [m for m, _ in found], similarities=[s for _, s in found])

    def newest_facts(self, scope: str, limit: int = 50, *, fact: Optional[dict] = None,
                     source: Optional[str] = None) -> list[Item]:
        """The scope's facts without a query, newest first, optionally filtered by their parts
        (ignoring case) and by a source prefix."""
        return shape.items(self.store, _scope(scope),
                           retrieval.newest_facts(self.engine, scope, limit, fact=fact, source=source))

    def page(self, scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
             state: Optional[str] = None, limit: int = 50, offset: int = 0) -> tuple[list[Item], int]:
        """A page of the scope's memories, newest first, with the total that match."""
        memories, total = retrieval.page(self.engine, scope, tier=tier, tags=tags, state=state, limit=limit,
                                         offset=offset)
        return shape.items(self.store, _scope(scope), memories), total

    # -- browsing (the dashboard, `list`, `show`) --------------------------------------------

    def scopes(self) -> list[dict]:
        """Every scope with its memories counted: {scope, memories, by_tier, by_kind, by_state
        (active, superseded, expired), by_lifecycle, newest_at}."""
        from .ops import browse

        return browse.scopes(self.engine)

    def browse(self, scope: str, *, tier: Optional[str] = None, kind: Optional[str] = None,
               tags: Sequence[str] = (), state: str = "active", since=None, until=None,
               source: Optional[str] = None, query: Optional[str] = None, mode: str = "keyword",
               sort: str = "newest", offset: int = 0, limit: int = 50) -> dict:
        """A page of the scope's memories passing every filter (all applied in SQL):
        {"total", "offset", "limit", "mode", "items"}. `state`: active (current: neither
        superseded nor expired), superseded, expired, all, or a lifecycle state (candidate,
        validated, stale, archived: current ones in it); `since` / `until`: ISO dates or times
        or Unix times; `source`: a receipt prefix ("mcp", "hermes:", "import:"); `query` by
        keyword (every word) or (`mode` "meaning") among the nearest in meaning, keyword instead,
        saying so in "notice", when no vectors are loaded; `sort`: newest, oldest, confidence,
        or relevance (with a query). Items are memories in the one shape, with `pinned` and,
        with a query, `score`."""
        from .ops import browse

        return browse.browse(self.engine, scope, tier=tier, kind=kind, tags=tags, state=state, since=since,
                             until=until, source=source, query=query, mode=mode, sort=sort, offset=offset,
                             limit=limit)

    def memory_page(self, scope: str, memory_id: str) -> dict:
        """Everything about one memory of `scope`: the memory, its provenance, confidence and
        decay, supersede chains both ways, fact, links, beliefs, entities and audit events."""
        from .ops.memory_page import memory_page

        return memory_page(self.engine, scope, self._id(scope, memory_id))

    def overview(self, scope: Optional[str] = None) -> dict:
        """The store (or one scope) at a glance: scopes with counts and index lag, health, the
        latest writes and recalls (an overview shows no recalls rather than fail on them)."""
        from .ops import browse
        from .recall import history

        try:
            recalls = history.recent_recalls(self.engine, scope, browse.LATEST)
        except Exception as exc:  # noqa: BLE001 - the rest of the overview stands
            log.warning("hermes-cmms: the overview could not read the latest recalls: %s", exc)
            recalls = []
        return browse.overview(self.engine, scope, recalls=recalls)

    def recall(self, scope: str, query: str, budget_tokens: Optional[int] = None,
               session_id: Optional[str] = None, seen: Optional[set[str]] = None, kind: str = "turn") -> str:
        """The memory block for `query`, fitted to the token budget ('' if nothing fits).

        With `seen`, memories whose ids it holds are left out and the injected ids are added.
        `kind` (RECALL_KINDS) is what history records it as: a turn's block, or one given to a
        compaction's summary ("summary"), which history never shows as a turn.
        """
        budget = budget_tokens or self.settings.recall_tokens
        if not isinstance(budget, int) or budget <= 0:
            raise InvalidInput(f"The token budget must be a positive whole number, not {budget!r}.")
        if kind not in RECALL_KINDS:
            raise InvalidInput(f"A recall's kind is one of {', '.join(RECALL_KINDS)}, not {kind!r}.")
        try:
            return self.pm.hook.recall(service=self, engine=self.engine, scope=scope, query=query, budget_tokens=budget,
                                       session_id=session_id, seen=seen, prepared=None, kind=kind) or ""
        finally:
            self.engine.recalled.set()  # (the scheduler's first jobs waited for it)

    def context(self, scope: str, query: str, limit: int = 30) -> tuple[str, list[Item]]:
        """The memory block for `query` (as `recall` gives it) and the hits of the one search it
        was packed from, best first, at most `limit` (MCP get_context: one search for both). The
        search reaches as deep as the block packs from, whatever `limit`."""
        from .recall.block import candidates

        budget, searched = self.settings.recall_tokens, {}
        valid = isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1  # (else search refuses it)
        hits = retrieval.search(self.engine, scope, query, max(limit, candidates(budget)) if valid else limit,
                                searched=searched)
        block = self.pm.hook.recall(service=self, engine=self.engine, scope=scope, query=query,
                                    budget_tokens=budget, session_id=None, seen=None, prepared=(hits, searched),
                                    kind="turn") or ""
        hits = hits[:limit]
        return block, shape.items(self.store, _scope(scope), [h.memory for h in hits], scores=[h.score for h in hits])

    # -- sessions -------------------------------------------------------------------------

    def flush_session(self, scope: str, session_id: str) -> None:
        """Session boundary: idempotent, safe to call any number of times."""
        self.pm.hook.session_flush(service=self, engine=self.engine, scope=_scope(scope),
                                   session_id=clean_key(session_id))

    # -- why recalled: the recall inspector and the recall events (recall/explain, history) ---

    def inspect_recall(self, scope: str, prompt: str, *, budget_tokens: Optional[int] = None,
                       session_id: Optional[str] = None, why_not: Optional[str] = None,
                       leave_out: Sequence[str] = ()) -> dict:
        """The exact block prefetch would give `prompt`, each line with why it is there, and
        what ranked next but did not fit; with `why_not`, that memory's verdict from the same
        search; `leave_out`: memories never made lines (a past turn's own messages, when it is
        run again now; see explain.inspect_recall)."""
        from .recall import explain

        why_not = self._id(scope, why_not) if why_not is not None else None
        if isinstance(leave_out, (list, tuple)) and len(leave_out) <= explain.MOST_LEFT_OUT:
            leave_out = [self._id(scope, i) for i in leave_out]  # (anything else: refused by explain)
        return explain.inspect_recall(self.engine, scope, prompt, budget_tokens, session_id, why_not, leave_out)

    def why_not(self, scope: str, prompt: str, memory_id: str, *, budget_tokens: Optional[int] = None) -> dict:
        """Why a memory is or is not in the block `prompt` gets, in one sentence (explain.why_not)."""
        from .recall import explain

        return explain.why_not(self.engine, scope, prompt, self._id(scope, memory_id), budget_tokens)

    def sessions(self, scope: str, *, offset: int = 0, limit: int = 50) -> list[dict]:
        """The scope's sessions, newest first, with their turns and recalls counted."""
        from .recall import history

        return history.sessions(self.engine, scope, offset, limit)

    def session_timeline(self, scope: str, session_id: str) -> dict:
        """Each turn of a session: what it stored and what was recalled into it."""
        from .recall import history

        return history.session_timeline(self.engine, scope, session_id)

    # -- knowledge --------------------------------------------------------------------------

    def learn(self, scope: str, text: str, *, source: str = "", extract_beliefs: bool = True,
              session_id: Optional[str] = None, min_belief_confidence: float = 0.0) -> dict:
        """Keep `text` as an observation and store the facts, preferences, decisions, skills
        and (unless `extract_beliefs` is false) beliefs read from it, each linked to it; beliefs
        read with a confidence below `min_belief_confidence` are not stored."""
        from .knowledge.learn import learn

        return learn(self.engine, _scope(scope), text, source=source, extract_beliefs=extract_beliefs,
                     session_id=session_id, min_belief_confidence=min_belief_confidence)

    def set_belief(self, scope: str, text: str, **kwargs) -> dict:
        """Create, reinforce or supersede a belief (see beliefs.set_belief)."""
        from .knowledge import beliefs

        if kwargs.get("supersedes") is not None:
            kwargs["supersedes"] = self._id(scope, kwargs["supersedes"])
        return beliefs.set_belief(self.engine, _scope(scope), text, **kwargs)

    def get_belief(self, scope: str, **filters) -> dict:
        """Beliefs matching the filters (see beliefs.get_belief)."""
        from .knowledge import beliefs

        if filters.get("belief_id") is not None:
            filters["belief_id"] = self._id(scope, filters["belief_id"])
        return beliefs.get_belief(self.engine, _scope(scope), **filters)

    def resolve_conflict(self, scope: str, belief_a: str, belief_b: str, strategy: str, **kwargs) -> dict:
        """Settle two contradicting beliefs (see beliefs.resolve_conflict)."""
        from .knowledge import beliefs

        return beliefs.resolve_conflict(self.engine, _scope(scope), self._id(scope, belief_a), self._id(scope, belief_b),
                                        strategy, **kwargs)

    def reflect(self, scope: str, mode: str = "overview", **filters) -> dict:
        """A report computed from the scope's stored beliefs and evidence (see beliefs.reflect)."""
        from .knowledge import beliefs

        return beliefs.reflect(self.engine, _scope(scope), mode, **filters)

    def graph_search(self, scope: str, **modes) -> dict:
        """Entities and neighbours for a query or an entity id, or paths between two entities."""
        from .knowledge import graph

        return graph.search(self.engine, _scope(scope), **modes)

    def route(self, scope: str, query: str, limit: int = 5, score_threshold: float = 0.0) -> dict:
        """Answer `query` from the retriever the 4-stage router picks, saying which and why
        (semantic matches below `score_threshold` do not count)."""
        from .knowledge.route import route

        return route(self.engine, _scope(scope), query, limit, score_threshold)

    # -- health ---------------------------------------------------------------------------

    def status(self, scope: Optional[str] = None) -> dict:
        """Where the store is, the embedder, and counts: of the whole store, or of `scope` only.

        A service whose indexer has not started (a CLI command that reads SQL only) counts no
        vectors (`indexed` None) and names the configured embedder without loading it. A scope
        being forgotten counts nothing."""
        scope = _scope(scope) if scope is not None else None
        indexer = self.indexer
        indexed, error = (0 if indexer.started else None), indexer.error
        if indexer.vectors is not None and scope in self.store.forgetting_scopes():
            indexed = 0
        elif indexer.vectors is not None:
            try:
                indexed = indexer.vectors.count(scope)
            except Exception as exc:  # noqa: BLE001 - a Chroma server that is away is a status, not a failure
                indexed, error = None, f"{type(exc).__name__}: {exc}"
        return {"database": safe_url(self.settings.database_url), "vectors": self._vectors_location(),
                "indexed": indexed, "embedder": self._embedder_state(), "index_error": error,
                **self.store.counts(scope)}

    def _embedder_state(self) -> str:
        indexer, choice = self.indexer, self.settings.embedder
        if not indexer.started:
            return "none (keyword-only)" if choice == "none" else f"{choice} (not loaded by this command)"
        if not indexer.ready.is_set():
            return "loading"
        return indexer.embedder.name if indexer.embedder else "none (keyword-only)"

    def _vectors_location(self) -> Optional[str]:
        if self.indexer.vectors is not None:
            return self.indexer.vectors.location
        if self.indexer.started or self.settings.embedder == "none":
            return None  # keyword-only, or still loading
        return self.settings.chroma_url or str(self.settings.chroma_path)

    def __enter__(self) -> "MemoryService":
        return self

    # -- for the doors: what a door read of the parts before, each a verb -------------------

    def get(self, scope: str, ids: Sequence[str]) -> dict[str, Item]:
        """The memories among `ids` that belong to `scope` (never another scope's), by id."""
        scope = _scope(scope)
        found = self.store.get([clean_key(i) for i in ids if isinstance(i, str)], scope)
        return {item.id: item for item in shape.items(self.store, scope, list(found.values()))}

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, drain_timeout: float = 5.0) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        self.engine.pool.shutdown(wait=True, cancel_futures=True)
        if self.indexer.started:  # (one never started was asked for no vector work: a write starts it)
            self.indexer.drain(drain_timeout)
        self.indexer.stop()
        from .recall.block import settled

        settled()  # the recall events this process queued are written before the store closes
        self.store.close()


_services = Shared()


def acquire(settings: Settings) -> MemoryService:
    """The process-wide service for these settings, shared by every provider instance."""
    key = (settings.database_url, settings.chroma_url or str(settings.chroma_path), settings.embedder,
           settings.embedder_dtype)
    return _services.acquire(key, lambda: MemoryService(settings))


def hosted_by_hermes(service: MemoryService) -> bool:
    """Said by the Hermes provider of the service it acquired: Hermes' own model can be asked
    (route's LLM stage), and with `consolidation_llm: hermes` it writes consolidation's
    summaries; whether it does."""
    service.engine.in_hermes = True
    if service.settings.consolidation_llm == "hermes" and service.engine.summariser is None:
        from .lifecycle.consolidate import hermes_summariser

        service.engine.summariser = hermes_summariser()
    return service.engine.summariser is not None


def release(service: MemoryService, drain_timeout: float = 5.0) -> None:
    """Give back a service from `acquire`; the last user closes it."""
    if _services.release(service):
        service.close(drain_timeout)


# -- before a service exists: what a door needs to decide whether and how to open one ------------
# (each loads its module when called: a door that never opens a store pays for none of them)

def door_settings(home, create: Optional[bool], **overrides) -> Settings:
    """A door's settings for `home`, once it may open the store there (store/availability.py)."""
    from .store.availability import door_settings as settings_for

    return settings_for(home, create, **overrides)


def has_store(settings: Settings) -> bool:
    """Whether the store of these settings is there: its SQLite file exists (a database server's
    store is there once named)."""
    from .store.availability import store_file

    where = store_file(settings)
    return where is None or where.exists()


def plan_import(settings: Settings, path, **kwargs) -> dict:
    """What importing `path` would add where there is no store yet (has_store false), without
    creating one: MemoryService.transfer.import_foreign's dry run (ops.formats.run.plan_foreign)."""
    from .ops.formats.run import plan_foreign

    return plan_foreign(settings.home, path, **kwargs)


def store_problem(settings: Settings) -> str:
    """Why this store cannot be written, in one sentence; '' when nothing local stands in the way."""
    from .store.availability import store_problem as problem

    return problem(settings)


def run_checks(home=None) -> Iterator:
    """The doctor's checks of a Hermes home, one at a time (ops/doctor.py)."""
    from .ops.doctor import run_checks as checks

    return checks(home)


def external_paths(settings: Settings) -> list[Path]:
    """What hermes-cmms stores outside the Hermes home, which `hermes backup` does not find."""
    from .ops.transfer import external_paths as paths

    return paths(settings)


def hermes_history(home: Path) -> Optional[dict]:
    """What a Hermes home's state.db holds (sessions, messages, first and last), or None."""
    from .ops.formats.hermes_sessions import history

    return history(home)


def packaged_int8_minilm() -> Optional[Path]:
    """The int8 all-MiniLM-L6-v2 ONNX file of the installed wheel, if any (vectors/embedders.py)."""
    from .vectors.embedders import packaged_int8_minilm as packaged

    return packaged()


def prepared_minilm(source: Path, int8: bool = False, again: bool = False, cache: Optional[Path] = None) -> Path:
    """The int8 MiniLM made ready for ONNX Runtime once per machine (vectors/embedders.py)."""
    from .vectors.embedders import prepared_minilm as prepared

    return prepared(source, int8, again, cache)


__all__ = ["MemoryService", "acquire", "release", "hosted_by_hermes", "door_settings", "has_store", "plan_import",
           "store_problem", "run_checks", "external_paths",
           "hermes_history", "packaged_int8_minilm", "prepared_minilm", "safe_url", "Report"]
