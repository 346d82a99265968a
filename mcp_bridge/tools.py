"""The MCP tool catalogue: thin typed functions over the one engine, returning JSON objects.

Two families share one store: the CMMS names (`remember`, `search`, ...) work in the bridge's
default scope; the memser names (`store_memory`, `recall_memory`, ...) name their scope.
"""
from __future__ import annotations

import functools
import inspect
import json
import logging
import typing
from typing import Annotated, Any, Callable, Optional

from pydantic import Field, TypeAdapter, ValidationError, WithJsonSchema

from hermes_cmms.common.version import __version__
from hermes_cmms.common.bounds import count_in, query_text
from hermes_cmms.common.errors import CmmsError, InvalidInput
from hermes_cmms.recall.rank import Hit
from hermes_cmms.recall.shape import ITEM_KEYS, hit_dict, iso, memory_dict
from hermes_cmms.common.lifecycle_rules import LIVE_STATES
from hermes_cmms.common.checks import TIERS
from hermes_cmms.service import MemoryService
from hermes_cmms.common.text import brief, escape_surrogates

log = logging.getLogger(__name__)

MAX_RESULTS = 100
MAX_PAGE = 500

Query = Annotated[str, Field(description="What to look for, in plain words.")]
Scope = Annotated[str, Field(description="The memory scope, e.g. 'local:default' (Hermes CLI) or "
                                         "'user:telegram:12345' (one gateway user).")]
Tags = Annotated[Optional[list[str]], Field(description="Labels; as a filter, all must be present.")]
Actor = Annotated[Optional[str], Field(description="Who is acting (recorded with the write).")]
Source = Annotated[Optional[str], Field(description="Where it came from (a receipt), e.g. 'slack'.")]


def _receipt(tool: str, source: Optional[str], actor: Optional[str]) -> str:
    receipt = source.strip() if source and source.strip() else f"mcp:{tool}"
    return f"{receipt} by {actor.strip()}" if actor and actor.strip() else receipt


