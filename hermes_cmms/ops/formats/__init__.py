"""Foreign formats: a reader per format turns another tool's file into the records of a
hermes-cmms export (ops/_transfer_records.py), and `run.import_foreign` writes them with the
export's import (ops/transfer.py): checked, redacted, idempotent by id, in batches.

A reader is a module of this package (every module whose name does not start with `_`, but
`run`) with:

* `NAME: str`, the format's name (`hermes-cmms import --from NAME`);
* `sniff(path: Path) -> bool`, cheap: a few KiB read at most, never the whole file;
* `records(path: Path, *, scope: str) -> Iterator[dict | Skipped]`, streamed: for each
  conversation first its session record, then its memory records (and a fact record after the
  memory that states it). A record is an export record: `"type"` says which
  ("session", "memory", "fact"; the memory's own `kind` column is "message", "note" or
  "observation"). Build them with `session()`, `memory()` and `fact()` below, which fill in
  the ids (`stable_id`), the source (`import:NAME`) and the receipts. A record may carry a
  `"scope"` (a Hermes user's scope); without one it goes to `scope`. A memory whose
  `created_at` is None is dated by its session, a session whose `started_at` is None by the
  file's modification time (the dry run counts both). What the reader leaves out on purpose it
  yields as `Skipped(reason, where)`; a file it cannot read as its format raises InvalidInput
  with one sentence naming the position (line, byte offset, conversation index).
"""
from __future__ import annotations

import gzip
import importlib
import math
import pkgutil
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Iterator, Optional

from ...common.errors import InvalidInput
from ...common.lifecycle_rules import TURN_RELIABILITY

__all__ = ["DAMAGED", "READERS", "Skipped", "check_whole", "damaged", "detect", "fact", "json_error", "memory", "session", "stable_id",
           "streamed_json_array", "timestamp"]

_NAMESPACE = uuid.UUID("5b0c3c2e-6d1f-5f0e-9a57-0c6d2f6a1e29")  # hermes-cmms imports; never change it
_NOT_READERS = frozenset({"run"})
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, gzip.BadGzipFile)  # what a damaged ZIP or gzip raises
_MAGIC = {b"PK\x03\x04": "ZIP", b"\x1f\x8b": "gzip file"}


@dataclass(frozen=True)
class Skipped:
    """Something of the file a reader leaves out on purpose (a system message, a tool call, an
    empty message): the pipeline counts it by `reason`; `where` names it in the file."""

    reason: str
    where: str


def _readers() -> dict[str, ModuleType]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if info.name.startswith("_") or info.name in _NOT_READERS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if all(hasattr(module, name) for name in ("NAME", "sniff", "records")):  # (not a helper module)
            found[module.NAME] = module
    return found


def __getattr__(name: str) -> Any:
    if name == "READERS":  # loaded on first use: the readers import this module's helpers
        return _readers()
    raise AttributeError(name)


def detect(path: Path) -> str:
    """The name of the format whose reader recognises `path`. A file no reader recognises but
    named *.jsonl is taken for a hermes-cmms export, whose import names its bad line."""
    readers = _readers()
    check_whole(path)
    for name, reader in sorted(readers.items(), key=lambda item: item[0] != "cmms"):  # our own first
        if _sniffed(reader, path):
            return name
    if _compressed(path) == "gzip file":  # none recognised it: is it whole?
        _read_through(path)
    if path.suffix.lower() == ".jsonl" and "cmms" in readers:
        return "cmms"
    raise InvalidInput(f"{str(path)!r} is not a file of a format hermes-cmms imports "
                       f"({', '.join(readers)}); name one with --from.")


def _sniffed(reader: ModuleType, path: Path) -> bool:
    """Whether the reader recognises the file; a sniff that fails on a hostile file (deep
    nesting, bad bytes, an unreadable path) recognises nothing; one that finds the file's
    compressed data damaged says so (InvalidInput)."""
    try:
        return bool(reader.sniff(path))
    except DAMAGED as exc:
        raise InvalidInput(damaged(path, exc)) from None
    except (OSError, ValueError, RecursionError, UnicodeError, InvalidInput):
        return False


def check_whole(path: Path) -> None:
    """InvalidInput if `path` starts as a ZIP does but is not one a reader can open (a download
    cut short: its table of contents, at the end, is missing), whatever format was named."""
    if _compressed(path) == "ZIP" and not zipfile.is_zipfile(path):
        raise InvalidInput(damaged(path, EOFError()))


def _read_through(path: Path) -> None:
    """InvalidInput if the gzip file `path` cannot be decompressed to its end."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(2**20):
                pass
    except DAMAGED as exc:
        raise InvalidInput(damaged(path, exc)) from None


def damaged(path: Path, exc: BaseException) -> str:
    """The sentence for a file whose compressed data a reader could not read (`exc`, one of
    DAMAGED): what the file is (by its first bytes) and what is wrong with it."""
    what = _compressed(path) or "compressed file"
    if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):
        wrong = "a file in it fails its CRC-32 check"
    elif isinstance(exc, (zlib.error, gzip.BadGzipFile)):
        wrong = "its compressed data is corrupt"
    elif isinstance(exc, EOFError) or "Truncated" in str(exc) or not zipfile.is_zipfile(path):
        wrong = "it is cut short"
    else:
        wrong = "its table of contents is corrupt"
    return f"{str(path)!r} is a damaged {what} ({wrong}); nothing was imported."


def _compressed(path: Path) -> Optional[str]:
    """"ZIP" or "gzip file" if `path` is a file starting as one does, else None."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    return next((what for magic, what in _MAGIC.items() if head.startswith(magic)), None)


