"""The CMMS recall tools (default scope): ping, remember, search, get_context, semantic_search, metrics."""
from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

from pydantic import Field

from hermes_cmms.common.bounds import count_in, query_text
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.common.version import __version__
from hermes_cmms.recall.rank import Hit
from hermes_cmms.recall.shape import ITEM_KEYS, hit_dict, memory_dict

from ._args import MAX_RESULTS, Query, Source, Tags, receipt


ALIASES: dict[str, dict[str, str]] = {}  # tool -> {earlier argument name: the contract's}


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def hits_out(hits: list[Hit]) -> list[dict]:
        facts = service.store.facts([h.memory.id for h in hits])
        return [hit_dict(h, ITEM_KEYS, facts) for h in hits]

    def ping() -> dict[str, Any]:
        """Check the memory server is up; returns its version, default scope and the scope's counts."""
        status = service.status(default_scope)  # never the store's totals: other scopes stay unseen
        return {"ok": True, "server": "hermes-cmms", "version": __version__, "scope": default_scope,
                "memories": status["memories"], "indexed": status["indexed"],
                "embedder": status["embedder"], "writer": service.indexer.writer}

    def remember(subject: Annotated[str, Field(description="Who or what the fact is about.")],
                 predicate: Annotated[str, Field(description="The relation, e.g. 'lives in'.")],
                 object: Annotated[str, Field(description="The value, e.g. 'Lisbon'.")],
                 confidence: Annotated[float, Field(description="How sure, 0 to 1 (default 1).")] = 1.0,
                 source: Source = None, tags: Tags = None) -> dict[str, Any]:
        """Remember a fact as subject-predicate-object, in the default scope."""
        memory_id = service.remember_fact(default_scope, subject, predicate, object,
                                          confidence=confidence, source=receipt("remember", source, None),
                                          tags=tags or ())
        return {"stored": True, "id": memory_id, "scope": default_scope,
                "fact": {"subject": subject, "predicate": predicate, "object": object}}

    def search(query: Query,
               subject: Annotated[Optional[str], Field(description="Only facts about this subject.")] = None,
               predicate: Annotated[Optional[str], Field(description="Only facts with this relation.")] = None,
               object: Annotated[Optional[str], Field(description="Only facts with this value.")] = None,
               source: Annotated[Optional[str], Field(description="Only memories whose source starts so.")] = None,
               limit: Annotated[int, Field(description="Most results (1-100, default 10).")] = 10) -> dict[str, Any]:
        """Hybrid (keyword + semantic) search of the default scope, optionally filtered."""
        if query.strip() or not (subject or predicate or object):
            query_text(query)
        hits = service.search(default_scope, query, count_in(limit, "limit", MAX_RESULTS), source=source,
                              fact={"subject": subject, "predicate": predicate, "object": object})
        return {"scope": default_scope, "results": hits_out(hits)}

    def get_context(task: Annotated[str, Field(description="What you are about to do or answer.")],
                    subject: Annotated[Optional[str], Field(description="A subject to focus on.")] = None,
                    max_results: Annotated[int, Field(description="Most memories (1-100, default 10).")] = 10
                    ) -> dict[str, Any]:
        """The memories relevant to a task: the block Hermes would inject before a turn, plus the items."""
        query = f"{query_text(task, 'task')} {subject}" if subject else query_text(task, "task")
        hits = service.search(default_scope, query, count_in(max_results, "max_results", MAX_RESULTS))
        return {"scope": default_scope, "context": service.recall(default_scope, query),  # the recall hook
                "memories": hits_out(hits)}

    def semantic_search(query: Query,
                        top_k: Annotated[int, Field(description="Most results (1-100, default 10).")] = 10,
                        score_threshold: Annotated[float, Field(
                            description="Lowest cosine similarity to return, -1 to 1 (default 0).")] = 0.0
                        ) -> dict[str, Any]:
        """Search the default scope by meaning only; each result has its cosine similarity."""
        if not -1.0 <= score_threshold <= 1.0:
            raise InvalidInput(f"Argument 'score_threshold' must be between -1 and 1, not {score_threshold}.")
        found = service.semantic_search(default_scope, query_text(query), count_in(top_k, "top_k", MAX_RESULTS),
                                        score_threshold)
        facts = service.store.facts([m.id for m, _ in found])
        return {"scope": default_scope,
                "results": [memory_dict(m, facts=facts, similarity=round(sim, 5)) for m, sim in found]}

    def metrics() -> dict[str, Any]:
        """Prometheus metrics of this server: its tool calls, errors, latencies; the default scope's
        memories, vectors and index lag."""
        from hermes_cmms.ops.metrics import exposition

        return {"format": "prometheus-text-0.0.4", "exposition": exposition(service, default_scope)}

    return [ping, remember, search, get_context, semantic_search, metrics]
