"""The CMMS recall tools (default scope): ping, remember, search, get_context, semantic_search, metrics.

Each answers its CMMS 0.11 contract's shape (docs/contracts/cmms-0.11) with our richer fields
beside it: `search` answers the fact hits as `results` and every hit (any kind) as `memories`;
`get_context` the fact and decision hits, the recall block (`context`) and every hit;
`semantic_search` the contract's `semantic_results`, or its `{"error": ...}` variant when no
embedding model is loaded.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Callable

from pydantic import Field

from hermes_cmms.common.bounds import count_in, query_text
from hermes_cmms.common.errors import InvalidInput, NoVectorIndex
from hermes_cmms.common.text import clean
from hermes_cmms.common.version import __version__
from hermes_cmms.common.answers import Item, receipt_response

from ._args import MAX_RESULTS, Tags, field, given
from ._contract import decision_response, fact_response


ALIASES: dict[str, dict[str, str]] = {}  # tool -> {earlier argument name: the contract's}
MAX_SEARCH = 1000  # search's most results (the contract's maximum); the hybrid pool bounds the work
DEFAULT_SOURCE = "user"  # remember's receipt when none is given (the contract's default)


Text = Annotated[str, Field(description="Free-text keywords, searched across the facts' subject, predicate and "
                                        "object (and every memory's text); '' (default): the newest facts.")]
Part = "Only facts with this {} (any case); '' (default) for any."


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def answers(hits: list[Item]) -> tuple[list[dict], list[dict]]:
        """The fact hits as fact_response (plus our item fields and score), and every hit as an item."""
        items = [hit.as_dict() for hit in hits]
        return [_fact_item(fact_response(hit), item) for hit, item in zip(hits, items) if hit.fact], items

    def ping() -> dict[str, Any]:
        """Check the memory server is up; returns status ok, its version, default scope and the scope's counts."""
        status = service.status(default_scope)  # never the store's totals: other scopes stay unseen
        return {"status": "ok", "ok": True, "server": "hermes-cmms", "version": __version__, "scope": default_scope,
                "memories": status["memories"], "indexed": status["indexed"],
                "embedder": status["embedder"], "writer": service.upkeep.index_writer}

    def remember(subject: Annotated[str, Field(description="The subject of the fact: who or what it is about.")],
                 predicate: Annotated[str, Field(description="The predicate/relation, e.g. 'lives in'.")],
                 object: Annotated[str, Field(description="The object of the fact: the value, e.g. 'Lisbon'.")],
                 confidence: Annotated[float, field("Confidence score 0.0-1.0 (default 1.0).",
                                                    minimum=0, maximum=1)] = 1.0,
                 source: Annotated[str, Field(description="Source identifier, stored as the fact's receipt "
                                                          "(default 'user'), e.g. 'slack'.")] = DEFAULT_SOURCE,
                 tags: Tags = None) -> dict[str, Any]:
        """Store a fact (subject, predicate, object) in the default scope; answers its provenance receipt and the fact."""
        memory_id = service.remember_fact(default_scope, subject, predicate, object, confidence=confidence,
                                          source=source.strip() or DEFAULT_SOURCE, tags=tags or ())
        memory = service.get(default_scope, [memory_id])[memory_id]  # as stored: a repeat reinforced the earlier
        return {"receipt": receipt_response(memory, "fact", "mcp:remember"), "fact": fact_response(memory),
                "stored": True, "id": memory_id, "scope": default_scope}

    def search(query: Text = "",
               subject: Annotated[str, Field(description=Part.format("subject"))] = "",
               predicate: Annotated[str, Field(description=Part.format("predicate"))] = "",
               limit: Annotated[int, field("Maximum number of results (1-1000, default 50).",
                                           minimum=1, maximum=MAX_SEARCH)] = 50,
               object: Annotated[str, Field(description=Part.format("object"))] = "",
               source: Annotated[str, Field(description="Only memories whose source (receipt) starts so; "
                                                        "'' (default) for any.")] = ""
               ) -> dict[str, Any]:
        """Search facts by keywords (hybrid) and filters, or list the newest; every hit of any kind is under memories."""
        limit, source = count_in(limit, "limit", MAX_SEARCH), given(source)
        fact = {"subject": given(subject), "predicate": given(predicate), "object": given(object)}
        if given(query):  # the whole hybrid pool (bounded), cut below: `limit` facts and `limit` hits
            hits = service.search(default_scope, query_text(query), MAX_SEARCH, source=source, fact=fact)
        else:
            hits = [replace(m, score=0.0) for m in service.newest_facts(default_scope, limit, fact=fact, source=source)]
        results, items = answers(hits)
        return {"results": results[:limit], "total": len(results[:limit]), "scope": default_scope,
                "memories": items[:limit]}

    def get_context(task: Annotated[str, Field(description="The task description or search query.")],
                    subject: Annotated[str, Field(description=Part.format("subject"))] = "",
                    max_results: Annotated[int, field("Maximum number of facts (and of decisions and memories) "
                                                      "to return (1-100, default 10).",
                                                      minimum=1, maximum=MAX_RESULTS)] = 10
                    ) -> dict[str, Any]:
        """Structured context for a task: its facts and decisions, the recall block Hermes would inject, every hit."""
        limit, subject = count_in(max_results, "max_results", MAX_RESULTS), given(subject)
        query = f"{query_text(task, 'task')} {subject}" if subject else query_text(task, "task")
        block, hits = service.context(default_scope, query, MAX_SEARCH)  # one search: the pool and the block
        facts, items = answers(hits)
        if subject:  # matched as search's subject filter: spaces collapsed, any case
            facts = [fact for fact in facts if _folded(fact["subject"]) == _folded(subject)]
        decisions = [{**decision_response(hit), "score": round(hit.score, 5)} for hit in hits if hit.kind == "decision"]
        return {"facts": facts[:limit], "decisions": decisions[:limit], "total": len(facts[:limit]),
                "scope": default_scope, "context": block,  # the recall hook's, packed from those hits
                "memories": items[:limit]}

    def semantic_search(query: Annotated[str, Field(description="Natural language query text; '' (default): "
                                                                "no results.")] = "",
                        top_k: Annotated[int, field("Maximum number of results (1-100, default 10).",
                                                    minimum=1, maximum=MAX_RESULTS)] = 10,
                        score_threshold: Annotated[float, field("Minimum similarity score 0.0-1.0 (cosine; "
                                                                "default 0).", minimum=0, maximum=1)] = 0.0
                        ) -> dict[str, Any]:
        """Search the default scope by meaning (vector similarity); with no embedding model loaded, an error object."""
        top_k = count_in(top_k, "top_k", MAX_RESULTS)
        if not 0.0 <= score_threshold <= 1.0:
            raise InvalidInput(f"Argument 'score_threshold' must be between 0 and 1, not {score_threshold}.")
        if not given(query):
            return {"semantic_results": [], "total": 0, "scope": default_scope, "results": []}
        try:
            found = service.semantic_search(default_scope, query_text(query), top_k, score_threshold)
        except NoVectorIndex as exc:  # keyword-only: the contract's error variant, not a failed call
            return {"error": str(exc)}
        return {"semantic_results": [_semantic_result(item) for item in found], "total": len(found),
                "scope": default_scope, "results": [item.as_dict() for item in found]}

    def metrics() -> dict[str, Any]:
        """Prometheus metrics of this server: its tool calls, errors, latencies; the default scope's
        memories, vectors and index lag."""
        return {"format": "prometheus-text-0.0.4", "exposition": service.upkeep.exposition(default_scope)}

    return [ping, remember, search, get_context, semantic_search, metrics]


def _folded(part: str) -> str:
    """A fact part as the store matches it (Store.facts_matching)."""
    return " ".join(clean(part).split()).casefold()


def _fact_item(fact: dict, item: dict) -> dict:
    """A fact hit: the contract's fact_response, then our item fields it lacks (kind, tags, score...)."""
    return {**fact, **{key: value for key, value in item.items() if key not in fact}}


def _semantic_result(item: Item) -> dict:
    """One of semantic_search's `semantic_results`: id, score (the cosine similarity within 0..1)
    and payload (a fact's parts, the receipt, the kind as memory_type, the text)."""
    parts = dict(zip(("subject", "predicate", "object"), item.fact)) if item.fact else {}
    return {"id": item.id, "score": round(min(1.0, max(0.0, item.similarity)), 5),
            "payload": {**parts, "source": item.source, "memory_type": item.kind, "content": item.content}}