def stable_id(fmt: str, *parts: Any) -> str:
    """An id made of the format's name and the original ids, as 32 hex digits: importing the
    same file again gives the same ids, so it adds nothing."""
    return uuid.uuid5(_NAMESPACE, "\x1f".join([fmt, *map(str, parts)])).hex


def timestamp(value: Any) -> Optional[float]:
    """Seconds since the epoch from epoch seconds (or milliseconds: anything past the year
    5000), a numeric string, or ISO 8601 (a time without a zone is UTC); None for anything
    else (null, empty, NaN, garbage)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            return _iso(text)
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    seconds = float(value) / 1000.0 if value > 1e11 else float(value)
    return seconds if seconds < 1e11 else None


def _iso(text: str) -> Optional[float]:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def streamed_json_array(handle: IO[bytes], where: str = "the file") -> Iterator[Any]:
    """The items of a top-level JSON array, one at a time, in bounded memory (ijson, the
    maintained streaming parser with a C backend), from any binary stream (seekable or not).
    InvalidInput names the item after which it broke."""
    import ijson

    head = handle.read(4096).removeprefix(b"\xef\xbb\xbf")
    first = head.lstrip(b" \t\r\n")[:1]
    if first != b"[":
        raise InvalidInput(f"{where} is not a JSON array (it starts with {first.decode('latin-1')!r}).")
    index = -1
    try:
        for index, item in enumerate(ijson.items(_Joined(head, handle), "item", use_float=True)):
            yield item
    except ijson.JSONError as exc:
        raise InvalidInput(f"{where} is not valid JSON after item {index + 1} ({json_error(exc)}).") from None


def json_error(exc: Exception) -> str:
    """A parser's complaint in one line (yajl's are several, sometimes bytes, with a picture of
    where)."""
    said = exc.args[0] if exc.args else ""
    said = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    return (said.strip().splitlines() or ["not JSON"])[0].strip()[:200]


class _Joined:
    """The bytes already read from a stream, then the rest of it."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self.head, self.rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.rest.read(size)
        cut = len(self.head) if size < 0 else size
        out, self.head = self.head[:cut], self.head[cut:]
        return out


# -- the records a reader yields ------------------------------------------------------------

def session(fmt: str, conversation: Any, *, started_at: Optional[float], turns: int = 0,
            ended_at: Optional[float] = None, scope: Optional[str] = None, known_as: Optional[str] = None) -> dict:
    """The session record of a conversation (its id: stable_id(fmt, conversation)). It counts
    as flushed, so the session hooks leave an imported conversation alone, and as not read
    yet: its user turns are read for facts after the import (knowledge/learn.learn_history).
    `known_as`: the id a door of hermes-cmms gave the same conversation when it kept it live (a
    Hermes session id): if the scope has that session, the conversation and its messages are
    skipped, as they are stored already."""
    record = {"type": "session", "session_id": stable_id(fmt, conversation), "started_at": started_at,
              "last_turn": turns, "flushed_at": ended_at if ended_at is not None else started_at,
              "extracted_turn": 0}
    if known_as is not None:
        record["known_as"] = known_as
    return _scoped(record, scope)


def memory(fmt: str, parts: tuple, content: str, *, original: str, created_at: Optional[float],
           updated_at: Optional[float] = None, tier: str = "episodic", kind: str = "message",
           role: Optional[str] = None, turn: Optional[int] = None, conversation: Any = None,
           tags: tuple = (), confidence: Optional[float] = None, scope: Optional[str] = None) -> dict:
    """A memory record: id stable_id(fmt, *parts); `original` names it in the file (e.g.
    "chatgpt:conv/<id>/msg/<id>") and goes into its receipt; `conversation` is the original
    id of its session, if it has one. It is dated `created_at` (when it was said); the import
    fills in `last_seen_at`, the time decay ages it from, with when it was imported
    (docs/lifecycle.md). Its confidence, unless given: a message's is a live turn's
    (TURN_RELIABILITY), so imported chat ranks as the same chat kept live would; 1 otherwise."""
    if confidence is None:
        confidence = TURN_RELIABILITY if kind == "message" else 1.0
    confidence = min(1.0, max(0.0, float(confidence)))
    record = {"type": "memory", "id": stable_id(fmt, *parts), "tier": tier, "kind": kind, "role": role,
              "content": content, "session_id": None if conversation is None else stable_id(fmt, conversation),
              "turn": turn, "source": f"import:{fmt}", "tags": list(tags), "confidence": confidence,
              "reliability": confidence, "created_at": created_at,
              "updated_at": updated_at if updated_at is not None else created_at,
              "last_seen_at": None, "receipts": [{"source": f"import:{fmt}", "original": original}]}
    return _scoped(record, scope)


def fact(fmt: str, parts: tuple, subject: str, predicate: str, obj: str, *, scope: Optional[str] = None) -> dict:
    """The fact record of the memory stable_id(fmt, *parts) (yield it after that memory)."""
    record = {"type": "fact", "memory_id": stable_id(fmt, *parts), "subject": subject, "predicate": predicate,
              "object": obj}
    return _scoped(record, scope)


def _scoped(record: dict, scope: Optional[str]) -> dict:
    if scope is not None:
        record["scope"] = scope
    return record
