"""The SQL of steering by hand (lifecycle/steer.py): a memory pinned or retagged, the memory as
a user may steer it, and what a forget would delete, counted by the forget's own plan
(store/_steer.py) without changing anything."""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Optional, Sequence

from sqlalchemy import Connection, func, select, update

from ..store import recall_events
from ..store._forget import forgetting
from ..store._knowledge import knowledge_clauses, orphaned_entities
from ..store._rows import _by_ids
from ..store._steer import forget_plan
from ..store.models import Fact, Memory
from ..store.store import event, record

if TYPE_CHECKING:
    from ..store.store import Store


def forget_preview(store: Store, scope: str, ids: Sequence[str]) -> Optional[dict]:
    """What forgetting the memories `ids` of `scope` would delete, changing nothing:
    {"memories": [Memory], "cascaded": [(Memory, why)], "facts", "links", "beliefs",
    "evidence", "relations", "entities", "vectors", "reembedded", "restored", "snapshots",
    "recalls" (lines of recall events naming them)};
    the id of the first one not in `scope` (as a str) instead when one is missing."""
    with store.read() as conn:
        now = time.time()
        found = {} if forgetting(conn, scope) else {i: m for i, m in _by_ids(conn, scope, ids).items()
                                                    if m.expires_at is None or m.expires_at > now}
        missing = next((i for i in ids if i not in found), None)
        if missing is not None:
            return missing
        plan = forget_plan(conn, scope, [found[i] for i in dict.fromkeys(ids)], scrub_context=True)
        gone = plan.ids
        count = lambda table, clause: conn.execute(  # noqa: E731
            select(func.count()).select_from(table).where(clause)).scalar_one()
        counts = {table.__tablename__: count(table, clause) for table, clause in knowledge_clauses(scope, gone)}
        restored = conn.execute(select(func.count()).select_from(Memory).where(
            Memory.superseded_by.in_(gone), Memory.id.not_in(gone))).scalar_one()
        return {"memories": [m for m in plan.rows if m.id not in plan.cascaded],
                "cascaded": [(m, plan.cascaded[m.id]) for m in plan.rows if m.id in plan.cascaded],
                "facts": count(Fact, Fact.memory_id.in_(gone)), "links": counts["links"],
                "beliefs": counts["beliefs"], "evidence": counts["evidence"], "relations": counts["relations"],
                "entities": len(orphaned_entities(conn, gone)), "vectors": len(gone),
                "reembedded": len(plan.reembed), "restored": restored,
                "snapshots": len(gone) - len(plan.cascaded),
                "recalls": count(recall_events.RecalledMemory, recall_events.naming(gone))}


def set_pinned(store: Store, scope: str, memory_id: str, pinned: bool, actor: str) -> Optional[Memory]:
    """Pin (or unpin) a memory of `scope`; None when it is not there. Pinning a working
    memory ends its expiry (a pinned memory never expires); unpinning leaves it lasting.
    Audited ('pin' / 'unpin', with the expiry it had)."""
    now = time.time()
    with store.writing() as conn:
        memory = _steerable(conn, scope, memory_id)
        if memory is None:
            return None
        values = {"pinned": int(pinned), "updated_at": now, **({"expires_at": None} if pinned else {})}
        conn.execute(update(Memory).where(Memory.id == memory.id).values(**values))
        detail = {"expired_at": memory.expires_at} if pinned and memory.expires_at else {}
        record(conn, [event(now, "pin" if pinned else "unpin", actor, scope, memory.id, **detail)])
        return memory


def retag(store: Store, scope: str, memory_id: str, add: Sequence[str], remove: Sequence[str], actor: str,
          most: int) -> Optional[list[str]]:
    """A memory's tags with `add` added and `remove` removed (in this order, each once);
    None when it is not in `scope`; ValueError (the count) past `most` tags. Audited ('tag')."""
    now = time.time()
    with store.writing() as conn:
        memory = _steerable(conn, scope, memory_id)
        if memory is None:
            return None
        tags = [t for t in dict.fromkeys([*json.loads(memory.tags or "[]"), *add]) if t not in set(remove)]
        if len(tags) > most:
            raise ValueError(len(tags))
        conn.execute(update(Memory).where(Memory.id == memory.id).values(tags=json.dumps(tags), updated_at=now))
        record(conn, [event(now, "tag", actor, scope, memory.id, added=list(add), removed=list(remove))])
        return tags


def steerable(store: Store, scope: str, memory_id: str) -> Optional[Memory]:
    """The memory `memory_id` of `scope` as a user may steer it (live: not expired, its scope
    not being forgotten); None otherwise."""
    with store.read() as conn:
        return _steerable(conn, scope, memory_id)


def _steerable(conn: Connection, scope: str, memory_id: str) -> Optional[Memory]:
    if forgetting(conn, scope):
        return None
    memory = _by_ids(conn, scope, [memory_id]).get(memory_id)
    if memory is None or (memory.expires_at is not None and memory.expires_at <= time.time()):
        return None
    return memory
