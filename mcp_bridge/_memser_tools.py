"""The memser tools: each names its scope (store_memory, recall_memory, forget_memory, list_memories,
consolidate_memories, audit_log)."""
from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

from pydantic import Field

from hermes_cmms.common.bounds import count_in, query_text
from hermes_cmms.common.vocabulary import MAX_AUDIT_OFFSET, MAX_AUDIT_PAGE, TIERS
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.common.lifecycle_rules import LIVE_STATES

from ._args import MAX_PAGE, MAX_RESULTS, Actor, Query, Scope, Source, Tags, receipt

ALIASES: dict[str, dict[str, str]] = {}  # tool -> {earlier argument name: the contract's}


def tools(service, default_scope: str) -> list[Callable[..., dict]]:
    """This family's tool functions, bound to one engine and the bridge's default scope."""

    def store_memory(content: Annotated[str, Field(description="What to remember.")], scope: Scope,
                     tags: Tags = None, source: Source = None,
                     ttl_seconds: Annotated[Optional[int], Field(
                         description="Forget after this many seconds (working memory).")] = None,
                     actor: Actor = None) -> dict[str, Any]:
        """Store a memory in the named scope; with ttl_seconds it expires."""
        item = service.store_note(scope, content, tags=tags or (), ttl_seconds=ttl_seconds,
                                  source=receipt("store_memory", source, actor))
        return {"stored": not item.reinforced, "reinforced": item.reinforced, "id": item.id, "scope": scope,
                "tier": item.tier, "kind": item.kind, "supersedes": list(item.supersedes)}

    def recall_memory(query: Query, scope: Scope,
                      k: Annotated[int, Field(description="Most results (1-100, default 5).")] = 5,
                      tags: Tags = None, actor: Actor = None) -> dict[str, Any]:
        """Hybrid search of the named scope, optionally only memories with all the given tags."""
        hits = service.search(scope, query_text(query), count_in(k, "k", MAX_RESULTS), tags=tags or ())
        return {"scope": scope, "results": [hit.as_dict() for hit in hits]}

    def forget_memory(scope: Scope,
                      memory_id: Annotated[Optional[str], Field(description="The id to delete.")] = None,
                      tier: Annotated[Optional[str], Field(
                          description="Delete every memory of this tier: working, episodic, semantic.")] = None,
                      tags: Tags = None, actor: Actor = None) -> dict[str, Any]:
        """Delete memories of the named scope from SQL, keyword and vector index (audit snapshot kept);
        vectors_pending: how many forgotten memories' vectors are still queued for removal (0: gone)."""
        if memory_id is not None:
            if tier is not None or tags:
                raise InvalidInput("Give either memory_id or tier/tags, not both.")
            gone = [service.forget(scope, memory_id, actor=receipt("forget_memory", None, actor))]  # (whole, if given short)
        else:
            gone = service.forget_where(scope, tier=tier, tags=tags or (), actor=receipt("forget_memory", None, actor))
        return {"forgotten": len(gone), "ids": gone, "scope": scope, "vectors_pending": service.upkeep.vectors_pending(scope)}

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
        return {"scope": scope, "total": total, "limit": limit, "offset": offset,
                "memories": [item.as_dict() for item in memories]}

    def consolidate_memories(scope: Scope,
                             session_id: Annotated[Optional[str], Field(
                                 description="Only this conversation session's memories.")] = None,
                             actor: Actor = None) -> dict[str, Any]:
        """Cluster the scope's new episodic memories into semantic summaries (originals kept)."""
        report = service.consolidate(scope, session_id, actor=receipt("consolidate_memories", None, actor))
        return report.as_dict()

    def audit_log(scope: Scope,
                  memory_id: Annotated[Optional[str], Field(description="Only events of this memory.")] = None,
                  action: Annotated[Optional[str], Field(
                      description="Only this action, e.g. remember, reinforce, supersede, forget, tool.")] = None,
                  limit: Annotated[int, Field(description=f"Most events (1-{MAX_AUDIT_PAGE}, default 50).")] = 50,
                  offset: Annotated[int, Field(description="Events to skip (default 0).")] = 0) -> dict[str, Any]:
        """The scope's audit trail, newest first (forgotten content is not shown here)."""
        events = service.audit_log(scope, memory_id=memory_id, action=action,
                                   limit=count_in(limit, "limit", MAX_AUDIT_PAGE),
                                   offset=count_in(offset, "offset", MAX_AUDIT_OFFSET, low=0))
        return {"scope": scope, "events": [event.as_dict() for event in events]}

    return [store_memory, recall_memory, forget_memory, list_memories, consolidate_memories, audit_log]