def catalogue(service: MemoryService, default_scope: str) -> list[Callable[..., dict]]:
    """The tool functions, bound to one engine and the default scope of the CMMS names."""

    def hits_out(hits: list[Hit]) -> list[dict]:
        facts = service.store.facts([h.memory.id for h in hits])
        return [hit_dict(h, ITEM_KEYS, facts) for h in hits]

    # -- CMMS names (default scope) -----------------------------------------------------------

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
                                          confidence=confidence, source=_receipt("remember", source, None),
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

    # -- memser names (explicit scope) ----------------------------------------------------------

    def store_memory(content: Annotated[str, Field(description="What to remember.")], scope: Scope,
                     tags: Tags = None, source: Source = None,
                     ttl_seconds: Annotated[Optional[int], Field(
                         description="Forget after this many seconds (working memory).")] = None,
                     actor: Actor = None) -> dict[str, Any]:
        """Store a memory in the named scope; with ttl_seconds it expires."""
        item = service.store_note(scope, content, tags=tags or (), ttl_seconds=ttl_seconds,
                                  source=_receipt("store_memory", source, actor))
        return {"stored": not item.reinforced, "reinforced": item.reinforced, "id": item.id, "scope": scope,
                "tier": item.tier, "kind": item.kind, "supersedes": list(item.supersedes)}

    def recall_memory(query: Query, scope: Scope,
                      k: Annotated[int, Field(description="Most results (1-100, default 5).")] = 5,
                      tags: Tags = None, actor: Actor = None) -> dict[str, Any]:
        """Hybrid search of the named scope, optionally only memories with all the given tags."""
        hits = service.search(scope, query_text(query), count_in(k, "k", MAX_RESULTS), tags=tags or ())
        return {"scope": scope, "results": hits_out(hits)}

    def forget_memory(scope: Scope,
                      memory_id: Annotated[Optional[str], Field(description="The id to delete.")] = None,
                      tier: Annotated[Optional[str], Field(
                          description="Delete every memory of this tier: working, episodic, semantic.")] = None,
                      tags: Tags = None, actor: Actor = None) -> dict[str, Any]:
        """Delete memories of the named scope from SQL, keyword and vector index (audit snapshot kept)."""
        if memory_id is not None:
            if tier is not None or tags:
                raise InvalidInput("Give either memory_id or tier/tags, not both.")
            service.forget(scope, memory_id, actor=_receipt("forget_memory", None, actor))
            return {"forgotten": 1, "ids": [memory_id], "scope": scope}
        gone = service.forget_where(scope, tier=tier, tags=tags or (),
                                    actor=_receipt("forget_memory", None, actor))
        return {"forgotten": len(gone), "ids": gone, "scope": scope}

    def list_memories(scope: Scope,
                      tier: Annotated[Optional[str], Field(description=f"Only this tier: {', '.join(TIERS)}.")] = None,
                      tags: Tags = None,
                      state: Annotated[Optional[str], Field(
                          description=f"Only this lifecycle state: {', '.join(LIVE_STATES)}.")] = None,
                      limit: Annotated[int, Field(description="Page size (1-500, default 50).")] = 50,
                      offset: Annotated[int, Field(description="Items to skip (default 0).")] = 0
                      ) -> dict[str, Any]:
        """Page through the named scope's memories, newest first, with the total count."""
        memories, total = service.page(scope, tier=tier, tags=tags or (), state=state,
                                       limit=count_in(limit, "limit", MAX_PAGE),
                                       offset=count_in(offset, "offset", 10**9, low=0))
        facts = service.store.facts([m.id for m in memories])
        return {"scope": scope, "total": total, "limit": limit, "offset": offset,
                "memories": [memory_dict(m, facts=facts) for m in memories]}

    def consolidate_memories(scope: Scope,
                             session_id: Annotated[Optional[str], Field(
                                 description="Only this conversation session's memories.")] = None,
                             actor: Actor = None) -> dict[str, Any]:
        """Cluster the scope's new episodic memories into semantic summaries (originals kept)."""
        report = service.consolidate(scope, session_id, actor=_receipt("consolidate_memories", None, actor))
        return report.as_dict()

    def audit_log(scope: Scope,
                  memory_id: Annotated[Optional[str], Field(description="Only events of this memory.")] = None,
                  action: Annotated[Optional[str], Field(
                      description="Only this action, e.g. remember, reinforce, supersede, forget, tool.")] = None,
                  limit: Annotated[int, Field(description="Most events (1-500, default 50).")] = 50,
                  offset: Annotated[int, Field(description="Events to skip (default 0).")] = 0) -> dict[str, Any]:
        """The scope's audit trail, newest first (forgotten content is not shown here)."""
        events = service.audit_log(scope, memory_id=memory_id, action=action,
                                   limit=count_in(limit, "limit", MAX_PAGE),
                                   offset=count_in(offset, "offset", 10**9, low=0))
        return {"scope": scope, "events": [
            {"at": iso(e.at), "action": e.action, "actor": e.actor, "memory_id": e.memory_id,
             "detail": json.loads(e.detail or "{}"), "snapshot_kept": e.snapshot is not None} for e in events]}

    # -- knowledge (default scope) --------------------------------------------------------------

    def learn(text: Annotated[str, Field(description="Text to learn from: a message, notes, a document.")],
              source: Source = None,
              extract_beliefs: Annotated[bool, Field(description="Also store opinions as beliefs (default true).")] = True
              ) -> dict[str, Any]:
        """Keep a text and learn the facts, preferences, decisions, skills and beliefs in it."""
        return service.learn(default_scope, text, source=_receipt("learn", source, None),
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

    def metrics() -> dict[str, Any]:
        """Prometheus metrics of this server: its tool calls, errors, latencies; the default scope's
        memories, vectors and index lag."""
        from hermes_cmms.ops.metrics import exposition

        return {"format": "prometheus-text-0.0.4", "exposition": exposition(service, default_scope)}

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
                                  evidence_ids=evidence_ids or (), source=_receipt("set_belief", source, None),
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

    return [ping, remember, search, get_context, semantic_search,
            store_memory, recall_memory, forget_memory, list_memories, consolidate_memories, audit_log,
            learn, graph_search, route, audit, metrics, set_belief, get_belief, resolve_conflict, reflect]


KINDS = {"integer": "a whole number", "number": "a number", "string": "a string",
         "array": "a list of strings", "boolean": "true or false"}


def _kind(schema: dict) -> str:
    """What a JSON schema asks for, in words."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") not in (None, "null"):
            return KINDS.get(option["type"], option["type"])
    return "a value"


GIVEN = {bool: "true or false", int: "a whole number", float: "a number", str: "a string", dict: "an object"}


def _given(value) -> str:
    """What a JSON value is, in words: a list by what it holds ("a list holding a list")."""
    if not isinstance(value, list):
        return GIVEN.get(type(value), "null" if value is None else type(value).__name__)
    odd = [item for item in value if not isinstance(item, str)][:1]
    if not odd:
        return "a list of strings" if value else "an empty list"
    return f"a list holding {'a list' if isinstance(odd[0], list) else _given(odd[0])}"


def _json_safe(value):
    """A result the SDK can serialise: an echoed argument (a scope, an id) may hold a lone
    surrogate, shown escaped (`\\ud800`) as the store keeps it."""
    if isinstance(value, dict):  # keys too
        return {escape_surrogates(key) if isinstance(key, str) else key: _json_safe(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return escape_surrogates(value) if isinstance(value, str) else value


def guarded(fn: Callable[..., dict], tool_error: type[Exception],
            audit: Optional[Callable[[str, dict, bool, str], None]] = None,
            metrics: Any = None, confined: Optional[str] = None) -> Callable[..., dict]:
    """`fn` as the SDK should see it: the same typed JSON schema, but arguments are checked
    here so a wrong one gets one sentence ("Argument 'limit' must be a whole number, not a
    string.") instead of a validation dump, and engine errors become the SDK's tool error.
    With `metrics` (the service's hermes_cmms.ops.metrics.Metrics) each call is counted, timed
    and traced. With `confined` (a bridge started with --scope) a `scope` argument naming any
    other scope is refused."""
    hints = typing.get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn)
    adapters = {name: TypeAdapter(hints[name]) for name in signature.parameters}
    schemas = {name: adapter.json_schema() for name, adapter in adapters.items()}

    required = [name for name, p in signature.parameters.items() if p.default is inspect.Parameter.empty]

    @functools.wraps(fn)
    def call(**kwargs):
        if metrics is None:
            return audited(**kwargs)
        scope = kwargs.get("scope")
        with metrics.tool_call("mcp", fn.__name__, scope if isinstance(scope, str) else None):
            return audited(**kwargs)

    def audited(**kwargs):
        try:
            result = checked(**kwargs)
        except Exception as exc:
            if audit is not None:
                audit(fn.__name__, kwargs, False, str(exc))
            raise
        if audit is not None:
            audit(fn.__name__, kwargs, True, "")
        return result

    def checked(**kwargs):
        for name in required:
            if kwargs.get(name) is None:
                raise tool_error(f"Missing required argument {name!r}.")
        for name, value in kwargs.items():
            try:
                kwargs[name] = adapters[name].validate_python(value, strict=True)
            except ValidationError:
                raise tool_error(f"Argument {name!r} must be {_kind(schemas[name])}, not {_given(value)}.") from None
        if confined is not None and "scope" in kwargs and kwargs["scope"] != confined:
            raise tool_error(f"This bridge serves only the scope {brief(confined, 120)!r} (--scope); "
                             "it cannot reach another scope.")
        try:
            return _json_safe(fn(**kwargs))
        except CmmsError as exc:
            raise tool_error(brief(str(exc))) from None
        except Exception as exc:  # noqa: BLE001 - a bug or a broken index: say so, keep serving
            log.exception("hermes-cmms: MCP tool %s failed", fn.__name__)
            raise tool_error(f"The {fn.__name__} tool failed inside hermes-cmms "
                             f"({type(exc).__name__}: {exc}).") from None

    # Required arguments default to None for the SDK, so that a missing one reaches the check
    # above; the schema still lists them as required (see server.build).
    parameters = [p.replace(annotation=Annotated[Any, WithJsonSchema(schemas[p.name])],
                            default=None if p.name in required else p.default)
                  for p in signature.parameters.values()]
    call.__signature__ = signature.replace(parameters=parameters, return_annotation=hints["return"])
    call.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": hints["return"]}
    del call.__wrapped__
    call.required = required
    return call
