"""MemoryService: the one engine behind every door (Hermes provider, MCP bridge, CLI)."""
from __future__ import annotations

import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Sequence

import pluggy

from .common import lifecycle_rules as lifecycle
from .recall import when
from .common.checks import MAX_TAGS, TIERS, scope_of as _scope, tags_of as _tags, tier_of as _tier
from .common.config import Settings
from .engine import Engine
from .lifecycle.consolidate import Report, Summariser, consolidate
from .vectors.embedders import load_embedder
from .common.errors import InvalidInput, StoreUnavailable, UnknownMemory
from .vectors.indexer import MAX_EMBED_CHARS, Indexer
from .ops.metrics import Metrics
from .common.plugins import make_plugin_manager, run_redactors
from .recall.rank import Hit, query_names, rank
from .redact import redact_text
from .store.models import AuditEvent, Memory
from .common.shared import Shared
from .lifecycle.scheduler import Scheduler
from .store.store import NewMemory, Store, has_tags, safe_url
from .common.text import Key, clean, clean_key, map_strings
from .vectors.chroma import UNITS, VectorIndex, owner

log = logging.getLogger(__name__)

CANDIDATES = 50  # per retriever, before fusion
SENTENCE_CANDIDATES = 2 * CANDIDATES  # sentence vectors asked for: a memory may have several
VECTOR_FLOOR = 0.35  # cosine below which a vector-only match is not a match at all
EMBEDDER_WAIT_S = 4.0  # a turn waits at most this long for the model to finish loading
MAX_CONTENT_CHARS = 10_000_000
MAX_FACT_PART_CHARS = 2_000
FORGET_WAIT_S = 10.0  # a forget returns once its vectors are scrubbed from the index, or after this
MAX_TTL_SECONDS = 10 * 365 * 86400
FORGET_STALLED_S = 600  # a forget --all with no batch for this long was interrupted: the sweep finishes it
# Vector near-duplicates must also pass lifecycle.same_gist (same numbers, same content words but
# one). Conversation messages that repeat older ones are folded by consolidation (consolidate.py).
DUPLICATE_SIMILARITY = 0.95  # an explicit note this close to a current one reinforces it
SUPERSEDE_SIMILARITY = 0.80  # a semantic note this close (but not a duplicate) replaces it


MAX_AUDIT_PAGE, MAX_AUDIT_OFFSET = 500, 10**9  # one audit_log call, at any door
# The question is embedded and the vector views queried on a worker thread while the keyword
# rankings run: ONNX Runtime, Chroma and SQLite all release the GIL, so on two cores the
# vector half costs little wall time beside the keyword half. A few workers, for a gateway
# whose users ask at the same time.
VECTOR_WORKERS = 4


