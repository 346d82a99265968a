"""The store's lifecycle rows: expiry, ageing, consolidation, and the scheduler's lease and
job times (used by the lifecycle jobs and the scheduler only)."""
from __future__ import annotations

import time
from typing import Optional, Sequence

from sqlalchemy import and_, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError

from ..common import lifecycle_rules as lifecycle
from ._batches import Batches, in_batches, slices
from ._rows import _by_ids, _memory, _move, _record
from .models import ConversationSession, Job, Memory
from .new_memory import NewMemory

LEASES = ("\x00leases",)  # the lock leases write under (no scope is named so; a clash would only wait)

_UNREAD = (ConversationSession.flushed_at.is_not(None)) & (ConversationSession.extracted_turn < ConversationSession.last_turn)
DECAY_STEP = 0.005  # a decayed confidence is written once it has moved this much
_AGE_ROWS = text(
    "SELECT seq, id, scope, tier, kind, state, confidence, reliability, access_count, last_seen_at, "
    "created_at, superseded_by FROM memories WHERE seq > :after AND expires_at IS NULL AND pinned = 0 "
    "ORDER BY seq LIMIT :batch")
_AGE_UPDATE = text(  # only if the row is as it was read (a repeat may have reinforced it since)
    "UPDATE memories SET confidence = :confidence, state = :state WHERE id = :b_id "
    "AND state = :b_state AND coalesce(last_seen_at, -1) = :b_seen")


