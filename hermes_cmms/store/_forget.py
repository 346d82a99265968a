"""A scope's right to be forgotten (`forget --all`) in bounded batches, so other scopes' writes
go on meanwhile, and crash-safe: the scope is marked first, its memories read as gone from then
on, and running the forget again finishes it."""
from __future__ import annotations

import json
import time
from typing import Callable, Optional

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from . import recall_events
from ._batches import MOST_ROWS, Batches, in_batches, slices
from ._rows import _event, _memory, _record
from .models import (AuditEvent, Belief, ConversationSession, Entity, Evidence, Fact, Forgetting, Link, Memory,
                     Outbox, Relation)

Progress = Callable[[int], None]  # memories forgotten so far


_FORGETTING = select(Forgetting.scope).where(Forgetting.scope == bindparam("scope"))  # made once: every read asks


def forgetting(conn: Connection, scope: str) -> bool:
    """Whether a forget --all of `scope` has begun and not finished."""
    return conn.execute(_FORGETTING, {"scope": scope}).first() is not None


class ForgetAll:
    """Store methods of forget --all. Mixed into Store: they use its write() connections, its
    write lock, _delete_rows, keyword index and _checkpoint."""

    def forget_all(self, scope: str, actor: str = "", progress: Optional[Progress] = None) -> int:
        """Forget every memory of `scope` (its vectors queued for removal), its sessions, beliefs
        and graph, and the scope's own words on its audit trail (every event's snapshot and detail
        blanked, its actor cut to its door, see door_of); one 'forget_all' event carries the
        count. Batches of about TARGET_S each; in order: the mark, the events, the belief and
        graph rows, the rest of what was learned (links, evidence, relations, facts) and the
        recall events, the memories (their rows a batch, set-based), the sessions, then one last
        transaction for anything written meanwhile, the event and the end of the mark. Then the
        files are scrubbed (_checkpoint) so the deleted text is gone from them too.
        Returns how many memories went (in this run and any interrupted one before it)."""
        self._mark_forgetting(scope, actor)
        events, newest = self._event_rows(scope)
        in_batches(self, _moving(scope, slices(events, _blank_events)), self._batches())
        for table, key in KNOWLEDGE:  # the belief and graph doors' rows first, then the rest the scope's own
            in_batches(self, _moving(scope, lambda conn, size: _delete_some(conn, table, key, scope, size)),
                       self._batches())
        in_batches(self, _moving(scope, lambda conn, size: recall_events.drop_some(conn, scope, size)), self._batches())
        self._forget_memories(scope, actor, self._batches(), progress or (lambda done: None))
        in_batches(self, _moving(scope, lambda conn, size: _delete_some(
            conn, ConversationSession, ConversationSession.session_id, scope, size)), self._batches())
        count = self._finish_forget(scope, actor, newest)
        self._checkpoint()  # the keyword index and the files scrubbed, in short steps of their own
        return count

    def _batches(self) -> Batches:
        """The sizes of one kind of row's batches (each kind costs its own time a row)."""
        return Batches(self.engine.dialect.name, most=forget_most(self.engine.dialect.name))

    def unfinished_forgets(self, before: float) -> list[tuple[str, str]]:
        """(scope, actor) of each forget --all that has not moved since `before` (interrupted:
        a running one moves its mark with every batch)."""
        with self.read() as conn:
            return [tuple(row) for row in conn.execute(select(Forgetting.scope, Forgetting.actor)
                                                       .where(Forgetting.updated_at < before))]

    def forgetting_scopes(self) -> list[str]:
        """The scopes whose forget --all has begun and not finished."""
        with self.read() as conn:
            return sorted(conn.execute(select(Forgetting.scope)).scalars())

    def _mark_forgetting(self, scope: str, actor: str) -> None:
        now = time.time()
        with self.writing() as conn:
            if not forgetting(conn, scope):
                conn.execute(insert(Forgetting).values(scope=scope, actor=actor, started_at=now, updated_at=now))

    def _event_rows(self, scope: str) -> tuple[list[tuple[int, str]], int]:
        """(id, actor) of the scope's audit events but those of a forget --all, and the newest
        event id of all then (read without the lock: finding them scans the scope's events)."""
        with self.read() as conn:
            rows = [tuple(row) for row in conn.execute(select(AuditEvent.id, AuditEvent.actor).where(
                AuditEvent.scope == scope, AuditEvent.action != "forget_all"))]
            return rows, conn.execute(select(func.coalesce(func.max(AuditEvent.id), 0))).scalar_one()

    def _forget_memories(self, scope: str, actor: str, batches, progress: Progress) -> None:
        """Every memory of the scope, a batch at a time, each batch the next memories the scope's
        index finds (set-based: the whole scope goes, so what a single forget works out first,
        what goes with a memory and who quotes it, is the scope itself), until none is left."""
        done = 0

        def forget(conn: Connection, size: int) -> int:
            nonlocal done
            found = _forget_some(conn, scope, actor, size)
            done += found
            return found
        in_batches(self, forget, batches, after=lambda: progress(done))

    def _finish_forget(self, scope: str, actor: str, newest: int) -> int:
        """The last transaction: what was written into the scope since its pass (memories, and
        events after `newest`), whatever a cascade left behind, the 'forget_all'
        event and the end of the mark. 0 when another process finished the same forget meanwhile."""
        now = time.time()
        with self.writing() as conn:
            mark = conn.execute(select(Forgetting).where(Forgetting.scope == scope)).first()
            if mark is None:
                return 0
            late = [_memory(row) for row in conn.execute(select(Memory).where(Memory.scope == scope))]
            if late:
                self._delete_rows(conn, scope, late, "forget_all", actor, now, snapshots=False, scrub_context=False)
            _blank_events(conn, [tuple(row) for row in conn.execute(select(AuditEvent.id, AuditEvent.actor).where(
                AuditEvent.id > newest, AuditEvent.scope == scope, AuditEvent.action != "forget_all"))])
            for table in (Link, Belief, Evidence, Relation, Entity, Fact, ConversationSession):
                conn.execute(delete(table).where(table.scope == scope))
            recall_events.drop_scope(conn, scope)  # which memories its turns were given
            count = mark.memories + len(late)
            _record(conn, [_event(now, "forget_all", actor or mark.actor, scope, None, memories=count)])
            conn.execute(delete(Forgetting).where(Forgetting.scope == scope))
            return count


