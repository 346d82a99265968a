"""MemoryService: the one engine behind every door (Hermes provider, MCP bridge, CLI)."""
from __future__ import annotations

import logging
import re
import threading
from typing import Optional, Sequence

import pluggy

from .config import Settings
from .embedders import load_embedder
from .errors import InvalidInput, UnknownMemory
from .indexer import MAX_EMBED_CHARS, Indexer
from .plugins import make_plugin_manager, run_redactors
from .recall import Hit, query_names, rank
from .store import NewMemory, Store
from .text import clean, clean_key
from .vectors import VectorIndex

log = logging.getLogger(__name__)

CANDIDATES = 50  # per retriever, before fusion
VECTOR_FLOOR = 0.35  # cosine below which a vector-only match is not a match at all
EMBEDDER_WAIT_S = 4.0  # a turn waits at most this long for the model to finish loading
MAX_CONTENT_CHARS = 10_000_000


class MemoryService:
    """Retain, recall, forget and flush, for any number of scopes in one store."""

    def __init__(self, settings: Settings, pm: Optional[pluggy.PluginManager] = None):
        self.settings = settings
        self.pm = pm or make_plugin_manager()
        self.store = Store(settings.database_url)
        self.indexer = Indexer(self.store, lambda: load_embedder(settings.embedder, settings.embedder_dtype),
                               lambda: VectorIndex(settings))

    # -- writes ---------------------------------------------------------------------------

    def retain_turn(self, scope: str, session_id: str, user: str, assistant: str,
                    source: str = "hermes") -> list[str]:
        """Store one conversation turn verbatim; durable when this returns."""
        scope, session_id = _scope(scope), clean_key(session_id or "")
        items = [NewMemory(scope=scope, content=text, role=role, session_id=session_id, source=source)
                 for role, text in (("user", user), ("assistant", assistant))
                 if isinstance(text, str) and clean(text).strip()]
        if not items:
            return []
        return self._retain(scope, session_id, items, turn_of=(scope, session_id))

    def remember(self, scope: str, content: str, *, kind: str = "note", tier: str = "semantic",
                 tags: Sequence[str] = (), source: str = "", session_id: Optional[str] = None) -> str:
        """Store one explicit memory (a note, an observation); return its id."""
        if not isinstance(content, str) or not clean(content).strip():
            raise InvalidInput("Memory content must be a non-empty string.")
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(f"Memory content is {len(content):,} characters; the limit is "
                               f"{MAX_CONTENT_CHARS:,}.")
        scope, session_id = _scope(scope), clean_key(session_id) if session_id else None
        item = NewMemory(scope=scope, content=content, kind=kind, tier=tier, tags=tuple(tags),
                         source=source, session_id=session_id)
        return self._retain(scope, session_id, [item], turn_of=None)[0]

    def _retain(self, scope: str, session_id: Optional[str], items: list[NewMemory],
                turn_of: Optional[tuple[str, str]]) -> list[str]:
        for item in items:
            text = clean(item.content)[:MAX_CONTENT_CHARS]
            item.content = run_redactors(self.pm, text, scope)
            item.tags = tuple(run_redactors(self.pm, clean(str(tag)), scope) for tag in item.tags)
        results = self.pm.hook.retain(service=self, scope=scope, session_id=session_id,
                                      items=items, turn_of=turn_of)
        self.indexer.notify()
        return [memory_id for ids in results if ids for memory_id in ids]

    def forget(self, scope: str, memory_id: str) -> None:
        """Delete a memory from the store and every index; UnknownMemory if not in `scope`."""
        scope = _scope(scope)
        if not isinstance(memory_id, str) or not self.store.delete(scope, clean_key(memory_id)):
            raise UnknownMemory(f"Unknown memory id {memory_id!r} in this scope.")
        self.indexer.notify()

    # -- reads ----------------------------------------------------------------------------

    def search(self, scope: str, query: str, limit: int = 30) -> list[Hit]:
        """Hybrid search inside one scope, best first."""
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
        words = _without(query, self.store.speakers(scope, names)) if names else query
        rankings = {
            "keyword": [m for m, _ in self.store.keyword_search(scope, words, CANDIDATES)],
            "keyword_context": [m for m, _ in self.store.keyword_search(scope, words, CANDIDATES, True)],
            **self._vector_search(scope, query)}
        memories = self.store.get(list({m for ids in rankings.values() for m in ids}), scope)
        return rank(memories, rankings, names)[:limit]

    def _vector_search(self, scope: str, query: str) -> dict[str, list[str]]:
        """Rankings by cosine similarity, of the memories alone and in context; {} if no index."""
        indexer = self.indexer
        if not indexer.ready.wait(EMBEDDER_WAIT_S) or not indexer.active:
            return {}
        try:
            vector = indexer.embedder.embed([query[:MAX_EMBED_CHARS]])[0]
            return {name: [m for m, similarity in indexer.vectors.query(scope, vector, CANDIDATES, view)
                           if similarity >= VECTOR_FLOOR]
                    for name, view in (("vector", "content"), ("vector_context", "context"))}
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
            self.flush_session(session_scope, sid)
        return len(sessions)

    # -- health ---------------------------------------------------------------------------

    def status(self) -> dict:
        indexer = self.indexer
        if not indexer.ready.is_set():
            embedder = "loading"
        else:
            embedder = indexer.embedder.name if indexer.embedder else "none (keyword-only)"
        return {"database": self.settings.database_url,
                "vectors": indexer.vectors.location if indexer.vectors else None,
                "indexed": indexer.vectors.count() if indexer.vectors else 0,
                "embedder": embedder, "index_error": indexer.error,
                **self.store.counts()}

    def close(self, drain_timeout: float = 5.0) -> None:
        self.indexer.drain(drain_timeout)
        self.indexer.stop()
        self.store.close()


def _without(query: str, words: set[str]) -> str:
    """The query less the given (lower-case) words, matched as whole words in any case."""
    for word in words:
        query = re.sub(rf"\b{re.escape(word)}\b", " ", query, flags=re.IGNORECASE)
    return query


def _scope(scope: str) -> str:
    """The scope as stored; InvalidInput unless it is a non-empty string."""
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInput("A scope must be a non-empty string.")
    return clean_key(scope)


_shared: dict[tuple, list] = {}  # key -> [service, users]
_shared_lock = threading.Lock()


def acquire(settings: Settings) -> MemoryService:
    """The process-wide service for these settings, shared by every provider instance."""
    key = (settings.database_url, settings.chroma_url or str(settings.chroma_path), settings.embedder,
           settings.embedder_dtype)
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None:
            entry = _shared[key] = [MemoryService(settings), 0]
        entry[1] += 1
        return entry[0]


def release(service: MemoryService, drain_timeout: float = 5.0) -> None:
    """Give back a service from `acquire`; the last user closes it."""
    with _shared_lock:
        for key, entry in list(_shared.items()):
            if entry[0] is service:
                entry[1] -= 1
                if entry[1] > 0:
                    return
                del _shared[key]
                break
    service.close(drain_timeout)
