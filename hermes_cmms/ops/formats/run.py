"""Import a foreign file: its reader's records are checked as they come, into a plan per scope
(ops/transfer.Plan), and held (in memory, past HELD_BYTES in a file of their own); once the
reader is done, ops/transfer.import_checked writes each scope's records as they are, the
memories by the retain hook: in batches, skipping what is stored. A reader that fails midway
leaves nothing written; an import that stops while writing (killed, the database gone) keeps the
batches it wrote, and importing again adds only the rest (the ids are stable). A dry run reads
and checks the same way and says what would be added, without writing."""
from __future__ import annotations

import os
import pickle
import re
import sqlite3
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterator, Optional, Union

from . import DAMAGED, Skipped, _readers, check_whole, damaged, detect
from .. import transfer
from .._transfer_records import FORMAT, KINDS, VERSION, Kind, check_header, row_of, stored_id
from ...common.checks import scope_of
from ...common.errors import InvalidInput
from ...common.plugins import run_redactors
from ...common.text import clean
from ...common.scopes import local_scope
from .._rows import transfer as transfer_rows
from ...store.store import CONTEXT_CHARS

if TYPE_CHECKING:
    from ...engine import Engine

HELD_BYTES = 128 * 2**20  # a scope's records held in memory up to about this much; the rest in a file
ROW_BYTES = 1024  # what a held row costs besides its strings (about)
KEYS = {"session": "session_id", "memory": "id", "fact": "memory_id"}

__all__ = ["NO_STORE", "import_foreign", "plan_foreign"]


def import_foreign(engine: "Engine", path: Union[str, os.PathLike], *, fmt: Optional[str] = None,
                   scope: Optional[str] = None, dry_run: bool = False, progress: Optional[transfer.Progress] = None,
                   actor: str = "") -> dict:
    """Import `path` (of format `fmt`, else detected) into the scopes its reader names (into
    `scope` alone, if given); with `dry_run`, only say what would be added. See the module
    docstring."""
    path, name, reader = _opened(path, fmt)
    return _imported(engine, Path(engine.settings.home), path, reader, name, scope=scope, dry_run=dry_run,
                     progress=progress, actor=actor, named=fmt is not None)


def plan_foreign(home: Union[str, os.PathLike], path: Union[str, os.PathLike], *, fmt: Optional[str] = None,
                 scope: Optional[str] = None, progress: Optional[transfer.Progress] = None) -> dict:
    """The dry run of `import_foreign` for a Hermes home (`home`) that has no store yet, which it
    does not create: the file read and checked the same way; every memory and session is new,
    and none was kept live (there is no store to have kept it: the summary's `store` says so)."""
    path, name, reader = _opened(path, fmt)
    return _imported(None, Path(home), path, reader, name, scope=scope, dry_run=True, progress=progress,
                     actor="", named=fmt is not None)


def _opened(path: Union[str, os.PathLike], fmt: Optional[str]) -> tuple[Path, str, object]:
    """The file, its format (`fmt`, else detected) and that format's reader; InvalidInput for a
    file that cannot be read, a format not known, or an archive damaged as a whole."""
    path = Path(path)
    try:
        path.stat()
    except OSError as exc:
        raise InvalidInput(f"Cannot read {str(path)!r}: {exc.strerror}.") from None
    readers = _readers()
    name = fmt or detect(path)
    if name not in readers:
        raise InvalidInput(f"Unknown format {name!r}; choose one of {', '.join(readers)}.")
    check_whole(path)
    return path, name, readers[name]


NO_STORE = ("none yet (this dry run created none): nothing is stored already, so every session and memory is new "
            "and none was kept while Hermes ran")


