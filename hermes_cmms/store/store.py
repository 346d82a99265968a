"""The SQL store: engine setup, migrations on open, and every read and write of rows."""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

from sqlalchemy import Connection, bindparam, create_engine, delete, func, insert, or_, select, text, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from . import _migrations, _postgres, _sqlite, graph_rows, outbox_claims, recall_events
from ..common import lifecycle_rules as lifecycle
from ._batches import Batches, WriteHolds, in_batches, slices
from ._browse import BrowseRows, Filters
from ._forget import ForgetAll, forgetting
from ._knowledge import _drop_knowledge
from ._lifecycle import LifecycleRows
from ._steer import corrected, forget_plan
from ._rows import INSERT_MEMORY, INSERT_OUTBOX, _add_rows, _by_ids, _event, _memory, _move, _record, _redact_item
from ..common.errors import StoreUnavailable
from ..common.scrub import scrub_freed_memory
from .keyword import KeywordIndex, keyword_index_for
from .new_memory import NewMemory
from .models import (AuditEvent, Belief, ConversationSession, Evidence, Fact, Forgetting, IndexState, Link,
                     Memory, Outbox, StoreIdentity)
from ..common.text import UNDECODABLE, bounded_key, content_hash, like_literal, speaker_of

log = logging.getLogger(__name__)

CONTEXT_CHARS = 400
UNDATED = ":undated"  # a source ending so: learned from an imported turn whose date is not known
CONNECT_RETRY_S = 5.0  # how long a caller waits for a database server that is away
OUTBOX_ROWS = 20_000  # most outbox rows one transaction of drop_deletes removes (selected by scope, not by id)

_SAME_TEXTS = text(  # plain SQL: this runs inside every sync_turn
    "SELECT id, content_hash, tier, kind, role FROM memories WHERE scope = :scope AND content_hash IN :hashes "
    "AND superseded_by IS NULL AND (expires_at IS NULL OR expires_at > :now) ORDER BY seq"
).bindparams(bindparam("hashes", expanding=True))


_NEXT_TURN = text(  # a turn's number (its session started, or moved on by one) and the session's last message
    "INSERT INTO sessions (scope, session_id, started_at, last_turn, flushed_at, extracted_turn) "
    "VALUES (:scope, :session_id, :now, 1, NULL, 0) ON CONFLICT (scope, session_id) "
    "DO UPDATE SET last_turn = sessions.last_turn + 1, flushed_at = NULL RETURNING last_turn, "
    "(SELECT content FROM memories WHERE scope = :scope AND session_id = :session_id AND kind || '' = 'message' "
    "ORDER BY seq DESC LIMIT 1)")  # (`kind || ''`: the session's index, see previous_message_ids)


def _tail(text: Optional[str]) -> Optional[str]:
    """The end of the previous message: where a question usually sits."""
    return text[-CONTEXT_CHARS:] if text else None


def _told_at(created_at: float, receipts: Optional[str]) -> float:
    """When a memory was last told: its creation, or the latest telling its receipts record (a
    receipt's `said`, when it was said in imported history, else its `at`; None: not known)."""
    told = [receipt.get("said", receipt.get("at")) for receipt in json.loads(receipts or "[]")
            if isinstance(receipt, dict)]
    return max([created_at, *(t for t in told if isinstance(t, (int, float)))])


def _said_rank(source: Optional[str], at: float) -> tuple[int, float]:
    """How a fact said at `at` orders among the others: one whose date is not known first."""
    return (0 if (source or "").endswith(UNDATED) else 1, at)


