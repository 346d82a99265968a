"""The CMMS knowledge tools (default scope): learn, graph_search, route, audit.

Each answers its CMMS 0.11 contract's shape (docs/contracts/cmms-0.11) with our richer fields
beside it: `learn` the contract's buckets with our `learned` list (and a `preferences` bucket);
`graph_search` nodes, edges and paths with our `mode` answer (its paths as `path_steps`);
`route` one of the contract's four stages with our stage and retriever as `stage_name` and
`retriever`; `audit` errors, warnings and stats with our findings and counts.
"""
from __future__ import annotations

from typing import Annotated, Any, Callable

from pydantic import Field

from hermes_cmms.common.bounds import count_in
from hermes_cmms.common.vocabulary import AUDIT_CHOICES, AUDIT_CONTRACT_TYPES
from ._args import MAX_RESULTS, field
from ._contract import graph_view, learn_answer, route_answer

ALIASES: dict[str, dict[str, str]] = {"route": {"limit": "top_k"}}  # tool -> {earlier name: the contract's}
DEFAULT_SOURCE = "user"  # learn's receipt when none is given (the contract's default)
EXTRA_AUDIT_TYPES = tuple(t for t in AUDIT_CHOICES if t not in AUDIT_CONTRACT_TYPES)


def _entity(description: str):
    return Field(description=f"{description}: an entity id, or its name ('Server Alpha', 'serveralpha'); "
                             "'' (default) for none.")


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def learn(text: Annotated[str, Field(description="Text to learn from: a message, notes, a document.")],
              source: Annotated[str, Field(description="Where the text came from (its receipt), e.g. 'slack'; "
                                                       "the items learned are stored as 'learn:<source>'.")
                                ] = DEFAULT_SOURCE,
              extract_beliefs: Annotated[bool, Field(description="Also store the opinions read as beliefs.")] = False,
              min_belief_confidence: Annotated[float, field(
                  "Beliefs read with a lower confidence (0.0-1.0) are not stored.", minimum=0.0, maximum=1.0)] = 0.6
              ) -> dict[str, Any]:
        """Keep a text and learn the facts, decisions, skills, preferences and (with
        extract_beliefs) beliefs in it; answers each bucket with its receipts."""
        answer = service.learn(default_scope, text, source=source.strip() or DEFAULT_SOURCE,
                               extract_beliefs=extract_beliefs, min_belief_confidence=min_belief_confidence)
        return learn_answer(service, default_scope, text, answer, "mcp:learn")

    def graph_search(query: Annotated[str, Field(
                         description="Text naming entities: those it names, with their neighbours; "
                                     "'' (default) for none.")] = "",
                     entity_id: Annotated[str, _entity("This entity and its neighbours")] = "",
                     source_id: Annotated[str, _entity("Paths from this entity (with target_id)")] = "",
                     target_id: Annotated[str, _entity("Paths to this entity (with source_id)")] = "",
                     max_depth: Annotated[int, Field(description="Longest path in hops (1-4, default 4).")] = 4,
                     limit: Annotated[int, Field(description="Most entities or paths (1-100, default 20).")] = 20
                     ) -> dict[str, Any]:
        """Search the entity graph built from facts. Precedence: source_id with target_id (paths),
        else entity_id (one entity), else query (the entities it names); the arguments set
        aside are listed in `ignored`. Answers nodes, edges and paths."""
        answer = service.graph_search(default_scope, query=query, entity_id=entity_id, source_id=source_id,
                                      target_id=target_id, max_depth=count_in(max_depth, "max_depth", 4),
                                      limit=count_in(limit, "limit", MAX_RESULTS))
        return {**graph_view(answer), **answer}

    def route(query: Annotated[str, Field(description="The question, in plain words; '' (default) routes "
                                                      "nowhere (stage 4).")] = "",
              top_k: Annotated[int, field("Most results (1-100).", minimum=1, maximum=MAX_RESULTS)] = 10,
              score_threshold: Annotated[float, field(
                  "Semantic matches below this cosine similarity (0.0-1.0) do not count; the semantic stage "
                  "answers only from 0.45 on.", minimum=0.0, maximum=1.0)] = 0.0) -> dict[str, Any]:
        """Answer a question through the 4-stage router (1 rules, 2 semantic, 3 graph, 4 LLM or
        nothing found); says which stage answered and why."""
        answer = service.route(default_scope, query, count_in(top_k, "top_k", MAX_RESULTS), score_threshold)
        return route_answer(answer)

    def audit(audit_type: Annotated[str, field(
                  "full (every check, default), consistency (receipts, lifecycle, graph and vector drift), "
                  f"orphans or confidence; our finer types {', '.join(EXTRA_AUDIT_TYPES)} are accepted too.",
                  enum=list(AUDIT_CONTRACT_TYPES))] = "full"
              ) -> dict[str, Any]:
        """Health checks on the default scope's stored data: errors, warnings, the confidence
        distribution, and findings and counts per check."""
        return service.upkeep.audit(audit_type, default_scope)

    return [learn, graph_search, route, audit]