def _imported(engine: Optional["Engine"], home: Path, path: Path, reader, name: str, *, scope: Optional[str],
              dry_run: bool, progress: Optional[transfer.Progress], actor: str, named: bool) -> dict:
    if name == "cmms" and not dry_run:  # our own export: its import checks the header's counts too
        return {"format": name, **transfer.import_file(engine, path, scope=scope, progress=progress, actor=actor)}
    if name == "cmms":  # its dry run refuses what its import would, in the same words
        transfer.check_file(engine and engine.store, path, scope)
    progress = progress or (lambda phase, done, total: None)
    default = scope_of(scope) if scope is not None else local_scope(home)
    kept_live = partial(_kept_live, engine) if engine is not None else (lambda scope, session_id: False)
    held = partial(_held, engine) if engine is not None else (lambda scope, ids: {})
    redact = (lambda scope, text: run_redactors(engine.pm, text, scope)) if engine is not None and not dry_run \
        else (lambda scope, text: text)  # (a dry run stores no context)
    reading = _Reading(path, scope is not None, default, kept_live, held, hold=not dry_run, redact=redact)
    size, by_bytes = (path.stat().st_size if path.is_file() else None), None
    try:
        for done, item in enumerate(_guarded(path, reader.records(path, scope=default)), 1):
            reading.take(item)
            if done % transfer.CHUNK == 0:
                at = read_at(path) if size and by_bytes is not False else None
                by_bytes = at is not None if by_bytes is None else by_bytes
                if by_bytes:  # (bytes of the file, once its reader's handle is seen; else records)
                    progress("reading", size if at is None else at, size)
                else:
                    progress("reading", done, None)
        reading.close()
        if named and not reading.spools:
            reading.refuse_empty(path, name)
        summary = {"format": name, "path": str(path), "dry_run": dry_run, **reading.summary()}
        if engine is None:
            summary["store"] = NO_STORE
        try:
            if dry_run:
                summary["scopes"] = {s: _planned(engine, spool) for s, spool in reading.spools.items()}
            else:
                summary["scopes"] = {s: _written(engine, spool, progress, actor or f"import:{name}")
                                     for s, spool in reading.spools.items()}
        except InvalidInput as exc:
            raise InvalidInput(_unlined(str(exc))) from None
        return summary
    finally:
        for spool in reading.spools.values():
            if spool.held is not None:
                spool.held.close()


def _guarded(path: Path, records: Iterator) -> Iterator:
    """A reader's records, a damaged ZIP or gzip, or a file SQLite cannot read (of Hermes'
    formats), met while it reads turned into one sentence naming the file (nothing is written
    yet)."""
    try:
        yield from records
    except DAMAGED as exc:
        raise InvalidInput(damaged(path, exc)) from None
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{str(path)!r} is not a SQLite database of Hermes' ({exc}); nothing was imported.") from None


_SPOOL_LINE = re.compile(r"Line \d+: (.)")


def _unlined(message: str) -> str:
    """A refusal of the whole file (an id another scope owns) without the line of the spool it
    names: the records of a foreign file are no lines a user can look up."""
    return _SPOOL_LINE.sub(lambda m: m.group(1).upper(), message, count=1) if message.startswith("Line ") else message


def read_at(path: Path) -> Optional[int]:
    """How far this process has read `path` (the reader's own handle on it, a ZIP's too), from
    Linux's /proc/self/fdinfo: the reading's progress in bytes, so its bar has an end and an
    ETA; None elsewhere, or when the reader reads a copy (Hermes' SQLite files)."""
    try:
        target = os.path.realpath(path)
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}") == target:
                    with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                        return int(info.readline().split()[1])  # "pos:\t<offset>"
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        pass
    return None


class _Spool:
    """One scope's records: the import's plan of them, made as they come (each is checked once,
    by row_of), and the records as checked (_Held), for the writing pass (not for a dry run)."""

    def __init__(self, scope: str, hold: bool = True) -> None:
        self.scope, self.counts = scope, Counter()
        self.seen: dict[str, set] = {kind: set() for kind in KEYS}
        self.plan = transfer.Plan()
        self.held = _Held() if hold else None
        self.user_turns: Counter = Counter()  # session id -> the user's turns read for facts after the import

    def add(self, record: dict, kind: Kind, row: dict) -> None:
        """Add `record` (checked by row_of as `kind`, `row`); InvalidInput, and nothing added,
        if the plan refuses it (a key the spool holds already)."""
        line = 2 + sum(self.counts.values())  # (its line, were the records an export file)
        self.plan.take(kind, row, line)
        self.counts[kind.plural] += 1
        if record["type"] in KEYS:
            self.seen[record["type"]].add(record[KEYS[record["type"]]])
        if record["type"] == "memory" and (record.get("kind"), record.get("role")) == ("message", "user") \
                and record.get("turn") is not None:
            self.user_turns[record.get("session_id")] += 1
        if self.held is not None:
            self.held.append((line, kind, row))

    def close(self) -> None:
        header = {"type": "header", "format": FORMAT, "version": VERSION, "scope": self.scope,
                  "exported_at": time.time(), "counts": dict(self.counts)}
        self.plan.header = check_header(header, 1)


