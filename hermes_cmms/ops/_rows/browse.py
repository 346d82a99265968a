"""The SQL of browsing what is stored (ops/browse.py, ops/memory_page.py): the counts of each
scope, the vector work queued per scope, the newest memories, and what a memory's page shows
beside the memory (its supersede chains, what the knowledge layer holds about it). A filtered
page of memories is the store's (store/_browse.py: a filtered search reads it too)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from sqlalchemy import Connection, and_, case, func, not_, select

from ...store._forget import forgetting
from ...store._rows import _by_ids, _memory
from ...store.models import Belief, Entity, Evidence, Fact, Forgetting, Link, Memory, Outbox, Relation

if TYPE_CHECKING:
    from ...store.store import Store

CHAIN_MOST = 50  # memories a supersede chain shows, each way


def scope_counts(store: Store, scope: Optional[str] = None) -> list[dict]:
    """Per scope (all of them, or one): its memories by tier, by kind, by lifecycle state, by
    browsing state (active: neither superseded nor expired; superseded; expired), and the
    newest memory's time. Scopes being forgotten are left out. One pass over one index
    (ix_memories_scope_tally holds every column counted)."""
    now = time.time()
    kept = [Memory.scope.not_in(select(Forgetting.scope)), *([Memory.scope == scope] if scope is not None else [])]
    expired = and_(Memory.expires_at.is_not(None), Memory.expires_at <= now)
    counts = (select(Memory.scope, Memory.tier, Memory.kind, Memory.state, func.count().label("n"),
                     func.max(Memory.created_at).label("newest"),
                     func.sum(case((and_(Memory.superseded_by.is_not(None), not_(expired)), 1), else_=0))
                     .label("superseded"),
                     func.sum(case((expired, 1), else_=0)).label("expired"))
              .where(*kept).group_by(Memory.scope, Memory.tier, Memory.kind, Memory.state))
    with store.read() as conn:
        return _tallied(conn.execute(counts).all())


def outbox_by_scope(store: Store) -> dict[str, int]:
    """Vector work queued (index lag), by scope."""
    with store.read() as conn:
        return dict(conn.execute(select(Outbox.scope, func.count()).group_by(Outbox.scope)).all())


def waiting_vectors(store: Store, scope: str) -> int:
    """Memories of `scope` whose vectors are still queued to be written (not a forget's deletes)."""
    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(Outbox)
                            .where(Outbox.scope == scope, Outbox.op == "upsert")).scalar_one()


def newest_rows(store: Store, scope: Optional[str], limit: int) -> list[Memory]:
    """The newest memories written, of one scope or of every scope not being forgotten."""
    query = select(Memory).where(Memory.scope.not_in(select(Forgetting.scope)))
    if scope is not None:
        query = query.where(Memory.scope == scope)
    with store.read() as conn:
        return [_memory(row) for row in conn.execute(query.order_by(Memory.seq.desc()).limit(limit))]

# -- a memory's page -----------------------------------------------------------------


def memory_in(store: Store, scope: str, memory_id: str) -> Optional[Memory]:
    """The memory `memory_id` of `scope` in any state (expired, superseded), None if it is
    not there (or of another scope, or its scope is being forgotten)."""
    with store.read() as conn:
        if forgetting(conn, scope):
            return None
        return _by_ids(conn, scope, [memory_id]).get(memory_id)


def supersede_chains(store: Store, scope: str, memory: Memory) -> tuple[list[Memory], list[Memory]]:
    """What `memory` superseded (older first met, breadth first) and what superseded it
    (the next, then the one after), CHAIN_MOST each way, every one of `scope`."""
    older, newer, seen = [], [], {memory.id}
    with store.read() as conn:
        level = [memory.id]
        while level and len(older) < CHAIN_MOST:
            found = [_memory(r) for r in conn.execute(select(Memory).where(
                Memory.superseded_by.in_(level), Memory.scope == scope).order_by(Memory.seq.desc()))]
            found = [m for m in found if m.id not in seen][:CHAIN_MOST - len(older)]
            seen.update(m.id for m in found)
            older += found
            level = [m.id for m in found]
        nxt = memory.superseded_by
        while nxt and nxt not in seen and len(newer) < CHAIN_MOST:
            found = _by_ids(conn, scope, [nxt]).get(nxt)
            if found is None:
                break
            seen.add(nxt)
            newer.append(found)
            nxt = found.superseded_by
    return older, newer


def knowledge_of(store: Store, scope: str, memory_id: str) -> dict:
    """What the knowledge layer holds about one memory of `scope`: its fact parts, the
    memories it was learned from and those learned from it, its belief row and evidence (if
    it is a belief), the beliefs it is evidence for, and its graph edges with their entities."""
    with store.read() as conn:
        fact = conn.execute(select(Fact).where(Fact.memory_id == memory_id, Fact.scope == scope)).first()
        sources = _linked(conn, scope, Link.source_id, Link.memory_id == memory_id)
        learned = _linked(conn, scope, Link.memory_id, Link.source_id == memory_id)
        belief = conn.execute(select(Belief).where(Belief.memory_id == memory_id, Belief.scope == scope)).first()
        evidence = conn.execute(select(Evidence).where(Evidence.belief_id == memory_id, Evidence.scope == scope)
                                .order_by(Evidence.id)).all()
        cited = conn.execute(select(Evidence).where(Evidence.memory_id == memory_id, Evidence.scope == scope)
                             .order_by(Evidence.id)).all()
        beliefs = _by_ids(conn, scope, {e.belief_id for e in cited})
        edges = conn.execute(select(Relation).where(Relation.memory_id == memory_id, Relation.scope == scope)
                             .order_by(Relation.id)).all()
        names = dict(conn.execute(select(Entity.id, Entity.name).where(
            Entity.id.in_({e.source_id for e in edges} | {e.target_id for e in edges}), Entity.scope == scope)).all())
    return {"fact": fact, "learned_from": sources, "learned_into": learned, "belief": belief,
            "evidence": evidence, "evidence_for": [(e, beliefs[e.belief_id]) for e in cited if e.belief_id in beliefs],
            "edges": edges, "entities": names}


def _linked(conn: Connection, scope: str, column, condition) -> list[Memory]:
    ids = list(conn.execute(select(column).where(condition, Link.scope == scope)).scalars())
    found = _by_ids(conn, scope, ids)
    return [found[i] for i in ids if i in found]


def _tallied(rows) -> list[dict]:
    scopes: dict[str, dict] = {}
    for row in rows:
        entry = scopes.setdefault(row.scope, {"scope": row.scope, "memories": 0, "by_tier": {}, "by_kind": {},
                                              "by_lifecycle": {}, "by_state": {}, "newest_at": 0.0,
                                              "superseded": 0, "expired": 0})
        entry["memories"] += row.n
        for key, value in (("by_tier", row.tier), ("by_kind", row.kind), ("by_lifecycle", row.state)):
            entry[key][value] = entry[key].get(value, 0) + row.n
        entry["newest_at"] = max(entry["newest_at"], row.newest or 0.0)
        entry["superseded"] += row.superseded or 0
        entry["expired"] += row.expired or 0
    for entry in scopes.values():
        gone, old = entry.pop("expired"), entry.pop("superseded")
        entry["by_state"] = {state: n for state, n in (("active", entry["memories"] - gone - old),
                                                       ("superseded", old), ("expired", gone)) if n}
    return [scopes[name] for name in sorted(scopes)]
