"""A stored memory as a verb answers it: the row's JSON read once, its fact's parts beside it
(common/answers.py holds the shape and the one JSON form of a memory at every door)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from ..common.answers import ITEM_KEYS, Item
from ..store.models import Memory

if TYPE_CHECKING:
    from ..store.store import Store


def item(memory: Memory, facts: Optional[Mapping[str, tuple]] = None, *, score: Optional[float] = None,
         similarity: Optional[float] = None) -> Item:
    """`memory` as an answer; its fact's parts when `facts` (Store.facts) holds it."""
    return Item(id=memory.id, scope=memory.scope, content=memory.content, kind=memory.kind, tier=memory.tier,
                role=memory.role, tags=tuple(json.loads(memory.tags or "[]")), source=memory.source,
                session_id=memory.session_id, confidence=memory.confidence, state=memory.state,
                superseded_by=memory.superseded_by, reinforcements=memory.access_count,
                created_at=memory.created_at, updated_at=memory.updated_at, expires_at=memory.expires_at,
                pinned=bool(memory.pinned), corrected_at=memory.corrected_at, speaker=memory.speaker, turn=memory.turn,
                detail=json.loads(memory.detail or "{}"),
                fact=tuple(facts[memory.id]) if facts and memory.id in facts else None,
                score=score, similarity=similarity)


def items(store: "Store", scope: str, memories: Sequence[Memory], scores: Sequence[Optional[float]] = (),
          similarities: Sequence[Optional[float]] = ()) -> list[Item]:
    """`memories` of `scope` as answers, their facts read in one query."""
    facts = store.facts([m.id for m in memories], scope=scope)
    return [item(m, facts, score=scores[i] if scores else None,
                 similarity=similarities[i] if similarities else None) for i, m in enumerate(memories)]


def memory_dict(memory: Memory, keys: Sequence[str] = ITEM_KEYS,
                facts: Optional[Mapping[str, tuple]] = None, **extra) -> dict:
    """`memory` in the one JSON shape (Item.as_dict) of the fields `keys`, then its fact's
    parts when `facts` holds it, then `extra`."""
    return item(memory, facts).as_dict(keys, **extra)
