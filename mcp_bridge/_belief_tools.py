"""The CMMS belief tools (default scope): set_belief, get_belief, resolve_conflict, reflect.

Each takes its CMMS 0.11 contract's arguments (docs/contracts/cmms-0.11) and answers the
contract's shape with our richer fields beside it; every belief is the contract's
belief_response (`proposition` is the text) plus ours (`proposition_key`, the normalised
proposition; `state`, the fine-grained lifecycle state; evidence and contradictions).
"""
from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

from pydantic import Field, WithJsonSchema

from hermes_cmms.common.bounds import count_in
from hermes_cmms.common.lifecycle_rules import LIVE_STATES
from hermes_cmms.common.vocabulary import LIFECYCLE_STATES, MAX_BELIEF_CHARS, REFLECT_MODES, SOURCE_TYPES, STRATEGIES

from ._args import MAX_RESULTS, field, given, receipt

ALIASES: dict[str, dict[str, str]] = {  # tool -> {earlier argument name: the contract's}
    "set_belief": {"text": "proposition", "supersedes": "replace_belief_id"},
    "get_belief": {"text": "proposition"},
    "resolve_conflict": {"belief_a": "belief_a_id", "belief_b": "belief_b_id", "strategy": "resolution",
                         "merged_text": "new_proposition"},
}
RESOLUTIONS = STRATEGIES[:-1]  # the contract's; "auto" is ours
SOURCE_ITEMS = {"type": "object", "required": ["source_type", "source_id"], "properties": {
    "source_type": {"type": "string", "enum": list(SOURCE_TYPES)},
    "source_id": {"type": "string", "description": "A memory id of this scope, dashed or not (cited as "
                                                   "evidence, shown dashed), or any outside reference (kept "
                                                   "exactly as given)."},
    "weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5}}}
PROPOSITION_CHARS = MAX_BELIEF_CHARS  # the contracts' maxLength, 2048


def _optional(kind: type, json_type: str, description: str, **schema):
    """An argument the contract leaves optional without a default: advertised as the contract's
    plain type (not "or null"); not given, it is None."""
    return Annotated[Optional[kind], WithJsonSchema({"type": json_type, "description": description, **schema})]


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def set_belief(proposition: Annotated[str, field(
                       "The belief proposition text, 1-2048 characters, e.g. 'Postgres suits this project'.",
                       minLength=1, maxLength=PROPOSITION_CHARS)],
                   confidence: Annotated[float, field("Confidence score 0.0-1.0 (default 0.5).",
                                                       minimum=0, maximum=1)] = 0.5,
                   sources: Annotated[list[dict[str, Any]], field(
                       "Supporting evidence sources: {source_type (fact, decision, observation or user_statement), "
                       "source_id, weight 0-1 (default 0.5)}; a source_id naming a memory of this scope cites it.",
                       items=SOURCE_ITEMS)] = [],  # noqa: B006 - never mutated
                   tags: Annotated[list[str], Field(description="Tags to categorise the belief.")] = [],  # noqa: B006
                   source: Annotated[str, Field(description="Source identifier, stored as the belief's receipt "
                                                            "(default 'system').")] = "system",
                   replace_belief_id: _optional(str, "string", "If set, supersede the referenced belief and link "
                                                               "this new one.") = None,
                   evidence: Annotated[Optional[str], Field(description="A note on why (an evidence row).")] = None,
                   evidence_ids: Annotated[Optional[list[str]], Field(
                       description="Ids of memories of this scope that support it.")] = None) -> dict[str, Any]:
        """Create, reinforce (the same proposition again) or supersede a belief (replace_belief_id); answers the belief, its receipt and the superseded belief."""
        return service.set_belief(default_scope, proposition, confidence=confidence, evidence=evidence,
                                  evidence_ids=evidence_ids or (), source=receipt("set_belief", source, None),
                                  tags=tags, supersedes=replace_belief_id, sources=sources,
                                  creator="mcp:set_belief")

    def get_belief(proposition: Annotated[str, Field(
                       description="Search proposition text (hybrid keyword + semantic search, best first); "
                                   "'' (default) for any.")] = "",
                   lifecycle_state: Annotated[str, field(
                       f"Filter by lifecycle state: {', '.join(LIFECYCLE_STATES)} (default active: current and "
                       "not contradicted; any when state or belief_id is given); '' for any.")] = "active",
                   min_confidence: _optional(float, "number", "Minimum confidence threshold 0.0-1.0.",
                                             minimum=0, maximum=1) = None,
                   tags: _optional(list[str], "array", "Filter by tags (all must be present).",
                                   items={"type": "string"}) = None,
                   source: _optional(str, "string", "Filter by source identifier (the receipt, or its start).") = None,
                   creator: _optional(str, "string", "Filter by creator identifier: the door that wrote it, e.g. "
                                                     "'mcp' or 'mcp:set_belief'.") = None,
                   source_id: _optional(str, "string", "Filter by source_id in the belief's source_ids list.") = None,
                   limit: Annotated[int, field("Maximum number of results (1-100, default 10).",
                                                minimum=1, maximum=MAX_RESULTS)] = 10,
                   state: Annotated[Optional[str], Field(
                       description=f"Only this fine-grained state: {', '.join(LIVE_STATES)}, superseded or "
                                   "contested.")] = None,
                   belief_id: Annotated[Optional[str], Field(description="Exactly this belief.")] = None,
                   offset: Annotated[int, Field(description="Beliefs to skip (default 0).")] = 0) -> dict[str, Any]:
        """Search beliefs by proposition, lifecycle state, confidence, tags, source, creator or cited source; answers the beliefs, total (how many are returned), matched (how many match in all, for paging with offset) and the query used."""
        coarse = given(lifecycle_state)
        if coarse == "active" and (state is not None or belief_id is not None):
            coarse = None  # the default gives way to a finer filter
        return service.get_belief(default_scope, text=given(proposition), state=state, lifecycle_state=coarse,
                                  min_confidence=min_confidence, tags=tags or (), source=source, creator=creator,
                                  source_id=source_id, belief_id=belief_id,
                                  limit=count_in(limit, "limit", MAX_RESULTS),
                                  offset=count_in(offset, "offset", 10**9, low=0))

    def resolve_conflict(belief_a_id: Annotated[str, Field(description="UUID of the first belief in the conflict.")],
                         belief_b_id: Annotated[str, Field(description="UUID of the second belief in the conflict.")],
                         resolution: Annotated[str, field(
                             "keep_a: belief_a stays active, belief_b is discarded (archived); keep_b: the "
                             "reverse; merge: both "
                             "stay active, their conflict settled, and a new merged belief (new_proposition) is "
                             "created from them; discard_both: both are "
                             "archived (shown discarded). Also auto (ours): the higher confidence wins, then more "
                             "evidence, then the newer, and the other is superseded.", enum=list(RESOLUTIONS))],
                         new_proposition: _optional(str, "string", "Proposition for a new merged belief (required "
                                                                   "when resolution=merge).",
                                                    minLength=1, maxLength=PROPOSITION_CHARS) = None,
                         auto_resolve: Annotated[bool, Field(
                             description="Decide by confidence instead (never discards): a confidence gap above "
                                         "0.5 supersedes the lower belief; otherwise both are left contradicted "
                                         "(default false).")] = False) -> dict[str, Any]:
        """Resolve a conflict between two beliefs; answers both as they are now, what was applied, the state moves (events) and a receipt."""
        return service.resolve_conflict(default_scope, belief_a_id, belief_b_id, resolution,
                                        merged_text=new_proposition, auto_resolve=auto_resolve,
                                        actor="mcp:resolve_conflict")

    def reflect(mode: Annotated[str, field(
                    "Analysis mode: overview, contradictions, relations (contradiction / entailment / neutral "
                    "pairs), decay, topics, evidence_audit or confidence (default overview).",
                    enum=list(REFLECT_MODES))] = "overview",
                topic: _optional(str, "string", "Optional topic/tag filter: only beliefs with this topic or tag.") = None,
                min_confidence: Annotated[float, field("Minimum confidence threshold 0.0-1.0 (default 0).",
                                                        minimum=0, maximum=1)] = 0.0,
                limit: Annotated[int, field("Maximum number of beliefs to analyse, the newest (0 = all, "
                                             "default 50).", minimum=0)] = 50,
                context: _optional(str, "string", "Optional context identifier for the relations mode's same_context "
                                                  "gate: beliefs tagged context:<it> share it.") = None,
                strict_same_context: Annotated[bool, Field(
                    description="If true (default), in the relations mode a pair not in the same context is "
                                "neutral.")] = True) -> dict[str, Any]:
        """Analyse the belief store: overview, contradictions, relations, decay, topics, evidence_audit or confidence."""
        return service.reflect(default_scope, mode, topic=given(topic), min_confidence=min_confidence,
                               limit=count_in(limit, "limit", 10**9, low=0), context=given(context),
                               strict_same_context=strict_same_context)

    return [set_belief, get_belief, resolve_conflict, reflect]