class MemoryService:
    """Retain, recall, forget and flush, for any number of scopes in one store."""

    def __init__(self, settings: Settings, pm: Optional[pluggy.PluginManager] = None,
                 scheduler: bool = True):
        store = Store(settings.database_url)
        indexer = Indexer(store, lambda: load_embedder(settings.embedder, settings.embedder_dtype),
                          lambda: VectorIndex(settings), lock_path=settings.data_dir / "indexer.lock")
        self.engine = Engine(settings, pm or make_plugin_manager(), store, indexer,
                             ThreadPoolExecutor(VECTOR_WORKERS, thread_name_prefix="cmms-query"), service=self)
        self.settings, self.pm, self.store, self.indexer = settings, self.engine.pm, store, indexer
        self.summariser: Optional[Summariser] = None  # an LLM summary for consolidation, if set
        self.metrics = Metrics(self)  # Prometheus registry and spans of this service
        self.scheduler: Optional[Scheduler] = None
        if scheduler and settings.scheduler == "on":
            self.scheduler = Scheduler(self.store, {
                "sweep": (settings.sweep_interval_s, self.sweep),
                "decay": (settings.decay_interval_s, self.decay),
                "consolidate": (settings.consolidate_interval_s, self.consolidate_all)}).start()

    @property
    def in_hermes(self) -> bool:
        """Set by the Hermes provider: Hermes' own model can be asked."""
        return self.engine.in_hermes

    @in_hermes.setter
    def in_hermes(self, value: bool) -> None:
        self.engine.in_hermes = value

    # -- writes ---------------------------------------------------------------------------

    def retain_turn(self, scope: str, session_id: str, user: str, assistant: str,
                    source: str = "hermes") -> list[str]:
        """Store one conversation turn verbatim; durable when this returns."""
        scope, session_id = _scope(scope), clean_key(session_id or "")
        items = [NewMemory(scope=scope, content=text, role=role, session_id=session_id, source=source,
                           confidence=lifecycle.reliability(source))
                 for role, text in (("user", user), ("assistant", assistant))
                 if isinstance(text, str) and clean(text).strip()]
        if not items:
            return []
        return self._retain(scope, session_id, items, turn_of=(scope, session_id))

    def remember(self, scope: str, content: str, **kwargs) -> str:
        """Store one explicit memory (a note, an observation, a fact); return its id (the
        existing memory's, when this one repeats it). See `store_note` for the arguments."""
        return self.store_note(scope, content, **kwargs).id

    def store_note(self, scope: str, content: str, *, kind: str = "note", tier: str = "semantic",
                   tags: Sequence[str] = (), source: str = "", session_id: Optional[str] = None,
                   confidence: Optional[float] = None, ttl_seconds: Optional[float] = None,
                   fact: Optional[tuple[str, str, str]] = None, detail: Optional[dict] = None,
                   learned_from: Sequence[str] = (), supersedes: Sequence[str] = (),
                   duplicate_of: Optional[str] = None, judge: bool = True, dedup: bool = True,
                   belief: Optional[dict] = None, evidence: Sequence[dict] = ()) -> NewMemory:
        """Store one explicit memory; return it with its id and whether it reinforced one.

        A note's kind (preference, decision, status, or note) comes from whole-word rules.
        Without `confidence`, it is the source's reliability. With `ttl_seconds` it is working
        memory: never recalled or listed after that time. A current memory of the same tier
        with the same text (or, for semantic notes, nearly the same meaning) is reinforced
        instead of inserting; a semantic note close to an older one of its kind supersedes it
        (`judge=False` skips that comparison: exact repeats are still reinforced;
        `dedup=False` stores even an exact repeat as a new memory).
        `detail` holds a learned item's structured parts, `learned_from` the ids of the memories
        it was learned from (forgetting all of them forgets it), `supersedes` ids it replaces,
        `duplicate_of` an id it repeats (reinforced instead of inserting); `belief` and `evidence`
        a belief's row and evidence rows, written in the same transaction (see beliefs.py).
        """
        if not isinstance(content, str) or not clean(content).strip():
            raise InvalidInput("Memory content must be a non-empty string.")
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(f"Memory content is {len(content):,} characters; the limit is "
                               f"{MAX_CONTENT_CHARS:,}.")
        if confidence is not None and (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                                       or not 0.0 <= confidence <= 1.0):
            raise InvalidInput(f"Confidence must be a number from 0 to 1, not {confidence!r}.")
        if ttl_seconds is not None and (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float))
                                        or not 0 < ttl_seconds <= MAX_TTL_SECONDS):
            raise InvalidInput(f"ttl_seconds must be a number of seconds from 1 to {MAX_TTL_SECONDS:,}, "
                               f"not {ttl_seconds!r}.")
        tags = _tags(tags)
        scope, session_id = _scope(scope), clean_key(session_id) if session_id else None
        expires_at = time.time() + ttl_seconds if ttl_seconds is not None else None
        if fact is not None:
            fact = tuple(run_redactors(self.pm, clean(part), scope) for part in fact)
        item = NewMemory(scope=scope, content=content, kind=kind, tier="working" if expires_at else tier,
                         tags=tags, source=source, session_id=session_id,
                         confidence=lifecycle.reliability(source, confidence), expires_at=expires_at, fact=fact,
                         detail=detail, learned_from=tuple(learned_from), supersedes=tuple(supersedes),
                         duplicate_of=duplicate_of, dedup=dedup, belief=belief, evidence=tuple(evidence))
        self._retain(scope, session_id, [item], turn_of=None, judge=judge)
        return item

    def _judge(self, item: NewMemory) -> None:
        """Compare an explicit semantic note with its scope's nearest current memories: a near
        duplicate is reinforced instead, a close one of the same kind is superseded by it.
        Without a vector index only exact repeats are caught (in the store)."""
        try:
            vector = self._query_vector(item.content)
            if vector is None:
                return
            near = self.indexer.vectors.query(item.scope, vector, 5)
        except Exception as exc:  # noqa: BLE001 - the write goes ahead without the comparison
            log.warning("hermes-cmms: duplicate check skipped: %s", exc)
            return
        found = self.store.get([m for m, _ in near], item.scope)
        for memory_id, similarity in near:
            other = found.get(memory_id)
            if other is None or other.superseded_by or other.tier != item.tier:
                continue
            duplicate = similarity >= DUPLICATE_SIMILARITY and lifecycle.same_gist(item.content, other.content)
            if duplicate and other.state not in lifecycle.FADED:
                item.duplicate_of = other.id
                return
            if similarity >= SUPERSEDE_SIMILARITY and other.kind == item.kind and item.tier == "semantic":
                item.supersedes = [*item.supersedes, other.id]

    def _retain(self, scope: str, session_id: Optional[str], items: list[NewMemory],
                turn_of: Optional[tuple[str, str]], judge: bool = False) -> list[str]:
        """Admission: redact first, refuse what is nothing but secrets, classify notes, compare
        explicit semantic notes with what is stored; then the retain hook writes."""
        for item in items:
            text = _truncated(clean(item.content), scope)
            item.content = run_redactors(self.pm, text, scope)
            item.tags = tuple(run_redactors(self.pm, clean(str(tag)), scope) for tag in item.tags)
            item.source = run_redactors(self.pm, clean(item.source), scope)  # receipts can carry secrets too
            if item.detail:
                item.detail = self._redacted(item.detail, scope)
            item.redacted = self.pm.has_plugin("hermes_cmms.redact")  # else the store runs it
            if item.kind == "note":
                item.kind = lifecycle.classify(item.content)
        kept = [item for item in items if not lifecycle.only_secrets(item.content)]
        if not kept:
            if turn_of is None:
                raise InvalidInput(_nothing_left(items))
            return []
        items = kept
        if judge and items[0].tier == "semantic" and not items[0].fact and not items[0].duplicate_of:
            self._judge(items[0])
        results = self.pm.hook.retain(service=self, scope=scope, session_id=session_id,
                                      items=items, turn_of=turn_of)
        self.indexer.notify()
        return [memory_id for ids in results if ids for memory_id in ids]

    def _redacted(self, value, scope: str):
        """A learned item's structured parts with every string redacted."""
        return map_strings(value, lambda text: run_redactors(self.pm, clean(text), scope))

    def remember_fact(self, scope: str, subject: str, predicate: str, obj: str, *,
                      confidence: float = 1.0, source: str = "", tags: Sequence[str] = ()) -> str:
        """Store a subject-predicate-object fact; it is recalled like any memory and can be
        filtered by its parts."""
        parts = {"subject": subject, "predicate": predicate, "object": obj}
        for name, value in parts.items():
            if not isinstance(value, str) or not clean(value).strip():
                raise InvalidInput(f"The fact's {name} must be a non-empty string.")
            if len(value) > MAX_FACT_PART_CHARS:
                raise InvalidInput(f"The fact's {name} is {len(value):,} characters; the limit is "
                                   f"{MAX_FACT_PART_CHARS:,}.")
        subject, predicate, obj = (" ".join(v.split()) for v in parts.values())
        return self.remember(scope, f"{subject} {predicate} {obj}", kind="fact", tags=tags,
                             source=source, confidence=confidence, fact=(subject, predicate, obj))

    def hermes_entries(self, scope: str, fragment: str, keep: str = "") -> list[str]:
        """Ids of the scope's current copies of Hermes' built-in memory entries (written by its
        memory tool or mirrored from MEMORY.md / USER.md) holding `fragment`, except one whose
        text is `keep`: what a `replace` of that entry supersedes."""
        from .hermes.mirror import MEMORY_FILES, MEMORY_TOOL_SOURCE, SOURCE_PREFIX

        if not isinstance(fragment, str) or not fragment.strip():
            return []
        sources = [MEMORY_TOOL_SOURCE, *(SOURCE_PREFIX + name for name in MEMORY_FILES)]
        kept = run_redactors(self.pm, clean(keep), scope).strip() if keep else None
        return [m.id for m in self.store.containing(_scope(scope), run_redactors(self.pm, clean(fragment), scope),
                                                    sources) if m.content.strip() != kept]

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

    def forget(self, scope: str, memory_id: str, actor: str = "") -> None:
        """Delete a memory from the store and every index (after an audit snapshot);
        UnknownMemory if not in `scope`."""
        scope = _scope(scope)
        if not isinstance(memory_id, str) or not self.store.delete(scope, clean_key(memory_id), actor):
            raise UnknownMemory(f"Unknown memory id {memory_id!r} in this scope.")
        self._scrubbed(scope)

    def forget_all(self, scope: str, actor: str = "", progress: Optional[Callable[[int], None]] = None) -> int:
        """A user's right to be forgotten: delete every memory of `scope` from the store and
        every index, its sessions, and the content of its earlier audit snapshots, in short
        batches (`progress(memories so far)` after each); see Store.forget_all."""
        scope = _scope(scope)
        gone = self.store.forget_all(scope, actor, progress)
        self._scrubbed(scope)
        return gone

    def _scrubbed(self, scope: str) -> None:
        """After a forget: wait (FORGET_WAIT_S at most) for the index writer to delete the vectors
        and scrub them from Chroma's files, then empty the WAL of the outbox rows it deleted."""
        if self.indexer.wait_deleted(scope, FORGET_WAIT_S):
            self.store.scrub(outbox_only=True)

    # -- lifecycle ------------------------------------------------------------------------

    def sweep(self, now: Optional[float] = None) -> int:
        """Delete working memories past their expiry time; return how many. Also finish any
        forget --all that stopped (its process died) and drop the content of forget snapshots
        older than the `snapshot_days` setting."""
        now = time.time() if now is None else now
        for scope, actor in self.store.unfinished_forgets(time.time() - FORGET_STALLED_S):
            self.forget_all(Key(scope), actor or "cmms:sweep")  # a forget --all that was interrupted
        self.store.blank_snapshots(now - self.settings.snapshot_days * 86400)
        gone = sum(len(self.store.delete_where(scope, ids=ids, now=now, action="expire", actor="cmms:sweep"))
                   for scope, ids in self.store.expired(now).items())
        if gone:
            self.indexer.notify()
        return gone

    def decay(self, now: Optional[float] = None) -> dict:
        """Age every lasting memory to `now`: confidence decays, states move on (stale,
        archived); every move is a lifecycle event on the audit trail."""
        changed, moved = self.store.age(time.time() if now is None else now)
        return {"updated": changed, "transitions": moved}

    def consolidate(self, scope: str, session_id: Optional[str] = None, actor: str = "",
                    wait: float = 60.0) -> Report:
        """Cluster the scope's new episodic memories and write a semantic summary per cluster;
        fold near repeats first. Waits up to `wait` seconds for the embedding model."""
        scope = _scope(scope)
        report = consolidate(self, scope, clean_key(session_id) if session_id else None, self.summariser, wait)
        if report.examined:
            self.store.record("consolidate", actor or "cmms", scope,
                              **{k: v for k, v in report.as_dict().items() if k != "scope"})
        return report

    def consolidate_all(self, now: Optional[float] = None) -> dict:
        """Consolidate every scope with episodic memories not looked at yet."""
        self.indexer.drain(30.0)
        clusters, failed = 0, []
        for scope in self.store.unconsolidated_scopes():
            try:
                clusters += self.consolidate(Key(scope), actor="cmms:scheduler").clusters  # a stored key
            except Exception as exc:  # noqa: BLE001 - one broken scope does not stop the others
                log.warning("hermes-cmms: consolidating %s failed: %s", scope, exc)
                failed.append(scope)
        return {"clusters": clusters, "failed_scopes": len(failed)}

    def audit_log(self, scope: Optional[str] = None, *, memory_id: Optional[str] = None,
                  action: Optional[str] = None, limit: int = 50, offset: int = 0) -> list[AuditEvent]:
        """Audit events, newest first: `limit` 1 to MAX_AUDIT_PAGE from `offset` 0 to MAX_AUDIT_OFFSET."""
        if not (1 <= limit <= MAX_AUDIT_PAGE and 0 <= offset <= MAX_AUDIT_OFFSET):
            raise InvalidInput(f"An audit page is 1 to {MAX_AUDIT_PAGE} events from an offset of 0 to "
                               f"{MAX_AUDIT_OFFSET:,}, not {limit} from {offset}.")
        return self.store.audit_events(_scope(scope) if scope is not None else None, memory_id=clean_key(memory_id),
                                       action=clean_key(action), limit=limit, offset=offset)

    def record_call(self, door: str, tool: str, scope: Optional[str], ok: bool, error: str = "") -> None:
        """Put a tool call on the audit trail; never fails the call itself."""
        try:
            self.store.record("tool", clean(door), clean_key(scope) if isinstance(scope, str) else None,
                              tool=clean(tool), ok=ok, **({"error": _error_text(error)} if error else {}))
        except Exception as exc:  # noqa: BLE001
            log.warning("hermes-cmms: could not audit the %s call: %s", tool, exc)

    # -- reads ----------------------------------------------------------------------------

    def search(self, scope: str, query: str, limit: int = 30, *, tags: Sequence[str] = (),
               source: Optional[str] = None, fact: Optional[dict] = None) -> list[Hit]:
        """Hybrid search inside one scope, best first.

        Filters: memories carrying every one of `tags`; whose source (receipt) starts with
        `source`; facts whose given parts (`subject`, `predicate`, `object`) match, ignoring case.
        """
        tags = _tags(tags)
        fact = {k: v for k, v in (fact or {}).items() if v is not None}
        for name, value in [("source", source), *fact.items()]:
            if value is not None and (not isinstance(value, str) or not clean(value).strip()):
                raise InvalidInput(f"The {name} filter must be a non-empty string.")
        source, fact = clean(source) if source is not None else None, {k: clean(v) for k, v in fact.items()}
        if tags or source or fact:
            hits = self.search(scope, query, CANDIDATES * 4) if isinstance(query, str) and query.strip() else []
            return self._filtered(scope, hits, limit, tags, source, fact)
        scope = _scope(scope)
        if not isinstance(query, str):
            raise InvalidInput("The query must be a string.")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput(f"The result limit must be a positive whole number, not {limit!r}.")
        query = clean(query)
        if not query.strip():
            return []
        names = query_names(query)
        # A speaker's name matches every line they said (short ones best): the speaker boost
        # in rank() covers it, so keyword search looks for the rest of the question.
        vectors = self.engine.pool.submit(self._vector_search, scope, query)
        words = _without(query, self.store.speakers(scope, names)) if names else query
        rankings = {
            "keyword": [m for m, _ in self.store.keyword_search(scope, words, CANDIDATES)],
            "keyword_context": [m for m, _ in self.store.keyword_search(scope, words, CANDIDATES, True)],
            **vectors.result()}
        memories = self.store.get(list({m for ids in rankings.values() for m in ids}), scope)
        return rank(memories, rankings, names, during=when.spans(query, time.time()))[:limit]

    def _filtered(self, scope: str, hits: list[Hit], limit: int, tags, source, fact) -> list[Hit]:
        scope = _scope(scope)
        wanted = None
        if fact:
            wanted = set(self.store.facts_matching(scope, fact.get("subject"), fact.get("predicate"),
                                                   fact.get("object")))
            if not hits:  # no query: the matching facts, newest first
                found = self.store.get(list(wanted), scope)
                hits = [Hit(found[i], 0.0) for i in sorted(found, key=lambda i: -found[i].created_at)]

        def keep(m) -> bool:
            return ((wanted is None or m.id in wanted)
                    and (not source or m.source.startswith(source))
                    and has_tags(m, tags))
        return [hit for hit in hits if keep(hit.memory)][:limit]

    def semantic_search(self, scope: str, query: str, top_k: int = 10,
                        score_threshold: float = 0.0) -> list[tuple[Memory, float]]:
        """Vector-only search: (memory, cosine similarity) pairs at or above the threshold."""
        scope = _scope(scope)
        if not isinstance(query, str) or not clean(query).strip():
            raise InvalidInput("The query must be a non-empty string.")
        vector = self._query_vector(query)
        if vector is None:
            raise StoreUnavailable("Semantic search is unavailable: no embedding model or vector "
                                   "index is loaded (see `hermes-cmms doctor`).")
        found = [(m, sim) for m, sim in self.indexer.vectors.query(scope, vector, top_k)
                 if sim >= score_threshold]
        memories = self.store.get([m for m, _ in found], scope)
        return [(memories[m], sim) for m, sim in found if m in memories]

    def page(self, scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
             state: Optional[str] = None, limit: int = 50, offset: int = 0) -> tuple[list[Memory], int]:
        """A page of the scope's memories, newest first, with the total that match."""
        if state is not None and state not in lifecycle.LIVE_STATES:
            raise InvalidInput(f"Unknown state {state!r}; choose one of {', '.join(lifecycle.LIVE_STATES)}.")
        return self.store.page(_scope(scope), tier=_tier(tier), tags=_tags(tags), state=state,
                               limit=limit, offset=offset)

    def _query_vector(self, query: str):
        """The query's vector, or None when there is no usable vector index."""
        indexer = self.indexer
        if not indexer.ready.wait(EMBEDDER_WAIT_S) or not indexer.active:
            return None
        indexer.refresh()  # another process may have written vectors since we last looked
        return indexer.embedder.embed([clean(query)[:MAX_EMBED_CHARS]])[0]

    def _vector_search(self, scope: str, query: str) -> dict[str, list[str]]:
        """Rankings by cosine similarity: of the memories alone, in context, and by their best
        sentence; {} if no index."""
        indexer = self.indexer
        try:
            vector = self._query_vector(query)
            if vector is None:
                return {}
            found = {name: [m for m, similarity in indexer.vectors.query(scope, vector, CANDIDATES, view)
                            if similarity >= VECTOR_FLOOR]
                     for name, view in (("vector", "content"), ("vector_context", "context"))}
            sentences = indexer.vectors.query(scope, vector, SENTENCE_CANDIDATES, UNITS)  # several a memory
            found["vector_sentences"] = list(dict.fromkeys(
                owner(unit) for unit, similarity in sentences if similarity >= VECTOR_FLOOR))[:CANDIDATES]
            return found
        except Exception as exc:  # noqa: BLE001 - a failing index degrades recall only
            log.warning("hermes-cmms: vector search failed, keyword-only for this query: %s", exc)
            return {}

    def recall(self, scope: str, query: str, budget_tokens: Optional[int] = None,
               session_id: Optional[str] = None, seen: Optional[set[str]] = None) -> str:
        """The memory block for `query`, fitted to the token budget ('' if nothing fits).

        With `seen`, memories whose ids it holds are left out and the injected ids are added.
        """
        budget = budget_tokens or self.settings.recall_tokens
        if not isinstance(budget, int) or budget <= 0:
            raise InvalidInput(f"The token budget must be a positive whole number, not {budget!r}.")
        return self.pm.hook.recall(service=self, scope=scope, query=query, budget_tokens=budget,
                                   session_id=session_id, seen=seen) or ""

    # -- sessions -------------------------------------------------------------------------

    def flush_session(self, scope: str, session_id: str) -> None:
        """Session boundary: idempotent, safe to call any number of times."""
        self.pm.hook.session_flush(service=self, scope=_scope(scope), session_id=clean_key(session_id))

    def flush_open_sessions(self, scope: Optional[str] = None, session_id: Optional[str] = None) -> int:
        """Flush every unflushed session matching the filters; return how many."""
        sessions = self.store.unflushed_sessions(scope=scope, session_id=session_id)
        for session_scope, sid in sessions:
            self.flush_session(Key(session_scope), Key(sid))  # stored keys: not made again
        return len(sessions)

    # -- knowledge --------------------------------------------------------------------------

    def learn(self, scope: str, text: str, *, source: str = "", extract_beliefs: bool = True,
              session_id: Optional[str] = None) -> dict:
        """Keep `text` as an observation and store the facts, preferences, decisions, skills
        and (unless `extract_beliefs` is false) beliefs read from it, each linked to it."""
        from .knowledge.learn import learn

        return learn(self, _scope(scope), text, source=source, extract_beliefs=extract_beliefs,
                     session_id=session_id)

    def extract_session(self, scope: str, session_id: str) -> int:
        """Learn from a session's user turns not read yet; return how many items were stored."""
        from .knowledge.learn import extract_session

        return extract_session(self, _scope(scope), clean_key(session_id))

    def set_belief(self, scope: str, text: str, **kwargs) -> dict:
        """Create, reinforce or supersede a belief (see beliefs.set_belief)."""
        from .knowledge import beliefs

        return beliefs.set_belief(self, _scope(scope), text, **kwargs)

    def get_belief(self, scope: str, **filters) -> dict:
        """Beliefs matching the filters (see beliefs.get_belief)."""
        from .knowledge import beliefs

        return beliefs.get_belief(self, _scope(scope), **filters)

    def resolve_conflict(self, scope: str, belief_a: str, belief_b: str, strategy: str, **kwargs) -> dict:
        """Settle two contradicting beliefs (see beliefs.resolve_conflict)."""
        from .knowledge import beliefs

        return beliefs.resolve_conflict(self, _scope(scope), belief_a, belief_b, strategy, **kwargs)

    def reflect(self, scope: str, mode: str = "overview") -> dict:
        """A report computed from the scope's stored beliefs and evidence (see beliefs.reflect)."""
        from .knowledge import beliefs

        return beliefs.reflect(self, _scope(scope), mode)

    def graph_search(self, scope: str, **modes) -> dict:
        """Entities and neighbours for a query or an entity id, or paths between two entities."""
        from .knowledge import graph

        return graph.search(self, _scope(scope), **modes)

    def route(self, scope: str, query: str, limit: int = 5) -> dict:
        """Answer `query` from the retriever the 4-stage router picks, saying which and why."""
        from .knowledge.route import route

        return route(self, _scope(scope), query, limit)

    def audit(self, audit_type: str = "all", scope: Optional[str] = None) -> dict:
        """Health checks on the stored data (orphans, receipts, lifecycle, confidence, drift)."""
        from .ops import audit

        return audit.run(self, audit_type, _scope(scope) if scope is not None else None)

    def reindex(self, scope: Optional[str] = None) -> dict:
        """Repair drift: vectors re-queued or removed, orphans deleted, the graph rebuilt."""
        from .ops import audit

        return audit.reindex(self, _scope(scope) if scope is not None else None)

    # -- health ---------------------------------------------------------------------------

    def status(self, scope: Optional[str] = None) -> dict:
        """Where the store is, the embedder, and counts: of the whole store, or of `scope` only."""
        scope = _scope(scope) if scope is not None else None
        indexer = self.indexer
        if not indexer.ready.is_set():
            embedder = "loading"
        else:
            embedder = indexer.embedder.name if indexer.embedder else "none (keyword-only)"
        indexed, error = 0, indexer.error
        if indexer.vectors is not None:
            try:
                indexed = indexer.vectors.count(scope)
            except Exception as exc:  # noqa: BLE001 - a Chroma server that is away is a status, not a failure
                indexed, error = None, f"{type(exc).__name__}: {exc}"
        return {"database": safe_url(self.settings.database_url),
                "vectors": indexer.vectors.location if indexer.vectors else None,
                "indexed": indexed, "embedder": embedder, "index_error": error,
                **self.store.counts(scope)}

    def __enter__(self) -> "MemoryService":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, drain_timeout: float = 5.0) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        self.engine.pool.shutdown(wait=True, cancel_futures=True)
        self.indexer.drain(drain_timeout)
        self.indexer.stop()
        self.store.close()


