"""Export a scope to JSON Lines and import it back: back a scope up, restore it, move a store
from SQLite to PostgreSQL. The format and its guarantees are in docs/backup.md.

An export holds every row that is a scope's truth in SQL: its sessions, memories (oldest
first, every column but the physical key and the content hash), facts, beliefs, evidence, links
and audit events. Line 1 is a header (format, version, hermes-cmms version, scope, time,
counts). Derived data is left out: vectors (import queues each new memory for the indexer, as
any write does), the entity graph (rebuilt from the facts as they are imported) and the columns
computed from others (content hash, fact keys).

Import reads the file twice: first every line is checked (JSON, record type, fields, ids the
records point at, the counts of the header, ids that belong to another scope) and the first
problem stops it with one sentence naming the line, before anything is written; then the rows
are written in transactions of CHUNK records. A row already stored (same id, or the same
evidence or audit event) is skipped, so importing a file twice adds nothing the second time,
and an import that stopped half way (the database went away, the process was killed) is
finished by importing again. Memories are written as every write is, by the retain hook
(retain.admission.retain_imported), each with its id, times, state and chain kept.

A foreign import (ops/formats/run.py) checks its reader's records as they come into a `Plan`
and hands them to `import_checked` as they are: no export file is written for it.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterable, Iterator, Optional, Union

from ..common.version import __version__
from ._rows import transfer as transfer_rows
from ..store._batches import Batches
from ..store.availability import store_file
from ._transfer_records import FORMAT, KINDS, REFERENCES, VERSION, Kind, bad, check_header, parse, prepared, \
    record_of, row_of, stored_id
from ..common.checks import scope_of as _scope
from ..common.errors import InvalidInput, StoreUnavailable
from ..common.ids import shown_id
from ..common.plugins import run_redactors
from ..retain.admission import retain_imported

if TYPE_CHECKING:
    from ..engine import Engine

CHUNK = 500  # records per lookup (and at most per write transaction)
SHORT, SHORT_KEPT = 64, 50_000  # strings this short are redacted once an import (at most this many kept)
Progress = Callable[[str, int, Optional[int]], None]  # (phase, done, total or None)

__all__ = ["check_file", "export_scope", "external_paths", "import_checked", "import_file", "import_records", "Plan",
           "CHUNK", "FORMAT", "VERSION"]
Checked = tuple[int, Kind, dict]  # a record checked by row_of: (its line, its kind, its row)


# -- export ---------------------------------------------------------------------------------

MAX_LINE_BYTES = 16 * 2**20  # one line (record) of an import at most


def export_scope(engine: "Engine", scope: str, actor: str = "") -> Iterator[dict]:
    """The header, then every record of `scope`, read in one transaction (one consistent
    snapshot, also on PostgreSQL). When the last record has been read, an 'export' event
    goes on the audit trail."""
    scope = _scope(scope)
    rows = transfer_rows.exported(engine.store, scope, KINDS, CHUNK)
    counts = {KINDS[name].plural: count for name, count in next(rows).items()}
    yield {"type": "header", "format": FORMAT, "version": VERSION, "hermes_cmms": __version__,
           "scope": scope, "exported_at": time.time(), "counts": counts}
    for name, row in rows:
        yield record_of(KINDS[name], row)
    engine.store.record("export", actor or "cmms", scope, **counts)


# -- import ---------------------------------------------------------------------------------

def import_file(engine: "Engine", path: Union[str, os.PathLike], *, scope: Optional[str] = None,
                progress: Optional[Progress] = None, actor: str = "") -> dict:
    """Import an export file into the store (into `scope` instead of the file's, if given);
    return what was added and skipped per record type. See the module docstring."""
    path = Path(path)
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise InvalidInput(f"Cannot read {str(path)!r}: {exc.strerror}.") from None
    with named_errors(path):
        return _import(engine, lambda: _lines_of(path), scope, progress, actor)


def check_file(store, path: Path, scope: Optional[str]) -> None:
    """The import's checking pass over the export file `path` (every line, the header's counts,
    the ids the store's other scopes own; `store` None: no store yet), writing nothing: what a
    dry run refuses the file for, as its import would."""
    with named_errors(path):
        plan = Plan()
        for number, text in _lines_of(path):
            plan.read(parse(text, number), number)
        plan.finish(store, scope)


@contextmanager
def named_errors(path: Path) -> Iterator[None]:
    """A refusal of the file's content ("Line 3: not valid JSON ...", "The file is empty ...")
    said with the file's name: "'x.jsonl', line 3: not valid JSON ..."."""
    try:
        yield
    except InvalidInput as exc:
        message, label = str(exc), repr(str(path))
        if message.startswith("Line "):
            raise InvalidInput(f"{label}, line {message.removeprefix('Line ')}") from None
        if message.startswith("The file "):
            raise InvalidInput(f"{label} {message.removeprefix('The file ')}") from None
        raise


def import_records(engine: "Engine", records: Iterable[Union[str, bytes, dict]], *, scope: Optional[str] = None,
                   progress: Optional[Progress] = None, actor: str = "") -> dict:
    """`import_file` for lines (or records) from anywhere, e.g. standard input: they are
    spooled to a temporary file first, because the import reads them twice."""
    if hasattr(records, "readline"):  # a stream, e.g. standard input
        records = bounded_lines(records)
    with tempfile.TemporaryFile() as spool:
        for record in records:
            if isinstance(record, dict):
                record = json.dumps(record, ensure_ascii=False)
            data = record.encode("utf-8") if isinstance(record, str) else record
            spool.write(data if data.endswith(b"\n") else data + b"\n")
        spool.flush()
        return _import(engine, lambda: _lines_of(spool), scope, progress, actor)


def _lines_of(source: Union[Path, IO[bytes]]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line that is not blank."""
    if isinstance(source, Path):
        with source.open("rb") as handle:
            yield from _decoded(handle)
    else:
        source.seek(0)
        yield from _decoded(source)


def bounded_lines(handle: IO[bytes]) -> Iterator[bytes]:
    """The handle's lines, one refused once past MAX_LINE_BYTES instead of read whole (a
    stream without a line end, such as /dev/zero, would never end)."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise bad(number, f"longer than {MAX_LINE_BYTES // 2**20} MiB")
        yield raw


def _decoded(handle: IO[bytes]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(bounded_lines(handle), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise bad(number, "not valid UTF-8") from None
        if text.strip():
            yield number, text


def _import(engine: "Engine", lines: Callable[[], Iterator[tuple[int, str]]], scope: Optional[str],
            progress: Optional[Progress], actor: str) -> dict:
    """Check every line, then write them, read again (a file may be bigger than memory)."""
    progress = progress or (lambda phase, done, total: None)
    plan = Plan()
    for done, (number, text) in enumerate(lines(), 1):
        plan.read(parse(text, number), number)
        if done % CHUNK == 0:
            progress("checking", done, None)
    return import_checked(engine, plan, lambda: _checked(lines), scope=scope, progress=progress, actor=actor)


def _checked(lines: Callable[[], Iterator[tuple[int, str]]]) -> Iterator[Checked]:
    """The records of the lines after the header, each parsed and checked again."""
    for number, text in lines():
        if number > 1:
            yield (number, *row_of(parse(text, number), number))


def import_checked(engine: "Engine", plan: "Plan", records: Callable[[], Iterable[Checked]], *,
                   scope: Optional[str] = None, progress: Optional[Progress] = None, actor: str = "") -> dict:
    """Write what `plan` was made from: `records()` gives each record again, in the same order,
    as checked by row_of (line, kind, row), without the header. The checks that need the whole
    file and the store come first (Plan.finish): if one fails, nothing is written. Then the
    rows are written in short transactions, the memories by the retain hook; what is stored is
    skipped. Into `scope` if given, else the plan's; returns what was added and skipped."""
    progress = progress or (lambda phase, done, total: None)
    target = plan.finish(engine.store, scope)
    progress("checking", plan.total + 1, plan.total + 1)
    summary = _write(engine, records, plan, target, progress)
    engine.store.record("import", actor or "cmms", target, source_scope=plan.header["scope"],
                         exported_at=plan.header.get("exported_at"), **summary)
    engine.indexer.notify()
    return {"scope": target, "source_scope": plan.header["scope"], **summary}


class Plan:
    """What the checking pass learns: the header, the ids the file holds and points at. `read`
    takes a file's lines in order; `take`, a record another reader checked (ops/formats/run.py),
    whose header is set last."""

    def __init__(self) -> None:
        self.header: Optional[dict] = None
        self.counts: Counter = Counter()
        self.memories: dict[str, int] = {}  # memory id -> line
        self.keys: dict[str, dict[tuple, int]] = {name: {} for name, kind in KINDS.items() if kind.key}
        self.pointers: dict[str, tuple[int, str]] = {}  # id pointed at -> (first line, field)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def read(self, record: dict, line: int) -> None:
        if self.header is None:
            self.header = check_header(record, line)
            return
        if record["type"] == "header":
            raise bad(line, "a second header record")
        self.take(*row_of(record, line), line)

    def take(self, kind: Kind, row: dict, line: int) -> None:
        """Note a record already checked by row_of (`kind`, `row`); a repeated key is refused
        before anything is noted."""
        if kind.key:
            key = kind.key_of(row)
            if key in self.keys[kind.name]:
                raise bad(line, f"the {kind.name} {_shown(key)} is already on line {self.keys[kind.name][key]}")
            self.keys[kind.name][key] = line
        self.counts[kind.plural] += 1
        if kind.name == "memory":
            self.memories[stored_id(row["id"])] = line
        for name in REFERENCES.get(kind.name, ()):
            if row[name] is not None:
                self.pointers.setdefault(stored_id(row[name]), (line, name))

    def finish(self, store, scope: Optional[str]) -> str:
        """The checks that need the whole file and the store: the header's counts, ids of
        another scope, ids pointed at that are neither in the file nor in the scope (`store`
        None: a store not made yet, which holds nothing). Returns the scope to import into:
        `scope`, else the file's."""
        if self.header is None:
            raise InvalidInput("The file is empty: its first line must be the header of a hermes-cmms "
                               "export; nothing was imported.")
        scope = _scope(scope if scope is not None else self.header["scope"])
        for kind in KINDS.values():
            said, found = self.header["counts"].get(kind.plural, 0), self.counts[kind.plural]
            if said != found:
                raise InvalidInput(f"The file holds {found} {kind.plural} records but its header says {said}: "
                                   f"it may be cut short or edited; nothing was imported.")
        missing = [i for i in self.pointers if i not in self.memories]
        known = {}
        if store is not None:
            with store.read() as conn:
                self._not_owned(transfer_rows.owners(conn, list(self.memories), CHUNK), scope)
                known = transfer_rows.owners(conn, missing, CHUNK)
        for memory_id in missing:
            if known.get(memory_id) != scope:
                line, name = self.pointers[memory_id]
                raise bad(line, f"{name} {memory_id!r} is not a memory of this file or of scope {scope!r}")
        return scope

    def _not_owned(self, owners: dict[str, str], scope: str) -> None:
        """InvalidInput if a memory id of the file belongs to another scope than `scope`."""
        for memory_id, owner in owners.items():
            if owner != scope:
                raise bad(self.memories[memory_id], f"memory id '{shown_id(memory_id)}' already belongs to scope "
                                                    f"{owner!r} in this store, and ids are unique across "
                                                    f"scopes, so it cannot be imported into {scope!r}")


def _shown(key: tuple) -> str:
    return repr(key[0]) if len(key) == 1 else repr(key)


def _write(engine: "Engine", records: Callable[[], Iterable[Checked]], plan: Plan, scope: str,
           progress: Progress) -> dict:
    """The writing pass, in bounded write transactions (see _batches: each about TARGET_S of
    writer lock, then a pause); what was added and skipped."""
    tally = {kind.plural: {"added": 0, "skipped": 0} for kind in KINDS.values()}
    writer, batches = _Writer(engine, scope, tally), Batches(engine.store.engine.dialect.name, most=CHUNK)
    chunk: list[Checked] = []
    done = 0
    for record in records():
        chunk.append(record)
        if len(chunk) >= batches.size:
            done += writer.write(chunk, batches)
            batches.done(len(chunk), writer.held_s)  # (the lock's time: checking and redacting come before)
            progress("importing", done, plan.total)
            chunk = []
    done += writer.write(chunk, batches)
    progress("importing", done, plan.total)
    return {**tally, "redacted": writer.redacted, "queued_for_indexing": tally["memories"]["added"]}


class _Writer:
    """Writes chunks of records, what is stored skipped: the sessions, then the memories by the
    retain hook (the built-in auto-retain inserts them and queues them for the indexer), then
    the other rows (the graph of new facts rebuilt with them), each step a transaction of its
    own, in that order: an import killed between two leaves no memory without its session and
    no row pointing at a memory not written."""

    def __init__(self, engine: "Engine", scope: str, tally: dict) -> None:
        self.engine, self.scope, self.tally = engine, scope, tally
        self.redacted = 0
        self.held_s = 0.0  # how long the last chunk's write transaction took
        self.released: Optional[float] = None  # when it ended (perf_counter)
        self.counted: dict[str, dict[tuple, int]] = {"evidence": {}, "audit": {}}  # stored copies left
        self._short: dict[str, str] = {}  # short strings redacted already: roles, kinds, tiers, ids repeat

    def redact(self, text: str) -> str:
        if len(text) > SHORT or len(self._short) > SHORT_KEPT:
            return run_redactors(self.engine.pm, text, self.scope)
        done = self._short.get(text)
        if done is None:
            done = self._short[text] = run_redactors(self.engine.pm, text, self.scope)
        return done

    def write(self, chunk: list[Checked], batches: Optional[Batches] = None) -> int:
        """Redact the chunk's checked records, then write them (see the class); with `batches`,
        after what is left of its pause since the last transaction ended (the redacting, done
        without the lock, counts in it: other writers get in all the same)."""
        if not chunk:
            return 0
        groups: dict[str, list[dict]] = {name: [] for name in KINDS}
        for _, kind, row in chunk:
            row, changed = prepared(kind, row, self.scope, self.redact)
            groups[kind.name].append(row)
            self.redacted += changed
        if batches is not None and self.released is not None:
            batches.pause(since=self.released)
        now, started = time.time(), time.perf_counter()
        try:
            self._rows({"session": groups.pop("session")}, now)
            memories = groups.pop("memory")
            if memories:
                with transfer_rows.failing():
                    self._retain(memories)
            self._rows(groups, now)
            self.released = time.perf_counter()
            self.held_s = self.released - started
        except StoreUnavailable as exc:  # (what failed and how, in one line)
            raise StoreUnavailable(f"The import stopped at lines {chunk[0][0]}-{chunk[-1][0]} because the store "
                                   f"failed ({exc}); the lines before were imported, and importing the file "
                                   f"again skips them.") from exc
        return len(chunk)

    def _rows(self, groups: dict[str, list[dict]], now: float) -> None:
        """The rows of these kinds in one transaction (none without rows)."""
        if any(groups.values()):
            with transfer_rows.writing(self.engine.store) as conn:
                for name, rows in groups.items():
                    if rows:
                        self._insert(conn, KINDS[name], rows, now)

    def _retain(self, rows: list[dict]) -> None:
        """The memory rows written by the retain hook, as every memory is; tallied."""
        items = retain_imported(self.engine, self.scope, rows)
        present = sum(item.present for item in items)
        self.tally["memories"]["added"] += len(items) - present
        self.tally["memories"]["skipped"] += present

    def _insert(self, conn, kind: Kind, rows: list[dict], now: float) -> None:
        fresh = (transfer_rows.not_stored(conn, kind, rows, self.scope) if kind.key
                 else self._counted(conn, kind, rows))
        tally = self.tally[kind.plural]
        tally["added"] += len(fresh)
        tally["skipped"] += len(rows) - len(fresh)
        if not fresh:
            return
        transfer_rows.add(conn, kind, fresh, self.scope, now)

    def _counted(self, conn, kind: Kind, rows: list[dict]) -> list[dict]:
        """Rows of a kind without a key (evidence, audit events): as many equal rows as are
        stored before the import are taken to be these, the rest are added."""
        left = self.counted[kind.name]
        unseen = {kind.key_of(row) for row in rows} - set(left)
        if unseen:
            stored = transfer_rows.stored_copies(conn, kind, unseen, self.scope)
            left.update({key: stored[key] for key in unseen})
        fresh = []
        for row in rows:
            key = kind.key_of(row)
            if left[key] > 0:
                left[key] -= 1
            else:
                fresh.append(row)
        return fresh


# -- backup -----------------------------------------------------------------------------------

def external_paths(settings) -> list[Path]:
    """What hermes-cmms stores on this disk outside the Hermes home, which `hermes backup`
    does not find by walking the home: a SQLite database file (with its -wal and -shm), the
    embedded Chroma directory and the inbox folder, each only when it is outside the home (a
    symlink in the home that leads out of it counts as outside: the walk does not follow it)
    and exists. A PostgreSQL database or a Chroma server has nothing here: back those up with
    `hermes-cmms export` or pg_dump."""
    candidates = []
    database = store_file(settings)  # None: a database server, in memory, or a URL no store opens
    if database is not None:
        candidates += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    if not settings.chroma_url:
        candidates.append(settings.chroma_path)
    if settings.inbox:
        candidates.append(Path(settings.inbox).expanduser())
    home = Path(settings.home).expanduser().resolve()
    found = []
    for path in candidates:
        real = path.resolve()
        if path.exists() and real != home and home not in real.parents and real not in found:
            found.append(real)
    return found
