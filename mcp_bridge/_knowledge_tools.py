"""The CMMS knowledge tools (default scope): learn, graph_search, route, audit."""
from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

from pydantic import Field

from hermes_cmms.common.bounds import count_in, query_text

from ._args import MAX_RESULTS, Query, Source, receipt


ALIASES: dict[str, dict[str, str]] = {}  # tool -> {earlier argument name: the contract's}


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def learn(text: Annotated[str, Field(description="Text to learn from: a message, notes, a document.")],
              source: Source = None,
              extract_beliefs: Annotated[bool, Field(description="Also store opinions as beliefs (default true).")] = True
              ) -> dict[str, Any]:
        """Keep a text and learn the facts, preferences, decisions, skills and beliefs in it."""
        return service.learn(default_scope, text, source=receipt("learn", source, None),
                             extract_beliefs=extract_beliefs)

    def graph_search(query: Annotated[Optional[str], Field(
                         description="Mode 1: entities named in this text, with their neighbours.")] = None,
                     entity_id: Annotated[Optional[str], Field(
                         description="Mode 2: this entity and its neighbours.")] = None,
                     source_id: Annotated[Optional[str], Field(
                         description="Mode 3: paths from this entity (with target_id).")] = None,
                     target_id: Annotated[Optional[str], Field(
                         description="Mode 3: paths to this entity (with source_id).")] = None,
                     max_depth: Annotated[int, Field(description="Longest path in hops (1-4, default 4).")] = 4,
                     limit: Annotated[int, Field(description="Most entities or paths (1-100, default 20).")] = 20
                     ) -> dict[str, Any]:
        """Search the entity graph built from facts: by query, by entity id, or paths between two."""
        return service.graph_search(default_scope, query=query, entity_id=entity_id, source_id=source_id,
                                    target_id=target_id, max_depth=count_in(max_depth, "max_depth", 4),
                                    limit=count_in(limit, "limit", MAX_RESULTS))

    def route(query: Query,
              limit: Annotated[int, Field(description="Most results (1-100, default 5).")] = 5) -> dict[str, Any]:
        """Answer a question from the retriever the 4-stage router picks; says which stage and why."""
        return service.route(default_scope, query_text(query), count_in(limit, "limit", MAX_RESULTS))

    def audit(audit_type: Annotated[str, Field(
                  description="all, orphans, receipts, lifecycle, confidence, vector_drift or graph_drift.")] = "all"
              ) -> dict[str, Any]:
        """Health checks on the default scope's stored data; findings and counts per check."""
        return service.audit(audit_type, default_scope)

    return [learn, graph_search, route, audit]
