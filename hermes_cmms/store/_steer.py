"""What a user steers by hand: a memory pinned, retagged or corrected, and the plan of a forget
(everything that goes with a memory), which the forget itself runs and its preview only counts."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sqlalchemy import Connection, func, select, update

from . import recall_events
from ._forget import forgetting
from ._knowledge import _learned_only_from, knowledge_clauses, orphaned_entities
from ._rows import _by_ids, _event, _record
from .models import Fact, Memory


@dataclass
class ForgetPlan:
    """What forgetting `rows` deletes: the rows themselves, the summaries and learned memories
    that go with them (`cascaded`: id -> why), and the messages whose context quoted one of them
    (`reembed`: their context is dropped and they are embedded again)."""

    rows: list[Memory]
    cascaded: dict[str, str] = field(default_factory=dict)
    reembed: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [m.id for m in self.rows]


class SteerRows:
    """Store methods of steering. Mixed into Store: they use its read() and writing()
    connections and _next_messages."""

    def _forget_plan(self, conn: Connection, scope: str, rows: list[Memory], scrub_context: bool) -> ForgetPlan:
        """The one reading of what a forget of `rows` takes with it (Store._delete_rows runs it,
        forget_preview counts it). A summary quotes its members: when one of them goes, the
        summary goes too (its other members become current again and wait for the next
        consolidation). So does what was learned from them, once nothing it was learned from is left."""
        asked = {r.id for r in rows}
        summaries = [m for m in _by_ids(conn, scope, {r.superseded_by for r in rows if r.superseded_by}).values()
                     if m.kind == "summary" and m.id not in asked]
        learned = _learned_only_from(conn, scope, asked | {m.id for m in summaries})
        cascaded = {m.id: "a memory it summarised was forgotten" for m in summaries}
        cascaded.update({m.id: "the memory it was learned from was forgotten" for m in learned})
        everything = [*rows, *summaries, *learned]
        reembed = (self._next_messages(conn, scope, [m for m in everything if m.kind == "message" and m.session_id])
                   if scrub_context else [])
        return ForgetPlan(everything, cascaded, reembed)

    def forget_preview(self, scope: str, ids: Sequence[str]) -> Optional[dict]:
        """What forgetting the memories `ids` of `scope` would delete, changing nothing:
        {"memories": [Memory], "cascaded": [(Memory, why)], "facts", "links", "beliefs",
        "evidence", "relations", "entities", "vectors", "reembedded", "restored", "snapshots",
        "recalls" (lines of recall events naming them)};
        the id of the first one not in `scope` (as a str) instead when one is missing."""
        with self.read() as conn:
            now = time.time()
            found = {} if forgetting(conn, scope) else {i: m for i, m in _by_ids(conn, scope, ids).items()
                                                        if m.expires_at is None or m.expires_at > now}
            missing = next((i for i in ids if i not in found), None)
            if missing is not None:
                return missing
            plan = self._forget_plan(conn, scope, [found[i] for i in dict.fromkeys(ids)], scrub_context=True)
            gone = plan.ids
            count = lambda table, clause: conn.execute(  # noqa: E731
                select(func.count()).select_from(table).where(clause)).scalar_one()
            counts = {table.__tablename__: count(table, clause) for table, clause in knowledge_clauses(gone)}
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

    def set_pinned(self, scope: str, memory_id: str, pinned: bool, actor: str) -> Optional[Memory]:
        """Pin (or unpin) a memory of `scope`; None when it is not there. Pinning a working
        memory ends its expiry (a pinned memory never expires); unpinning leaves it lasting.
        Audited ('pin' / 'unpin', with the expiry it had)."""
        now = time.time()
        with self.writing() as conn:
            memory = self._steerable(conn, scope, memory_id)
            if memory is None:
                return None
            values = {"pinned": int(pinned), "updated_at": now, **({"expires_at": None} if pinned else {})}
            conn.execute(update(Memory).where(Memory.id == memory.id).values(**values))
            detail = {"expired_at": memory.expires_at} if pinned and memory.expires_at else {}
            _record(conn, [_event(now, "pin" if pinned else "unpin", actor, scope, memory.id, **detail)])
            return memory

    def retag(self, scope: str, memory_id: str, add: Sequence[str], remove: Sequence[str], actor: str,
              most: int) -> Optional[list[str]]:
        """A memory's tags with `add` added and `remove` removed (in this order, each once);
        None when it is not in `scope`; ValueError (the count) past `most` tags. Audited ('tag')."""
        now = time.time()
        with self.writing() as conn:
            memory = self._steerable(conn, scope, memory_id)
            if memory is None:
                return None
            tags = [t for t in dict.fromkeys([*json.loads(memory.tags or "[]"), *add]) if t not in set(remove)]
            if len(tags) > most:
                raise ValueError(len(tags))
            conn.execute(update(Memory).where(Memory.id == memory.id).values(tags=json.dumps(tags), updated_at=now))
            _record(conn, [_event(now, "tag", actor, scope, memory.id, added=list(add), removed=list(remove))])
            return tags

    @staticmethod
    def _corrected(conn: Connection, scope: str, old_ids: list[str], new: dict, now: float) -> list[dict]:
        """Inside Store._add: the memories a correction supersedes marked corrected (never
        recalled again), the correction pinned if one of them was, and a 'correct' event each
        (its actor the correction's receipt)."""
        olds = list(_by_ids(conn, scope, old_ids).values())
        conn.execute(update(Memory).where(Memory.id.in_([m.id for m in olds])).values(corrected_at=now))
        if any(m.pinned for m in olds):
            conn.execute(update(Memory).where(Memory.id == new["id"]).values(pinned=1, expires_at=None))
        return [_event(now, "correct", new["source"], scope, m.id, corrected_by=new["id"]) for m in olds]

    def steerable(self, scope: str, memory_id: str) -> Optional[Memory]:
        """The memory `memory_id` of `scope` as a user may steer it (live: not expired, its scope
        not being forgotten); None otherwise."""
        with self.read() as conn:
            return self._steerable(conn, scope, memory_id)

    @staticmethod
    def _steerable(conn: Connection, scope: str, memory_id: str) -> Optional[Memory]:
        if forgetting(conn, scope):
            return None
        memory = _by_ids(conn, scope, [memory_id]).get(memory_id)
        if memory is None or (memory.expires_at is not None and memory.expires_at <= time.time()):
            return None
        return memory