def _error_text(error: str) -> str:
    """A tool error as audited: redacted before it is cut to 300 characters, so no cut can
    leave a secret's head that the redactor no longer recognises."""
    return redact_text(clean(error[:2000]))[:300]


def _without(query: str, words: set[str]) -> str:
    """The query less the given (lower-case) words, matched as whole words in any case."""
    for word in words:
        query = re.sub(rf"\b{re.escape(word)}\b", " ", query, flags=re.IGNORECASE)
    return query


def _nothing_left(items) -> str:
    """Why none of `items` is stored: secrets were all there was, or nothing printable was."""
    if any(lifecycle.REDACTED.search(item.content) for item in items):
        return "Nothing is left to remember once secrets are removed; nothing was stored."
    return "The text is empty once unprintable characters and punctuation are removed; nothing was stored."


def _truncated(text: str, scope: str) -> str:
    """`text` cut to MAX_CONTENT_CHARS, saying so in the text and in the log when it is cut."""
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    lost = len(text) - MAX_CONTENT_CHARS
    log.warning("hermes-cmms: a %s-character message in scope %s was cut to %s characters.",
                f"{len(text):,}", scope, f"{MAX_CONTENT_CHARS:,}")
    return f"{text[:MAX_CONTENT_CHARS]}… [truncated: {lost:,} characters not kept]"


_services = Shared()


def acquire(settings: Settings) -> MemoryService:
    """The process-wide service for these settings, shared by every provider instance."""
    key = (settings.database_url, settings.chroma_url or str(settings.chroma_path), settings.embedder,
           settings.embedder_dtype)
    return _services.acquire(key, lambda: MemoryService(settings))


def release(service: MemoryService, drain_timeout: float = 5.0) -> None:
    """Give back a service from `acquire`; the last user closes it."""
    if _services.release(service):
        service.close(drain_timeout)
