"""The CMMS belief tools (default scope): set_belief, get_belief, resolve_conflict, reflect."""
from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

from pydantic import Field

from hermes_cmms.common.bounds import count_in
from hermes_cmms.common.lifecycle_rules import LIVE_STATES

from ._args import MAX_RESULTS, Source, Tags, receipt


ALIASES: dict[str, dict[str, str]] = {}  # tool -> {earlier argument name: the contract's}


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def set_belief(text: Annotated[str, Field(description="The proposition, e.g. 'Postgres suits this project'.")],
                   confidence: Annotated[Optional[float], Field(description="How sure, 0 to 1.")] = None,
                   evidence: Annotated[Optional[str], Field(description="A note on why.")] = None,
                   evidence_ids: Annotated[Optional[list[str]], Field(
                       description="Ids of memories that support it.")] = None,
                   source: Source = None, tags: Tags = None,
                   supersedes: Annotated[Optional[str], Field(description="The id of a belief it replaces.")] = None
                   ) -> dict[str, Any]:
        """Create a belief, reinforce the same proposition, or supersede a belief by id."""
        return service.set_belief(default_scope, text, confidence=confidence, evidence=evidence,
                                  evidence_ids=evidence_ids or (), source=receipt("set_belief", source, None),
                                  tags=tags or (), supersedes=supersedes)

    def get_belief(text: Annotated[Optional[str], Field(description="Beliefs about this, best first.")] = None,
                   state: Annotated[Optional[str], Field(
                       description=f"Only this state: {', '.join(LIVE_STATES)}, superseded or contested.")] = None,
                   min_confidence: Annotated[Optional[float], Field(description="Lowest confidence, 0 to 1.")] = None,
                   tags: Tags = None,
                   source: Annotated[Optional[str], Field(description="Only beliefs whose source starts so.")] = None,
                   belief_id: Annotated[Optional[str], Field(description="Exactly this belief.")] = None,
                   limit: Annotated[int, Field(description="Most beliefs (1-100, default 20).")] = 20,
                   offset: Annotated[int, Field(description="Beliefs to skip (default 0).")] = 0) -> dict[str, Any]:
        """Beliefs with their confidence, evidence and contradictions, filtered."""
        return service.get_belief(default_scope, text=text, state=state, min_confidence=min_confidence,
                                  tags=tags or (), source=source, belief_id=belief_id,
                                  limit=count_in(limit, "limit", MAX_RESULTS),
                                  offset=count_in(offset, "offset", 10**9, low=0))

    def resolve_conflict(belief_a: Annotated[str, Field(description="The id of one belief.")],
                         belief_b: Annotated[str, Field(description="The id of the belief it contradicts.")],
                         strategy: Annotated[str, Field(
                             description="keep_a, keep_b, merge, discard_both, or auto (confidence rule).")],
                         merged_text: Annotated[Optional[str], Field(
                             description="For merge: the text of the merged belief.")] = None) -> dict[str, Any]:
        """Settle two contradicting beliefs; the losers are kept, marked superseded or archived."""
        return service.resolve_conflict(default_scope, belief_a, belief_b, strategy, merged_text=merged_text,
                                        actor="mcp:resolve_conflict")

    def reflect(mode: Annotated[str, Field(
                    description="overview, contradictions, decay, topics, evidence_audit or confidence.")] = "overview"
                ) -> dict[str, Any]:
        """A report on the stored beliefs and their evidence, in one of six modes."""
        return service.reflect(default_scope, mode)

    return [set_belief, get_belief, resolve_conflict, reflect]