class _Held:
    """Checked records, (line, kind, row), in the order they came: in memory up to HELD_BYTES
    (about: each row's strings and ROW_BYTES), past that a batch at a time into an anonymous
    temporary file (pickled, read back once, not checked again), so an export of hundreds of
    megabytes is never in memory whole."""

    def __init__(self) -> None:
        self.kept: list[tuple] = []
        self.batch: list[tuple] = []
        self.size, self.batches = 0, 0
        self.file: Optional[IO[bytes]] = None

    def append(self, checked: tuple) -> None:
        self.size += ROW_BYTES + sum(len(v) for v in checked[2].values() if isinstance(v, str))
        self.batch.append(checked)
        if len(self.batch) >= transfer.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self.size <= HELD_BYTES:
            self.kept += self.batch
        else:
            self.file = self.file or tempfile.TemporaryFile()  # noqa: SIM115 - the spool, closed with the run
            pickle.dump([(line, kind.name, row) for line, kind, row in self.batch], self.file, pickle.HIGHEST_PROTOCOL)
            self.batches += 1
        self.batch = []

    def __iter__(self):
        yield from self.kept
        if self.file is not None:
            self.file.seek(0)
            for _ in range(self.batches):
                yield from ((line, KINDS[name], row) for line, name, row in pickle.load(self.file))
        yield from self.batch

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class _Reading:
    """What the reader gave, sorted into spools by scope, each record checked as it comes: the
    skipped by reason, the dates filled in, the date range."""

    def __init__(self, path: Path, forced: bool, default: str, kept_live: Callable[[str, str], bool],
                 held: Callable[[str, list], dict], hold: bool = True,
                 redact: Callable[[str, str], str] = lambda scope, text: text) -> None:
        self.forced, self.default, self.kept_live, self.hold = forced, default, kept_live, hold
        self.redact = redact  # (scope, text) -> the text as it will be stored
        self.held, self.last_held = held, ((), {})  # (scope, ids) asked last, and the texts held
        self.taken: dict[tuple[str, str], str] = {}  # (scope, a record's own id) -> the stored id it is
        self.live: set[tuple[str, str]] = set()  # (scope, session id) of sessions a door kept live
        self.mtime, self.now = path.stat().st_mtime, time.time()
        self.spools: dict[str, _Spool] = {}
        self.skipped: Counter = Counter()
        self.examples: dict[str, str] = {}
        self.dated = Counter()
        self.started: dict[str, float] = {}  # session id -> started_at
        self.previous: dict[str, str] = {}  # session id -> the end of its last message's text, redacted
        self.first: Optional[float] = None
        self.last: Optional[float] = None

    def take(self, item) -> None:
        if isinstance(item, Skipped):
            self._skip(item.reason, item.where)
            return
        kind = item.get("type")
        if kind not in KINDS:
            raise InvalidInput(f"The reader gave a record of type {kind!r}; a reader gives session, memory and fact "
                               f"records.")
        record = dict(item)
        named = record.pop("scope", None)
        where = _where(record)
        try:
            scope = scope_of(self.default if self.forced or named is None else named)
        except InvalidInput:
            self._skip("its user names no scope hermes-cmms can store", where)
            return
        known_as = record.pop("known_as", None)
        if kind == "session" and known_as is not None and self.kept_live(scope, known_as):
            self.live.add((scope, record["session_id"]))
            self._skip("a session hermes-cmms kept while it ran", where)
            return
        if kind == "memory" and (scope, record.get("session_id")) in self.live:
            self._skip("a message of a session hermes-cmms kept while it ran", where)
            return
        spool = self.spools.get(scope) or self.spools.setdefault(scope, _Spool(scope, self.hold))
        self._same(record, scope, spool)
        self._date(record, scope)
        checked = self._checked(record, spool)
        if isinstance(checked, str):
            self._skip(checked, where)
            return
        try:
            spool.add(record, *checked)
        except InvalidInput:
            self._skip(f"a {kind} the file holds twice", where)

    def _same(self, record: dict, scope: str, spool: _Spool) -> None:
        """A memory whose reader names ids it may already be stored as (`same_as`: our own
        export's marks) takes the one the scope holds with its very text, so it counts as present;
        a fact follows its memory. A mark naming another memory, another scope's or none is no
        match: the record keeps its own id (a crafted file reaches no memory but its own)."""
        if record["type"] == "fact":
            record["memory_id"] = self.taken.get((scope, record.get("memory_id")), record.get("memory_id"))
            return
        candidates = record.pop("same_as", None)
        if record["type"] != "memory" or not candidates:
            return
        if self.last_held[0] != (scope, tuple(candidates)):
            self.last_held = (scope, tuple(candidates)), self.held(scope, candidates)
        match = next((i for i, text in self.last_held[1].items() if text == record.get("content")
                      and i not in spool.seen["memory"]), None)
        if match is not None:
            self.taken[(scope, record["id"])] = match
            record["id"] = match

    def _date(self, record: dict, scope: str) -> None:
        """Fill in the dates a record lacks, and bring a date to come back to the import's (a
        message whose own date is not known has its receipt say `dated`: how it was dated; what
        is learned from it never replaces a fact said at a known time, knowledge/learn)."""
        if record["type"] == "session":
            if record.get("started_at") is None:
                record["started_at"] = self.mtime
                record["flushed_at"] = record.get("flushed_at") or self.mtime
                self.dated["sessions dated by the file's modification time"] += 1
            elif self._future(record, "started_at"):
                self.dated["sessions dated in the future, dated at the import"] += 1
            self._future(record, "flushed_at")
            self.started[record["session_id"]] = record["started_at"]
        elif record["type"] == "memory":
            if record.get("created_at") is None:
                started = self.started.get(record.get("session_id"))
                record["created_at"] = started if started is not None else self.mtime
                self.dated["memories dated by their conversation" if started is not None
                           else "memories dated by the file's modification time"] += 1
                _mark_dated(record, "conversation" if started is not None else "file")
            elif self._future(record, "created_at"):
                self.dated["memories dated in the future, dated at the import"] += 1
                _mark_dated(record, "future")
            self._future(record, "updated_at")
            self._context(record, scope)
            if record.get("updated_at") is None:
                record["updated_at"] = record["created_at"]
            if record.get("last_seen_at") is None:  # seen here now: decay ages it from its import
                record["last_seen_at"] = self.now
            self.first = min(self.first or record["created_at"], record["created_at"])
            self.last = max(self.last or record["created_at"], record["created_at"])

    def _future(self, record: dict, field: str) -> bool:
        """Whether the record's `field` is a date after the import began; it is made that time."""
        moment = record.get(field)
        if isinstance(moment, (int, float)) and not isinstance(moment, bool) and moment > self.now:
            record[field] = self.now
            return True
        return False

    def _context(self, record: dict, scope: str) -> None:
        """A message's context, as a live turn's: the end of the message before it in its
        conversation (recall searches it too), cut where a word starts; the end of that message
        as stored, redacted whole (a cut end would no longer show what makes a secret one, e.g.
        a private key's BEGIN line)."""
        session_id = record.get("session_id")
        if record.get("kind") != "message" or session_id is None:
            return
        previous = self.previous.get(session_id)
        if record.get("context") is None and previous:
            tail = previous[-CONTEXT_CHARS:]
            record["context"] = tail if len(previous) <= CONTEXT_CHARS else tail.split(None, 1)[-1]
        if isinstance(record.get("content"), str):
            self.previous[session_id] = self.redact(scope, clean(record["content"]))[-2 * CONTEXT_CHARS:]

    def _checked(self, record: dict, spool: _Spool) -> Union[str, tuple[Kind, dict]]:
        """The record as row_of checks it (its kind and row), or why it cannot go into the spool."""
        kind = record["type"]
        if kind in KEYS and record.get(KEYS[kind]) in spool.seen[kind]:
            return f"a {kind} the file holds twice"
        if kind == "fact" and record.get("memory_id") not in spool.seen["memory"]:
            return "a fact whose memory was skipped"
        try:
            return row_of(record, 0)
        except InvalidInput as exc:
            return str(exc).removeprefix("Line 0: ").removesuffix("; nothing was imported.")

    def _skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, where)

    def close(self) -> None:
        for spool in self.spools.values():
            spool.close()

    def refuse_empty(self, path: Path, name: str) -> None:
        """InvalidInput for a file named as of format `name` that gave nothing to import: it is
        not of that format, or everything in it was left out (unless as already kept live)."""
        if not self.skipped:
            raise InvalidInput(f"Nothing in {str(path)!r} is a {name} export (no conversation, message or memory "
                               f"of one); nothing was imported.")
        if any("kept while it ran" in reason for reason in self.skipped):
            return  # (stored already: an honest 0)
        reason, count = self.skipped.most_common(1)[0]
        total = sum(self.skipped.values())
        raise InvalidInput(f"Nothing in {str(path)!r} could be imported as a {name} export: all {total} item(s) were "
                           f"left out, {count} as {reason!r} (the first at {self.examples[reason]!r}); nothing was "
                           f"imported.")

    def summary(self) -> dict:
        def shown(moment):
            return None if moment is None else datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="seconds")

        return {"read": {kind.plural: sum(s.counts[kind.plural] for s in self.spools.values())
                         for name, kind in KINDS.items() if name in KEYS},
                "from": shown(self.first), "to": shown(self.last), "dated": dict(self.dated),
                "skipped": {reason: {"count": count, "first": self.examples[reason]}
                            for reason, count in self.skipped.most_common()}}


