"""The duplicate check of an explicit semantic note against its scope's nearest memories."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..common import lifecycle_rules as lifecycle
from ..store.store import NewMemory
from ..vectors.indexer import query_vector

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

# Vector near-duplicates must also pass lifecycle.same_gist (same numbers, same content words but
# one). Conversation messages that repeat older ones are folded by consolidation (consolidate.py).
DUPLICATE_SIMILARITY = 0.95  # an explicit note this close to a current one reinforces it
SUPERSEDE_SIMILARITY = 0.80  # a semantic note this close (but not a duplicate) replaces it


def judge(engine: "Engine", item: NewMemory) -> None:
    """Compare an explicit semantic note with its scope's nearest current memories: a near
    duplicate is reinforced instead, a close one of the same kind is superseded by it.
    Without a vector index only exact repeats are caught (in the store)."""
    try:
        vector = query_vector(engine.indexer, item.content)
        if vector is None:
            return
        near = engine.indexer.vectors.query(item.scope, vector, 5)
    except Exception as exc:  # noqa: BLE001 - the write goes ahead without the comparison
        log.warning("hermes-cmms: duplicate check skipped: %s", exc)
        return
    found = engine.store.get([m for m, _ in near], item.scope)
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