def safe_url(url: str) -> str:
    """The database URL without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as the dialect only
        return url.split(":", 1)[0]


def driver_said(exc: BaseException) -> str:
    """What the database driver said, in one line: SQLAlchemy's wrapper adds the statement and a
    link to its documentation, which tell a user nothing."""
    cause = getattr(exc, "orig", None) or exc
    return ((str(cause).splitlines() or [""])[0] or type(cause).__name__).rstrip(".")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite.make_engine(url)
    if url.startswith("postgresql"):
        return _postgres.make_engine(url)
    return create_engine(url, pool_pre_ping=True)


def _snapshot(memory: Memory, fact: Optional[tuple[str, str, str]]) -> str:
    """The whole memory as JSON, for the audit log before it is deleted."""
    row = memory.model_dump(exclude={"seq"})
    if fact:
        row["fact"] = dict(zip(("subject", "predicate", "object"), fact))
    return json.dumps(row, ensure_ascii=False)


def has_tags(memory: Memory, tags: Sequence[str]) -> bool:
    """Whether the memory carries every one of `tags`."""
    carried = json.loads(memory.tags or "[]")
    return all(tag in carried for tag in tags)


def _fold(part: str) -> str:
    """A fact part as matched: spaces collapsed, case-folded (any case, any script)."""
    return bounded_key(" ".join(part.split()).casefold())


def _fact_keys(fact: tuple[str, str, str]) -> dict:
    return {f"{name}_key": _fold(part) for name, part in zip(("subject", "predicate", "object"), fact)}


def _live(now: float):
    """Not past its expiry time (working memory with a TTL)."""
    return or_(Memory.expires_at.is_(None), Memory.expires_at > now)


def _filtered(query, tier: Optional[str], tags: Sequence[str]):
    """`query` narrowed to a tier and to memories carrying every one of `tags`."""
    if tier is not None:
        query = query.where(Memory.tier == tier)
    for tag in tags:  # tags are a JSON list; match the JSON-quoted tag, LIKE-escaped
        quoted = like_literal(json.dumps(tag))
        query = query.where(Memory.tags.like(f"%{quoted}%", escape="\\"))
    return query


# the row helpers a feature writing inside Store.writing() or reading beside it uses, and the fact
# keys (the store's own code keeps the private names)
event, record, filtered, fact_keys, live, fold = _event, _record, _filtered, _fact_keys, _live, _fold


class Store(LifecycleRows, ForgetAll, BrowseRows):
    """Row-level access to the memories, sessions and outbox tables."""

    def __init__(self, url: str):
        scrub_freed_memory()  # before any text passes through this process's heap
        self.url = url
        self.holds = WriteHolds()  # how long write transactions held the writer lock
        try:
            self.engine = make_engine(url)
            self.keyword: KeywordIndex = keyword_index_for(self.engine.dialect.name)
            migrations = _migrations.CORE_MIGRATIONS + self.keyword.migrations
            with self.read() as conn:
                behind = _migrations.behind(conn, migrations)
            if behind:  # (a store at the current version is opened with a read alone)
                with self.write() as conn:
                    _migrations.apply(conn, migrations)
        except Exception as exc:  # one clear message for any driver failure
            cause = (exc.__cause__ or exc) if isinstance(exc, StoreUnavailable) else exc  # (said once)
            raise StoreUnavailable(f"Cannot open the memory store at {safe_url(url)}: {driver_said(cause)}.") from exc
        self._write_lock = threading.Lock()  # one writer per process; others wait on busy_timeout
        self.maintaining = 0  # batched maintenance runs in this process (see _batches.in_batches)
        self.maintaining_lock = threading.Lock()

    @contextmanager
    def write(self, scopes: Sequence[str] = ()) -> Iterator[Connection]:
        with self._reachable():
            with self._connect().execution_options(cmms_write=True, cmms_scopes=tuple(scopes)) as conn:
                began = None
                try:
                    with conn.begin():  # the writer lock is taken here (BEGIN IMMEDIATE, advisory lock)
                        began = time.perf_counter()
                        yield conn
                finally:
                    if began is not None:
                        self.holds.observe(time.perf_counter() - began)

    @contextmanager
    def writing(self, scopes: Sequence[str] = ()) -> Iterator[Connection]:
        """A write transaction under this process's writer lock (taken first, then the
        database's): how every write is made, by the store and by features writing beside it.

        With `scopes`, a write that reads and writes rows of those scopes only: on PostgreSQL
        it waits only for other writers of the same scopes (and for writes without scopes),
        in this process as in others (_postgres.make_engine). SQLite has one writer whatever
        the scopes."""
        if scopes and self.engine.dialect.name == "postgresql":
            with self.write(scopes) as conn:
                yield conn
            return
        with self._write_lock, self.write() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self._reachable():
            with self._connect() as conn, conn.begin():
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction that sees one state of the store from start to end (an export):
        SQLite's explicit BEGIN holds one WAL snapshot; PostgreSQL needs REPEATABLE READ."""
        with self._reachable():
            conn = self._connect()
            if self.engine.dialect.name == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn, conn.begin():
                yield conn

    def _connect(self) -> Connection:
        """A connection, waiting up to CONNECT_RETRY_S for a database server that is away
        (restarting, say): nothing has been sent yet, so trying again is always safe."""
        deadline, pause = time.monotonic() + CONNECT_RETRY_S, 0.1
        while True:
            try:
                return self.engine.connect()
            except OperationalError:
                if self.engine.dialect.name == "sqlite" or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """Say plainly when the database went away; the transaction was rolled back."""
        try:
            yield
        except PoolTimeout as exc:
            raise StoreUnavailable(f"The memory store is busy: all {self.engine.pool.size()} connections of "
                                   "this process are in use; try again.") from exc
        except DBAPIError as exc:
            if _read_only(exc.orig):
                raise StoreUnavailable(f"The memory store is read-only ({safe_url(self.url)}): "
                                       f"{driver_said(exc)}; nothing was written.") from exc
            if not isinstance(exc, (OperationalError, InterfaceError)):
                raise
            if _disk_full(exc.orig):
                raise StoreUnavailable(f"The memory store's disk is full ({safe_url(self.url)}); "
                                       "nothing was written.") from exc
            if self.engine.dialect.name == "sqlite" and "locked" not in str(exc):
                raise
            if "lock timeout" in str(exc.orig or exc):
                raise StoreUnavailable("The memory store is busy: another writer held it for more than "
                                       f"{_postgres.LOCK_TIMEOUT}; nothing was written.") from exc
            raise StoreUnavailable(f"The memory store is not reachable ({safe_url(self.url)}): "
                                   f"{driver_said(exc)}.") from exc

    def close(self) -> None:
        self.engine.dispose()

    # -- writes ---------------------------------------------------------------------------

    def add(self, items: Sequence[NewMemory], *, turn_of: Optional[tuple[str, str]] = None) -> list[str]:
        """Store memories, their outbox rows and audit events in one transaction; return ids.

        An item whose text is already live in its scope and tier is not inserted: the existing
        memory is reinforced (counter, confidence, receipt) and its id returned. A new fact
        supersedes the scope's live facts with the same subject and predicate and another
        object, and an item with `replaces` the scope's current memories of its kind and tier
        with one of those texts, unless either holds an UNDECODABLE character; `item.supersedes`
        names further memories it replaces. With `turn_of=(scope, session_id)` the session's
        turn counter advances by one and the items are stamped with that turn number.

        An item with a `row` (an import's memory, ops/transfer) is that row, inserted as it is
        (its id, times, state and chain kept, no audit event: the import records one) unless its
        id is stored already (`present`); the ids returned for those are the ones inserted.
        """
        now = time.time()
        imported = [item for item in items if item.row is not None]
        with self.writing([item.scope for item in items] + ([turn_of[0]] if turn_of else [])) as conn:
            if not imported:
                return self._add(conn, items, turn_of, now)
            written = _add_rows(conn, imported, now)
            rest = [item for item in items if item.row is None]
            return written + self._add(conn, rest, turn_of, now) if rest else written

    def _add(self, conn: Connection, items: Sequence[NewMemory], turn_of: Optional[tuple[str, str]],
             now: float) -> list[str]:
        rows = [self._row(item, now) for item in items]
        if turn_of:
            turn, previous = conn.execute(_NEXT_TURN, {"scope": turn_of[0], "session_id": turn_of[1], "now": now}).one()
            for row in rows:
                row["turn"], row["context"] = turn, _tail(previous)
                previous = row["content"]
        fresh, events, renewed, later = [], [], {}, {}
        repeats = self._same_texts(conn, [row for item, row in zip(items, rows) if item.dedup], now)
        for item, row in zip(items, rows):
            same = (self._current(conn, row["scope"], item.duplicate_of) if item.duplicate_of
                    else repeats.get(row["id"]))
            if same is not None and same.state in lifecycle.FADED:
                renewed[row["id"]] = same.id  # states only move forward: a fresh copy replaces it
            elif same is not None:
                events += self._reinforce(conn, same, row, now)
                item.id, item.reinforced = same.id, True
                self._link(conn, item)
                if item.belief is not None and item.supersedes:  # a belief restated in place of another
                    events += self.supersede(conn, row["scope"], [i for i in item.supersedes if i != same.id],
                                              same.id, now, conflict=True)
                continue
            newer = None  # a fact said after this one (imported history read late) stays current
            if item.fact and UNDECODABLE not in "".join(item.fact):  # an undecodable fact replaces none
                older, newer = self._conflicting_facts(conn, item, item.said_at, now)
                item.supersedes = [*item.supersedes, *older]
            if item.replaces and UNDECODABLE not in item.content + "".join(item.replaces):
                item.supersedes = [*item.supersedes, *self._replaced(conn, item, now)]
            item.id = row["id"]
            fresh.append((item, row))
            if newer is not None:
                later[row["id"]] = newer
            events.append(_event(now, "retain" if turn_of else "remember", row["source"], row["scope"],
                                 row["id"], kind=row["kind"], tier=row["tier"], state=row["state"]))
        if fresh:
            conn.execute(INSERT_MEMORY, [row for _, row in fresh])
            facts = [{"memory_id": row["id"], "scope": item.scope, "subject": item.fact[0],
                      "predicate": item.fact[1], "object": item.fact[2], **_fact_keys(item.fact)}
                     for item, row in fresh if item.fact]
            if facts:
                conn.execute(insert(Fact), facts)
                graph_rows.add_facts(conn, facts, now)
            beliefs = [{**item.belief, "memory_id": row["id"], "scope": item.scope}
                       for item, row in fresh if item.belief]
            if beliefs:
                conn.execute(insert(Belief), beliefs)
            for item, _ in fresh:
                self._link(conn, item)
            conn.execute(INSERT_OUTBOX, [
                {"memory_id": r["id"], "scope": r["scope"], "op": "upsert", "created_at": now}
                for _, r in fresh])
            for item, row in fresh:
                if item.supersedes:  # a correction is audited once, as 'correct' (it names the new memory)
                    superseded = self.supersede(conn, row["scope"], list(item.supersedes), row["id"],
                                                now, conflict=row["tier"] != "episodic")
                    events += [] if item.corrects else superseded
                if item.corrects:  # in the same transaction: a correction never leaves the wrong one current
                    events += corrected(conn, row["scope"], list(item.supersedes), row, now)
                if row["id"] in renewed:
                    events += self.supersede(conn, row["scope"], [renewed[row["id"]]], row["id"], now,
                                              conflict=False, reason="renewed")
                if row["id"] in later:  # it was said before the fact stored: that one stays current
                    events += self.supersede(conn, row["scope"], [row["id"]], later[row["id"]], now, conflict=True)
        evidence = [{"scope": item.scope, "at": now, **e, "belief_id": item.id}
                    for item in items for e in item.evidence]
        if evidence:
            conn.execute(insert(Evidence), evidence)
        _record(conn, events)
        return [item.id for item in items]

    @staticmethod
    def _link(conn: Connection, item: NewMemory) -> None:
        """Record what `item` (stored or reinforced) was learned from."""
        sources = [s for s in dict.fromkeys(item.learned_from) if s != item.id]
        if not sources:
            return
        known = set(conn.execute(select(Link.source_id).where(Link.memory_id == item.id)).scalars())
        rows = [{"memory_id": item.id, "source_id": s, "scope": item.scope} for s in sources if s not in known]
        if rows:
            conn.execute(insert(Link), rows)

    @staticmethod
    def _same_texts(conn: Connection, rows: list[dict], now: float) -> dict[str, Memory]:
        """For each new row, the newest live, current memory of its scope with the same text,
        tier, kind and role (a user's "Thanks!" does not fold into the assistant's), keyed by the
        new row's id. One cheap query per scope; whole rows only for the (rare) repeats."""
        found: dict[str, str] = {}
        for scope in {row["scope"] for row in rows}:
            mine = [row for row in rows if row["scope"] == scope]
            hits = conn.execute(_SAME_TEXTS, {"scope": scope, "now": now,
                                              "hashes": list({row["content_hash"] for row in mine})}).all()
            key = lambda r: (r["content_hash"], r["tier"], r["kind"], r["role"])  # noqa: E731
            newest = {key(hit._mapping): hit.id for hit in hits}
            found.update({row["id"]: newest[key(row)] for row in mine if key(row) in newest})
        if not found:
            return {}
        full = _by_ids(conn, None, set(found.values()))
        return {new: full[old] for new, old in found.items()}

    @staticmethod
    def _current(conn: Connection, scope: str, memory_id: str) -> Optional[Memory]:
        found = _by_ids(conn, scope, [memory_id]).get(memory_id)
        return found if found is not None and found.superseded_by is None else None

    @staticmethod
    def _conflicting_facts(conn: Connection, item: NewMemory, said_at: Optional[float],
                           now: float) -> tuple[list[str], Optional[str]]:
        """The scope's current facts with the item's subject and predicate and another object:
        the ids of those said no later than `said_at` (the item replaces them; all of them when
        it is said now, None), and the newest said after it, if any (it replaces the item: the
        order they were said in decides, not the order they were stored in). A fact counts as
        said when it was last told, itself or the turn it was learned from (a live fact re-told
        today is today's, not its first day's);
        one learned from a turn whose date is not known (source ending UNDATED) counts as said
        before any dated or live one: it replaces only another such, and never one of those."""
        keys = _fact_keys(item.fact)
        found = conn.execute(
            select(Fact.memory_id, Memory.created_at, Memory.source, Memory.receipts)
            .join(Memory, Memory.id == Fact.memory_id).where(
                Fact.scope == item.scope, Fact.subject_key == keys["subject_key"],
                Fact.predicate_key == keys["predicate_key"], Fact.object_key != keys["object_key"],
                Memory.superseded_by.is_(None))).all()
        told = {memory_id: _told_at(created_at, receipts) for memory_id, created_at, _, receipts in found}
        if found:  # told again in a later turn: the turn it was learned from was reinforced
            for memory_id, created_at, receipts in conn.execute(
                    select(Link.memory_id, Memory.created_at, Memory.receipts).join(Memory, Memory.id == Link.source_id)
                    .where(Link.scope == item.scope, Link.memory_id.in_(list(told)))):
                told[memory_id] = max(told[memory_id], _told_at(created_at, receipts))
        ranked = sorted((_said_rank(source, told[memory_id]), memory_id) for memory_id, _, source, _ in found)
        if said_at is None:  # said now: it replaces them all
            return [memory_id for _, memory_id in ranked], None
        mine = _said_rank(item.source, min(now, said_at))
        newer = [memory_id for rank, memory_id in ranked if rank > mine]
        return [memory_id for rank, memory_id in ranked if rank <= mine], (newer[-1] if newer else None)

    @staticmethod
    def _replaced(conn: Connection, item: NewMemory, now: float) -> list[str]:
        """The scope's current memories of the item's kind and tier whose text is one it replaces."""
        hashes = list({content_hash(text) for text in item.replaces})
        return [hit.id for hit in conn.execute(_SAME_TEXTS, {"scope": item.scope, "now": now, "hashes": hashes})
                if (hit.tier, hit.kind) == (item.tier, item.kind)]

    @staticmethod
    def _reinforce(conn: Connection, memory: Memory, duplicate: dict, now: float) -> list[dict]:
        """Fold a duplicate into `memory`: one more corroboration, its receipt kept."""
        receipt = {"source": duplicate["source"], "session_id": duplicate["session_id"],
                   "turn": duplicate["turn"], "at": now}
        if duplicate["created_at"] < now:  # told again in imported history: when it was said there, if known
            receipt["said"] = None if (duplicate["source"] or "").endswith(UNDATED) else duplicate["created_at"]
        carried = json.loads(duplicate.get("receipts") or "[]")  # a folded memory's own repeats
        receipts = [*json.loads(memory.receipts or "[]"), *carried, receipt][-lifecycle.MAX_RECEIPTS:]
        count = memory.access_count + 1 + (duplicate.get("access_count") or 0)
        confidence = lifecycle.confidence(memory.reliability, count, memory.kind, 0.0,
                                          conflicted=bool(memory.superseded_by))
        state = lifecycle.reinforced_state(memory.state, confidence)
        values = {"access_count": count, "receipts": json.dumps(receipts), "confidence": confidence,
                  "state": state, "last_seen_at": now, "updated_at": now}
        if memory.expires_at is not None and duplicate["expires_at"] is not None:
            values["expires_at"] = max(memory.expires_at, duplicate["expires_at"])
        conn.execute(update(Memory).where(Memory.id == memory.id).values(**values))
        events = [_event(now, "reinforce", duplicate["source"], memory.scope, memory.id,
                         access_count=count, confidence=confidence)]
        if state != memory.state:
            events.append(_move(now, memory, state, "corroborated"))
        return events

    def supersede(self, conn: Connection, scope: str, old_ids: list[str], new_id: str, now: float,
                  conflict: bool, reason: str = "") -> list[dict]:
        """Mark the scope's memories `old_ids` superseded by `new_id` (kept, never deleted);
        a conflict halves their confidence."""
        olds = [m for m in _by_ids(conn, scope, old_ids).values() if m.superseded_by is None]
        events = []
        for old in olds:
            values = {"superseded_by": new_id, "updated_at": now}
            if conflict:
                values["confidence"] = round(old.confidence * lifecycle.CONFLICT_PENALTY, 4)
            conn.execute(update(Memory).where(Memory.id == old.id).values(**values))
            events.append(_event(now, "supersede", "cmms", scope, old.id, superseded_by=new_id,
                                 reason=reason or ("conflict" if conflict else "consolidation")))
        return events

    @staticmethod
    def _row(item: NewMemory, now: float) -> dict:
        _redact_item(item)
        return {
            "id": uuid.uuid4().hex, "scope": item.scope, "tier": item.tier, "kind": item.kind,
            "role": item.role, "content": item.content, "content_hash": content_hash(item.content),
            "session_id": item.session_id, "turn": None, "context": None, "source": item.source,
            "tags": json.dumps(list(item.tags)), "confidence": item.confidence,
            "state": lifecycle.initial_state(item.confidence), "superseded_by": None,
            "created_at": now if item.said_at is None else min(now, item.said_at), "updated_at": now,
            "expires_at": item.expires_at,
            "speaker": item.speaker or speaker_of(item.content), "access_count": 0, "receipts": "[]",
            "reliability": item.confidence, "last_seen_at": now,
            "consolidated_at": None if item.tier == "episodic" else now,  # only episodes wait for it
            "detail": json.dumps(item.detail, ensure_ascii=False) if item.detail else None,
        }

    def previous_message_ids(self, scope: str, memories: Sequence[Memory]) -> dict[str, str]:
        """For each memory, the id of the message before it in its session (when there is one)."""
        # `kind || ''` (the same test) keeps SQLite, which has no statistics, off the (scope, kind)
        # index, which read every message of the scope for each memory (60% of an index writer's
        # time at 50,000 memories): it takes the session's.
        query = (select(Memory.id).where(Memory.scope == scope, Memory.kind.concat("") == "message")
                 .order_by(Memory.seq.desc()).limit(1))
        found = {}
        with self.read() as conn:
            for m in memories:
                if m.session_id is not None and m.seq is not None:
                    before = conn.execute(query.where(Memory.session_id == m.session_id,
                                                      Memory.seq < m.seq)).scalar()
                    if before:
                        found[m.id] = before
        return found

    def delete(self, scope: str, memory_id: str, actor: str = "") -> bool:
        """Delete one memory of `scope` and queue its vector removal; False if absent."""
        return bool(self.delete_where(scope, ids=[memory_id], actor=actor))

    def delete_where(self, scope: str, *, ids: Optional[Sequence[str]] = None,
                     tier: Optional[str] = None, tags: Sequence[str] = (), actor: str = "",
                     action: str = "forget", now: Optional[float] = None) -> list[str]:
        """Delete the memories of `scope` matching every filter given (at least one); return
        their ids. A forgotten memory is first written whole to the audit log (an expired one is
        not: it was meant to go); its facts go too, its vectors are queued for removal, a
        summary made from it goes with it, and memories it had superseded are current again.
        With action 'expire' (the sweep) only memories past `now` are deleted. The matching ids
        are read first, then deleted in bounded batches (each memory with all it cascades to)."""
        if ids is None and tier is None and not tags:
            raise ValueError("delete_where needs a filter")
        now = now or time.time()
        if ids is None:
            with self.read() as conn:
                ids = list(conn.execute(_filtered(select(Memory.id).where(Memory.scope == scope), tier, tags)).scalars())
        gone: list[str] = []

        def forget(conn: Connection, part: list[str]) -> None:
            rows = [m for m in _by_ids(conn, scope, part).values()  # by id alone (see _by_ids), then the filters
                    if (tier is None or m.tier == tier) and has_tags(m, tags)
                    and (action != "expire" or (m.expires_at is not None and m.expires_at <= now))]
            self._delete_rows(conn, scope, rows, action, actor, now, snapshots=action == "forget")
            gone.extend(m.id for m in rows)
        in_batches(self, slices(list(ids), forget))
        if gone and action == "forget":
            self._checkpoint()
        return gone

    def merge(self, scope: str, pairs: Sequence[tuple[str, str]], actor: str = "cmms:dedup") -> int:
        """Fold near-duplicates into the memories they repeat, in bounded batches: for each
        (duplicate, into) pair the second is reinforced with the first's receipts and the first
        deleted (a 'merge' event records it, without a copy of the text). Returns how many."""
        now, folded = time.time(), 0

        def fold(conn: Connection, part: list[tuple[str, str]]) -> None:
            nonlocal folded
            for duplicate_id, into_id in part:
                rows = _by_ids(conn, scope, [duplicate_id, into_id])
                if len(rows) != 2 or rows[into_id].superseded_by or rows[duplicate_id].pinned:
                    continue  # (a pinned memory is never folded away)
                duplicate = rows[duplicate_id]
                _record(conn, self._reinforce(conn, rows[into_id], duplicate.model_dump(), now))
                self._delete_rows(conn, scope, [duplicate], "merge", actor, now, snapshots=False, into=into_id)
                folded += 1
        in_batches(self, slices(list(pairs), fold))
        return folded

    def _delete_rows(self, conn: Connection, scope: str, rows: list[Memory], action: str, actor: str,
                     now: float, snapshots: bool = True, scrub_context: bool = True, **detail) -> None:
        plan = forget_plan(conn, scope, rows, scrub_context)  # what goes with them (the preview's count)
        rows, ids, cascaded, after = plan.rows, plan.ids, plan.cascaded, plan.reembed
        if not ids:
            return
        facts = self._fact_parts(conn, ids) if snapshots else {}
        _record(conn, [_event(now, action, actor, scope, m.id, state_from=m.state, state_to="forgotten",
                              snapshot=_snapshot(m, facts.get(m.id)) if snapshots and m.id not in cascaded else None,
                              **({"reason": cascaded[m.id]} if m.id in cascaded else detail))
                       for m in rows])
        _drop_knowledge(conn, scope, ids)
        recall_events.drop_memories(conn, ids)
        conn.execute(delete(Fact).where(Fact.memory_id.in_(ids)))
        conn.execute(delete(Memory).where(Memory.id.in_(ids)))
        if after:  # their context held the end of a deleted message: drop it, re-embed them
            conn.execute(update(Memory).where(Memory.id.in_(after)).values(context=None, updated_at=now))
            conn.execute(insert(Outbox), [{"memory_id": i, "scope": scope, "op": "upsert", "created_at": now}
                                          for i in after])
        # (ids are unique store-wide, so no scope filter: it would make SQLite scan the scope)
        conn.execute(update(Memory).where(Memory.superseded_by.in_(ids), Memory.tier == "episodic")
                     .values(superseded_by=None, consolidated_at=None, updated_at=now))
        conn.execute(update(Memory).where(Memory.superseded_by.in_(ids)).values(superseded_by=None, updated_at=now))
        conn.execute(insert(Outbox), [{"memory_id": i, "scope": scope, "op": "delete", "created_at": now}
                                      for i in ids])

    @staticmethod
    def _fact_parts(conn: Connection, ids: Sequence[str], scope: Optional[str] = None
                    ) -> dict[str, tuple[str, str, str]]:
        query = select(Fact).where(Fact.memory_id.in_(list(ids)))
        rows = conn.execute(query if scope is None else query.where(Fact.scope == scope))
        return {row.memory_id: (row.subject, row.predicate, row.object) for row in rows}

    def record(self, action: str, actor: str, scope: Optional[str], memory_id: Optional[str] = None,
               **detail) -> None:
        """Write one audit event on its own (tool calls, jobs)."""
        with self.writing() as conn:
            _record(conn, [_event(time.time(), action, actor, scope, memory_id, **detail)])

    def audit_events(self, scope: Optional[str] = None, *, memory_id: Optional[str] = None,
                     action: Optional[str] = None, door: Optional[str] = None, since: Optional[float] = None,
                     until: Optional[float] = None, limit: int = 50, offset: int = 0) -> list[AuditEvent]:
        """Audit events, newest first, optionally of one scope, memory, action, door (the actor,
        whole or up to a colon: "mcp" finds "mcp:store_memory") and time range. A scope being
        forgotten has none meanwhile (its forget blanks their snapshots and details first, and a
        killed one may not have)."""
        query = select(AuditEvent).where(or_(AuditEvent.scope.is_(None),
                                             AuditEvent.scope.not_in(select(Forgetting.scope))))
        for column, value in ((AuditEvent.scope, scope), (AuditEvent.memory_id, memory_id),
                              (AuditEvent.action, action)):
            if value is not None:
                query = query.where(column == value)
        if door is not None:
            query = query.where(or_(AuditEvent.actor == door, AuditEvent.actor.startswith(door + ":", autoescape=True)))
        if since is not None:
            query = query.where(AuditEvent.at >= since)
        if until is not None:
            query = query.where(AuditEvent.at <= until)
        with self.read() as conn:
            rows = conn.execute(query.order_by(AuditEvent.id.desc()).limit(limit).offset(offset))
            return [AuditEvent.model_construct(**row._mapping) for row in rows]

    def _checkpoint(self) -> None:
        """After a forget has committed: scrub the database files (see scrub)."""
        self.scrub()

    def scrub(self, outbox_only: bool = False) -> bool:
        """Leave no trace of deleted rows in the database's files, once the delete has committed.
        The keyword index is merged in bounded steps, each a short write transaction of its own
        with a pause as long after it (so other writers, polling for SQLite's lock, get in),
        until no deleted word is left in it. Then SQLite's WAL is checkpointed and truncated
        (secure_delete has zeroed what the delete freed), or PostgreSQL vacuums the tables and
        rebuilds its word indexes (_postgres.scrub). Best effort: the forget stands either way;
        False, with a warning, when a step failed or a reader kept the WAL from emptying. With
        `outbox_only` (once the index writer has deleted a forget's outbox rows), only those."""
        try:
            if not outbox_only:
                self._purge_keywords()
            if self.engine.dialect.name == "postgresql" and outbox_only:
                _postgres.scrub(self.engine, tables=("outbox",), indexes=())
            elif self.engine.dialect.name == "postgresql":
                _postgres.scrub(self.engine)
            return self._truncate_wal() if self.engine.dialect.name == "sqlite" else True
        except Exception as exc:  # noqa: BLE001 - the delete itself is committed
            log.warning("hermes-cmms: scrubbing the database files after a forget failed: %s", exc)
            return False

    def _purge_keywords(self) -> None:
        more, first = True, True
        while more:
            started = time.perf_counter()
            with self.writing() as conn:
                more, first = self.keyword.purge(conn, first), False
            if more:
                time.sleep(time.perf_counter() - started)

    def _truncate_wal(self, tries: int = 5) -> bool:
        for attempt in range(tries):  # a reader's snapshot ends within milliseconds
            if _sqlite.checkpoint(self.engine):
                return True
            time.sleep(0.05 * (attempt + 1))
        log.warning("hermes-cmms: a reader kept the WAL from being truncated after a forget; "
                    "the next forget or checkpoint empties it")
        return False

    def blank_snapshots(self, before: float) -> int:
        """Drop the content of audit snapshots taken before `before`; return how many."""
        with self.writing() as conn:
            blanked = conn.execute(update(AuditEvent).where(AuditEvent.snapshot.is_not(None), AuditEvent.at < before)
                                   .values(snapshot=None)).rowcount
        if blanked:  # the last copy of forgotten text: out of the files too
            self.scrub()
        return blanked

    # -- sessions -------------------------------------------------------------------------

    def claim_unextracted(self, scope: str, session_id: str, limit: Optional[int] = None) -> list[Memory]:
        """The user's messages of a session's turns that knowledge was not read from yet,
        claimed: the session is marked read up to the last turn claimed in the same
        transaction, so a concurrent flush (or a later one) gets none of them. With `limit`,
        only the turns of the next `limit` user messages (the rest wait for the next claim:
        a process killed before it learned from a claim loses that claim's turns, no others);
        without, every turn to the last."""
        key = {"scope": scope, "session_id": session_id}
        with self.writing([scope]) as conn:
            row = conn.execute(select(ConversationSession.extracted_turn, ConversationSession.last_turn)
                               .filter_by(**key)).first()
            if row is None or row.last_turn <= row.extracted_turn:
                return []
            user = (Memory.scope == scope, Memory.session_id == session_id, Memory.kind == "message",
                    Memory.role == "user", Memory.turn > row.extracted_turn)
            up_to = row.last_turn
            if limit is not None:
                turns = conn.execute(select(Memory.turn).where(*user, Memory.turn <= row.last_turn)
                                     .order_by(Memory.turn).limit(max(1, limit))).scalars().all()
                if len(turns) >= max(1, limit):
                    up_to = turns[-1]
            claimed = conn.execute(update(ConversationSession).filter_by(**key).where(
                ConversationSession.extracted_turn == row.extracted_turn).values(extracted_turn=up_to))
            if claimed.rowcount != 1:
                return []
            found = conn.execute(select(Memory).where(*user, Memory.turn <= up_to).order_by(Memory.seq))
            return [_memory(m) for m in found]

    def mark_flushed(self, scope: str, session_id: str) -> bool:
        """Record that a session was flushed; False when it was already flushed or unknown."""
        with self.writing([scope]) as conn:
            done = conn.execute(update(ConversationSession)
                                .where(ConversationSession.scope == scope,
                                       ConversationSession.session_id == session_id,
                                       ConversationSession.flushed_at.is_(None))
                                .values(flushed_at=time.time()))
            return bool(done.rowcount)

    # -- outbox ---------------------------------------------------------------------------

    def pending(self, limit: int) -> list[Outbox]:
        """The next `limit` outbox rows: vector deletions first (a forget waits for them; an
        upsert of a memory deleted meanwhile finds nothing to embed), then by age."""
        with self.read() as conn:
            rows = conn.execute(select(Outbox).order_by(Outbox.op != "delete", Outbox.id).limit(limit))
            return [Outbox.model_validate(row._mapping) for row in rows]

    def outbox_empty(self) -> bool:
        """Whether no vector write or deletion waits (one row read, not the outbox sorted)."""
        with self.read() as conn:
            return conn.execute(select(Outbox.id).limit(1)).first() is None

    def claim(self, limit: int, by_scope: bool = False):
        """A context manager: up to `limit` outbox rows for this process to write vectors for
        (outbox_claims.claim), and their done() or failed()."""
        return outbox_claims.claim(self, limit, by_scope)

    def deletes_pending(self, scope: Optional[str] = None, after: int = 0) -> bool:
        """Whether vector deletions are queued: of `scope`, or of any scope after outbox row `after`."""
        query = select(Outbox.id).where(Outbox.op == "delete", Outbox.id > after)
        if scope is not None:
            query = query.where(Outbox.scope == scope)
        with self.read() as conn:
            return conn.execute(query.limit(1)).first() is not None

    def queued(self, scope: str, memory_ids: Sequence[str], ahead: int) -> tuple[set[str], int]:
        """Which of `memory_ids` (of `scope`) have a vector write waiting in the outbox, and how
        many older rows of any scope wait ahead of the first of them (counted up to `ahead`)."""
        with self.read() as conn:
            rows = conn.execute(select(Outbox.id, Outbox.memory_id).where(
                Outbox.scope == scope, Outbox.memory_id.in_(list(memory_ids)))).all()
            if not rows:
                return set(), 0
            first = min(row.id for row in rows)
            older = conn.execute(select(Outbox.id).where(Outbox.id < first).limit(ahead)).all()
            return {row.memory_id for row in rows}, len(older)

    def deletes_queued(self, scope: str) -> int:
        """How many vector deletions of `scope` are queued (one per forgotten memory)."""
        with self.read() as conn:
            return conn.execute(select(func.count()).select_from(Outbox)
                                .where(Outbox.op == "delete", Outbox.scope == scope)).scalar_one()

    def has_memories(self, scope: str) -> bool:
        """Whether any memory of `scope` is stored (raw: expired and superseded ones count)."""
        with self.read() as conn:
            return conn.execute(select(Memory.id).where(Memory.scope == scope).limit(1)).first() is not None

    def drop_deletes(self, scope: str, claimed: Sequence[int]) -> int:
        """Remove the queued vector deletions of `scope` but the `claimed` outbox rows (the index
        writer has just deleted the scope's collections whole, so the others have nothing left
        to delete; the claimed ones go when the claim is done, after the index files are
        scrubbed, which is what a forget waits for), in bounded transactions; how many. One
        drop then ends a forget --all of 60,000 memories, not 60,000 rows taken 64 at a time,
        each batch deleting the collections again."""
        gone = 0

        def step(conn: Connection, size: int) -> int:
            nonlocal gone
            doomed = select(Outbox.id).where(Outbox.scope == scope, Outbox.op == "delete",
                                             Outbox.id.not_in(list(claimed))).limit(size)
            gone += (done := conn.execute(delete(Outbox).where(Outbox.id.in_(doomed))).rowcount)
            return done
        in_batches(self, step, Batches(self.engine.dialect.name, first=1000, most=OUTBOX_ROWS))
        return gone

    def done(self, outbox_ids: Sequence[int]) -> None:
        """Forget finished outbox rows and bump the index generation other processes watch."""
        if outbox_ids:
            with self.writing() as conn:
                conn.execute(delete(Outbox).where(Outbox.id.in_(list(outbox_ids))))
                conn.execute(update(IndexState).where(IndexState.name == "vectors")
                             .values(generation=IndexState.generation + 1))

    def identity(self) -> str:
        """The store's id, made with it (the name a Chroma server's database keeps of its store)."""
        with self.read() as conn:
            return conn.execute(select(StoreIdentity.id)).scalar_one()

    def location(self) -> str:
        """Where this store lives (store/_sqlite.location, _postgres.location): a copy of it (the
        SQLite file copied, the database cloned or restored elsewhere) has its id but not this."""
        dialect = _sqlite if self.engine.dialect.name == "sqlite" else _postgres
        with self.read() as conn:
            return dialect.location(conn)

    def index_generation(self) -> int:
        with self.read() as conn:
            return conn.execute(select(IndexState.generation)
                                .where(IndexState.name == "vectors")).scalar() or 0

    def failed(self, outbox_ids: Sequence[int], error: str) -> None:
        if outbox_ids:
            with self.writing() as conn:
                conn.execute(update(Outbox).where(Outbox.id.in_(list(outbox_ids)))
                             .values(attempts=Outbox.attempts + 1, last_error=error[:500]))

    # -- reads ----------------------------------------------------------------------------

    def get(self, ids: Sequence[str], scope: str) -> dict[str, Memory]:
        """The memories among `ids` that belong to `scope` (never any other scope). A scope being
        forgotten (forget --all begun) reads as empty here and in every read below."""
        if not ids:
            return {}
        now = time.time()
        with self.read() as conn:
            if forgetting(conn, scope):
                return {}
            return {i: m for i, m in _by_ids(conn, scope, ids).items()
                    if m.expires_at is None or m.expires_at > now}

    def page(self, scope: str, *, tier: Optional[str] = None, tags: Sequence[str] = (),
             state: Optional[str] = None, kinds: Sequence[str] = (), current: bool = False,
             limit: int = 50, offset: int = 0) -> tuple[list[Memory], int]:
        """One page of a scope's live memories, newest first, and how many match in all;
        `current` leaves out superseded ones."""
        live = _filtered(select(Memory).where(Memory.scope == scope, _live(time.time())), tier, tags)
        if state is not None:
            live = live.where(Memory.state == state)
        if kinds:
            live = live.where(Memory.kind.in_(list(kinds)))
        if current:
            live = live.where(Memory.superseded_by.is_(None))
        with self.read() as conn:
            if forgetting(conn, scope):
                return [], 0
            total = conn.execute(select(func.count()).select_from(live.subquery())).scalar_one()
            rows = conn.execute(live.order_by(Memory.seq.desc()).limit(limit).offset(offset))
            return [_memory(row) for row in rows], total

    def facts(self, ids: Sequence[str], scope: Optional[str] = None) -> dict[str, tuple[str, str, str]]:
        """(subject, predicate, object) of the fact memories among `ids` (of `scope` only, if given)."""
        if not ids:
            return {}
        with self.read() as conn:
            return self._fact_parts(conn, ids, scope)

    def keyword_search(self, scope: str, query: str, limit: int, with_context: bool = False,
                       filters: Optional[Filters] = None) -> list[tuple[str, float]]:
        """(memory id, score) pairs, best first. With `filters`, among every keyword match of
        the memories that pass them (in SQL: none is missed past the first hits)."""
        if filters is not None:
            rows, _ = self.browse_rows(scope, filters, query=query, every=False, with_context=with_context,
                                       sort="relevance", limit=limit, count=False)
            return [(memory.id, score) for memory, score in rows]
        with self.read() as conn:
            return [] if forgetting(conn, scope) else self.keyword.search(conn, scope, query, limit, with_context)

    def keyword_views(self, scope: str, query: str, limit: int,
                      filters: Optional[Filters] = None) -> list[list[tuple[str, float]]]:
        """keyword_search of the memories' own text, then with their context (a recall ranks
        by both), in one read: the scope checked once, the query's words looked up once."""
        if filters is not None:
            return [self.keyword_search(scope, query, limit, with_context, filters) for with_context in (False, True)]
        with self.read() as conn:
            return [[], []] if forgetting(conn, scope) else self.keyword.searches(conn, scope, query, limit)

    def containing(self, scope: str, fragment: str, sources: Sequence[str], limit: int = 5) -> list[Memory]:
        """The scope's current memories from `sources` whose text contains `fragment`."""
        escaped = like_literal(fragment)
        with self.read() as conn:
            if forgetting(conn, scope):
                return []
            rows = conn.execute(select(Memory).where(
                Memory.scope == scope, Memory.source.in_(list(sources)), Memory.superseded_by.is_(None),
                Memory.content.like(f"%{escaped}%", escape="\\")).order_by(Memory.seq.desc()).limit(limit))
            return [_memory(row) for row in rows]

    def recent(self, scope: str, limit: int) -> list[Memory]:
        with self.read() as conn:
            if forgetting(conn, scope):
                return []
            rows = conn.execute(select(Memory).where(Memory.scope == scope, Memory.state == "active")
                                .order_by(Memory.created_at.desc()).limit(limit))
            return [_memory(row) for row in rows]

    def unflushed_sessions(self, scope: Optional[str] = None,
                           session_id: Optional[str] = None) -> list[tuple[str, str]]:
        query = select(ConversationSession.scope, ConversationSession.session_id).where(
            ConversationSession.flushed_at.is_(None))
        if scope is not None:
            query = query.where(ConversationSession.scope == scope)
        if session_id is not None:
            query = query.where(ConversationSession.session_id == session_id)
        with self.read() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def counts(self, scope: Optional[str] = None) -> dict[str, int]:
        """Rows of the store, or of one scope only (what a door bound to a scope may show; none
        while the scope is being forgotten)."""
        def count(table, *columns):
            query = select(func.count(*columns)).select_from(table)
            return query if scope is None else query.where(table.scope == scope)
        with self.read() as conn:
            if scope is not None and forgetting(conn, scope):
                return {"memories": 0, "scopes": 0, "sessions": 0, "outbox": 0}
            return {
                "memories": conn.execute(count(Memory)).scalar_one(),
                "scopes": conn.execute(count(Memory, func.distinct(Memory.scope))).scalar_one(),
                "sessions": conn.execute(count(ConversationSession)).scalar_one(),
                "outbox": conn.execute(count(Outbox)).scalar_one(),
            }

    def integrity(self) -> str:
        """'ok' or the database's own description of what is wrong."""
        with self.read() as conn:
            if self.engine.dialect.name == "sqlite":
                return _sqlite.quick_check(conn)
            conn.execute(text("SELECT 1"))
            return "ok"


def _read_only(error) -> bool:
    """Whether a driver error says the database refuses writes: SQLite's SQLITE_READONLY (8, with
    its extended codes), PostgreSQL's read_only_sql_transaction (SQLSTATE 25006)."""
    code = getattr(error, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == 8) or getattr(error, "sqlstate", None) == "25006"


def _disk_full(error) -> bool:
    """Whether a driver error says the disk is full: SQLite's SQLITE_FULL (13), PostgreSQL's
    disk_full (SQLSTATE 53100)."""
    return getattr(error, "sqlite_errorcode", None) == 13 or getattr(error, "sqlstate", None) == "53100"