def _mark_dated(record: dict, how: str) -> None:
    """Say in the record's first receipt how its date was filled in (it was not known)."""
    receipts = record.get("receipts")
    if isinstance(receipts, list) and receipts and isinstance(receipts[0], dict):
        record["receipts"] = [{**receipts[0], "dated": how}, *receipts[1:]]
    elif receipts is None or receipts == []:
        record["receipts"] = [{"source": record.get("source"), "dated": how}]


def _where(record: dict) -> str:
    receipts = record.get("receipts") or [{}]
    original = receipts[0].get("original") if isinstance(receipts[0], dict) else None
    return str(original or record.get(KEYS.get(record.get("type"), "id")) or "")


def _kept_live(engine: "Engine", scope: str, session_id: str) -> bool:
    """Whether `scope` has the session `session_id` (an id a door gave it, e.g. Hermes')."""
    with engine.store.read() as conn:
        return not transfer_rows.not_stored(conn, KINDS["session"], [{"session_id": stored_id(session_id)}], scope)


def _held(engine: "Engine", scope: str, ids: list) -> dict[str, str]:
    """The text of each of these memory ids that `scope` holds."""
    with engine.store.read() as conn:
        return transfer_rows.contents(conn, scope, ids, transfer.CHUNK)


def _planned(engine: Optional["Engine"], spool: _Spool) -> dict:
    """What importing the spool would add: the import's checking pass, then the ids already
    stored (a re-import adds nothing); without a store (engine None) everything is new."""
    plan = spool.plan
    scope = plan.finish(engine and engine.store, spool.scope)  # refuses ids another scope owns
    if engine is None:
        return {"sessions": {"new": len(spool.seen["session"]), "present": 0},
                "memories": {"new": len(plan.memories), "present": 0}, "facts": {"in_file": plan.counts["facts"]},
                "to_learn_from": {"user_turns": sum(spool.user_turns[sid] for sid in spool.seen["session"])}}
    with engine.store.read() as conn:
        present = len(transfer_rows.owners(conn, list(plan.memories), transfer.CHUNK))
        sessions = [{"session_id": sid} for sid in spool.seen["session"]]
        fresh = transfer_rows.not_stored(conn, KINDS["session"], sessions, scope) if sessions else []
    return {"sessions": {"new": len(fresh), "present": len(sessions) - len(fresh)},
            "memories": {"new": len(plan.memories) - present, "present": present},
            "facts": {"in_file": plan.counts["facts"]},
            "to_learn_from": {"user_turns": sum(spool.user_turns[row["session_id"]] for row in fresh)}}


def _written(engine: "Engine", spool: _Spool, progress, actor: str) -> dict:
    summary = transfer.import_checked(engine, spool.plan, lambda: spool.held, scope=spool.scope,
                                      progress=progress, actor=actor)
    return {plural: summary[plural] for plural in ("sessions", "memories", "facts")} | {
        "redacted": summary["redacted"], "queued_for_indexing": summary["queued_for_indexing"]}