# what forget --all deletes by scope before the memories: the belief and graph doors' rows, then
# the rest of what was learned (a table and the key its rows are deleted by)
KNOWLEDGE = ((Belief, Belief.memory_id), (Entity, Entity.id), (Link, Link.memory_id), (Evidence, Evidence.id),
             (Relation, Relation.id), (Fact, Fact.memory_id))


def forget_most(dialect: str) -> int:
    """The most rows a forget --all batch takes: on SQLite, which looks each id of a list up in
    its index however long the list, as many as fit in TARGET_S; PostgreSQL may plan a scan
    past ~500 ids (MOST_ROWS)."""
    return SQLITE_MOST if dialect == "sqlite" else MOST_ROWS


SQLITE_MOST = 5000


def _moving(scope: str, step: Callable[[Connection, int], int]) -> Callable[[Connection, int], int]:
    """An in_batches step that also moves the scope's mark (updated_at) in its transaction, so
    the sweep tells a running forget --all from one whose process died."""
    def moved(conn: Connection, size: int) -> int:
        done = step(conn, size)
        conn.execute(update(Forgetting).where(Forgetting.scope == scope).values(updated_at=time.time()))
        return done
    return moved


def _forget_some(conn: Connection, scope: str, actor: str, size: int) -> int:
    """Forget up to `size` memories of `scope` in one transaction: a 'forget_all' event each
    (written in one statement, no snapshot), the rows themselves (the keyword index's triggers
    go with them) and their vectors queued for removal. What the knowledge layer and the recall
    events held of the scope went before them, by scope (no id crosses a scope, so nothing
    outside it points at them); what was written meanwhile goes in _finish_forget."""
    rows = conn.execute(select(Memory.id, Memory.state).where(Memory.scope == scope).limit(size)).all()
    now = time.time()
    if rows:
        ids = [row.id for row in rows]
        event = _event(now, "forget_all", actor, scope, None)  # (its actor redacted once)
        _record(conn, [{**event, "memory_id": row.id, "detail": json.dumps({"state_from": row.state,
                                                                             "state_to": "forgotten"})} for row in rows])
        conn.execute(delete(Memory).where(Memory.id.in_(ids)))
        conn.execute(insert(Outbox), [{"memory_id": i, "scope": scope, "op": "delete", "created_at": now} for i in ids])
    conn.execute(update(Forgetting).where(Forgetting.scope == scope).values(
        memories=Forgetting.memories + len(rows), updated_at=now))  # (the mark moved, as _moving does)
    return len(rows)


def _delete_some(conn: Connection, table, key, scope: str, size: int) -> int:
    """Delete up to `size` rows of `table` in `scope`, found by the scope and deleted by `key`."""
    keys = list(conn.execute(select(key).where(table.scope == scope).limit(size)).scalars())
    if keys:
        conn.execute(delete(table).where(table.scope == scope, key.in_(keys)))
    return len(keys)


DOORS = ("cli", "mcp", "hermes", "cmms")  # what an actor or receipt starts with, before its ':'


def door_of(actor: str) -> str:
    """What a forgotten scope's event keeps of its actor: the door it came through ('mcp' of
    'mcp:Dana'), or 'forgotten' (a memory's source is the user's own text)."""
    door = actor.split(":", 1)[0]
    return door if door in DOORS else "forgotten"


def _blank_events(conn: Connection, rows: list[tuple[int, str]]) -> None:
    """Audit events of a forgotten scope without its words: no snapshot, an empty detail (a
    tool error may repeat an argument), the actor's door only. Action, time, scope and memory
    id stay."""
    by_door: dict[str, list[int]] = {}
    for event_id, actor in rows:
        by_door.setdefault(door_of(actor or ""), []).append(event_id)
    for door, ids in by_door.items():
        conn.execute(update(AuditEvent).where(AuditEvent.id.in_(ids)).values(snapshot=None, detail="{}", actor=door))
