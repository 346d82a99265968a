"""What a forget takes with it (its plan: everything that goes with a memory, which the forget
itself runs and its preview only counts) and a correction's rows, both written inside the
store's own writes. Pinning, retagging and the preview are lifecycle/_rows.py."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, select, update

from ._knowledge import _learned_only_from
from ._rows import _by_ids, _event
from .models import Memory


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


def forget_plan(conn: Connection, scope: str, rows: list[Memory], scrub_context: bool) -> ForgetPlan:
    """The one reading of what a forget of `rows` takes with it (Store._delete_rows runs it,
    the forget's preview counts it). A summary quotes its members: when one of them goes, the
    summary goes too (its other members become current again and wait for the next
    consolidation). So does what was learned from them, once nothing it was learned from is left."""
    asked = {r.id for r in rows}
    summaries = [m for m in _by_ids(conn, scope, {r.superseded_by for r in rows if r.superseded_by}).values()
                 if m.kind == "summary" and m.id not in asked]
    learned = _learned_only_from(conn, scope, asked | {m.id for m in summaries})
    cascaded = {m.id: "a memory it summarised was forgotten" for m in summaries}
    cascaded.update({m.id: "the memory it was learned from was forgotten" for m in learned})
    everything = [*rows, *summaries, *learned]
    reembed = (_next_messages(conn, scope, [m for m in everything if m.kind == "message" and m.session_id])
               if scrub_context else [])
    return ForgetPlan(everything, cascaded, reembed)


def _next_messages(conn: Connection, scope: str, messages: list[Memory]) -> list[str]:
    """The message right after each of these in its session (whose context quotes it)."""
    gone = {m.id for m in messages}
    found = []
    for m in messages:
        following = conn.execute(select(Memory.id).where(
            Memory.scope == scope, Memory.session_id == m.session_id, Memory.turn >= (m.turn or 0),
            Memory.seq > m.seq, Memory.kind == "message").order_by(Memory.seq).limit(1)).scalar()
        if following and following not in gone:
            found.append(following)
    return found


def corrected(conn: Connection, scope: str, old_ids: list[str], new: dict, now: float) -> list[dict]:
    """Inside Store._add: the memories a correction supersedes marked corrected (never
    recalled again), the correction pinned if one of them was, and a 'correct' event each
    (its actor the correction's receipt)."""
    olds = list(_by_ids(conn, scope, old_ids).values())
    conn.execute(update(Memory).where(Memory.id.in_([m.id for m in olds])).values(corrected_at=now))
    if any(m.pinned for m in olds):
        conn.execute(update(Memory).where(Memory.id == new["id"]).values(pinned=1, expires_at=None))
    return [_event(now, "correct", new["source"], scope, m.id, corrected_by=new["id"]) for m in olds]