class LifecycleRows:
    """Store methods of the lifecycle jobs and the scheduler. Mixed into Store: they use its
    read() and write() connections, writing(), _add and supersede."""

    def expired(self, now: float) -> dict[str, list[str]]:
        """Ids of the working memories past their expiry time, by scope (a pinned one never is)."""
        found: dict[str, list[str]] = {}
        with self.read() as conn:
            for memory_id, scope in conn.execute(select(Memory.id, Memory.scope).where(
                    Memory.expires_at.is_not(None), Memory.expires_at <= now, Memory.pinned == 0)):
                found.setdefault(scope, []).append(memory_id)
        return found

    def age(self, now: float, batch: int = 2000) -> tuple[int, int]:
        """Recompute confidence and state of every live, lasting, unpinned memory as of `now`; return
        (rows updated, state transitions). Reads in batches without the write lock; writes
        only the rows that changed, and only if nobody touched them in between, in bounded
        write batches."""
        changed = moved = 0
        after, batches = 0, Batches(self.engine.dialect.name)
        while True:
            with self.read() as conn:
                rows = conn.execute(_AGE_ROWS, {"after": after, "batch": batch}).all()
            if not rows:
                return changed, moved
            after = rows[-1].seq
            updates, transitions = [], []
            for m in rows:
                age_s = now - (m.last_seen_at or m.created_at)
                conflicted = m.superseded_by is not None and m.tier != "episodic"
                confidence = lifecycle.confidence(m.reliability, m.access_count, m.kind, age_s, conflicted)
                state = lifecycle.aged_state(m.state, m.kind, age_s)
                change = {"b_id": m.id, "b_state": m.state, "b_seen": -1 if m.last_seen_at is None else m.last_seen_at,
                          "confidence": confidence, "state": state}
                if state != m.state:
                    transitions.append((change, m))
                elif abs(confidence - m.confidence) >= DECAY_STEP:
                    updates.append(change)
            if updates or transitions:
                done = self._aged(now, [(change, None) for change in updates] + transitions, batches)
                changed, moved = changed + done[0], moved + done[1]

    def _aged(self, now: float, work: list, batches: Batches) -> tuple[int, int]:
        """Write (change, memory) pairs of `age`; memory is None for a confidence-only update."""
        changed = moved = 0

        def write(conn, part: list) -> None:
            nonlocal changed, moved
            updates = [change for change, m in part if m is None]
            if updates:
                conn.execute(_AGE_UPDATE, updates)
                changed += len(updates)
            for change, m in part:  # transitions, rare: one statement each, so each is audited truly
                if m is not None and conn.execute(_AGE_UPDATE, change).rowcount:
                    _record(conn, [_move(now, m, change["state"], "age")])
                    changed, moved = changed + 1, moved + 1
        in_batches(self, slices(work, write), batches)
        return changed, moved

    def unread_sessions(self, limit: Optional[int] = None) -> list[tuple[str, str]]:
        """(scope, session id) of the flushed sessions whose turns knowledge was not read from
        yet (imported conversations), the oldest first, at most `limit`."""
        query = select(ConversationSession.scope, ConversationSession.session_id).where(
            _UNREAD).order_by(ConversationSession.started_at, ConversationSession.session_id)
        with self.read() as conn:
            return [tuple(row) for row in conn.execute(query if limit is None else query.limit(limit))]

    def unread_session_count(self) -> int:
        with self.read() as conn:
            return conn.execute(select(func.count()).select_from(ConversationSession).where(_UNREAD)).scalar()

    def unread_turn_count(self) -> int:
        """How many user turns of those sessions knowledge was not read from yet."""
        query = select(func.count()).select_from(Memory).join(ConversationSession, and_(
            ConversationSession.scope == Memory.scope, ConversationSession.session_id == Memory.session_id)).where(
            _UNREAD, Memory.kind == "message", Memory.role == "user", Memory.turn > ConversationSession.extracted_turn,
            Memory.turn <= ConversationSession.last_turn)
        with self.read() as conn:
            return conn.execute(query).scalar()

    def unconsolidated(self, scope: str, session_id: Optional[str], limit: int) -> list[Memory]:
        """A scope's current episodic memories consolidation has not looked at yet, oldest first
        (never a pinned one: consolidation leaves it as the user pinned it)."""
        query = select(Memory).where(Memory.scope == scope, Memory.tier == "episodic", Memory.pinned == 0,
                                     Memory.superseded_by.is_(None), Memory.consolidated_at.is_(None),
                                     Memory.state.in_(lifecycle.CONSOLIDATING))
        if session_id is not None:
            query = query.where(Memory.session_id == session_id)
        with self.read() as conn:
            return [_memory(r) for r in conn.execute(query.order_by(Memory.seq).limit(limit))]

    def unconsolidated_scopes(self) -> list[str]:
        with self.read() as conn:
            return list(conn.execute(select(Memory.scope).distinct().where(
                Memory.tier == "episodic", Memory.consolidated_at.is_(None),
                Memory.superseded_by.is_(None))).scalars())

    def consolidate(self, summary: NewMemory, members: Sequence[str]) -> Optional[str]:
        """Store one summary and mark its members superseded by it, in one transaction; None
        (nothing written) when a member has since been forgotten or superseded (for instance by
        another process's run)."""
        with self.writing() as conn:
            found = _by_ids(conn, summary.scope, members)
            if len(found) != len(set(members)) or any(m.superseded_by or m.pinned for m in found.values()):
                return None
            now = time.time()
            [summary_id] = self._add(conn, [summary], None, now)
            _record(conn, self.supersede(conn, summary.scope, list(members), summary_id, now, conflict=False))
            conn.execute(update(Memory).where(Memory.id.in_(list(members))).values(consolidated_at=now))
            return summary_id

    def mark_examined(self, ids: Sequence[str], now: float) -> None:
        in_batches(self, slices(list(ids), lambda conn, part: conn.execute(
            update(Memory).where(Memory.id.in_(part)).values(consolidated_at=now))))

    def lease(self, owner: str, seconds: float, now: float, name: str = "scheduler") -> bool:
        """Take or renew the named lease for `owner`; False while another owner holds it.
        A lease that has no row yet is created taken. (Only leases touch their rows: on
        PostgreSQL a lease waits for other leases' writes, not for every writer: LEASES.)"""
        with self.writing(LEASES) as conn:
            done = conn.execute(update(Job).where(Job.name == name,
                                                  or_(Job.owner == owner, Job.lease_until < now))
                                .values(owner=owner, lease_until=now + seconds))
            if done.rowcount:
                return True
            if conn.execute(select(Job.name).where(Job.name == name)).first() is not None:
                return False
            try:
                with conn.begin_nested():  # another process may be creating it right now
                    conn.execute(insert(Job).values(name=name, owner=owner, lease_until=now + seconds))
            except IntegrityError:
                return False
            return True

    def release_lease(self, owner: str, name: str = "scheduler") -> None:
        with self.writing(LEASES) as conn:
            conn.execute(update(Job).where(Job.name == name, Job.owner == owner)
                         .values(owner="", lease_until=0.0))

    def job_times(self) -> dict[str, float]:
        with self.read() as conn:
            return {row.name: row.last_run_at for row in conn.execute(select(Job))}

    def job_ran(self, name: str, at: float) -> None:
        with self.writing() as conn:
            done = conn.execute(update(Job).where(Job.name == name).values(last_run_at=at))
            if not done.rowcount:  # a job the migrations did not seed a row for
                conn.execute(insert(Job).values(name=name, last_run_at=at))
