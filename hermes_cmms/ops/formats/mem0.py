"""mem0 and OpenMemory exports: OpenMemory's backup ZIP (`memories.jsonl.gz` beside
`memories.json`), that `memories.jsonl(.gz)` alone, and a dump of mem0's `get_all` (the
library's `{"results": [...], "relations": [...]}`, the hosted platform's pages with `count` and
`next`, or a bare list of items), or those items one a line (JSON Lines, gzipped or not). Field notes: ../shared/formats/mem0-openmemory.md.

Each memory becomes a semantic observation at its original times (offsets kept: older mem0
stamped US/Pacific), tagged with its categories; `run_id` / `session_id` become a session.
Deleted and expired memories are skipped (counted); archived ones are imported as archived.
A memory's user is its scope as the Hermes provider computes it: Hermes' mem0 provider writes
a gateway user's memories under the gateway's own user id with `metadata.channel` set to the
platform, which makes `user:<platform>:<user id>`; the first user the file names (mem0's
default names `hermes-user`, `default_user` and none count as one) goes to the scope given,
any other to `user:mem0:<id>`, so no two users share a scope. Graph relations
(`source`, `relationship`, `target`) become facts. Ids are the original ids (dashes or not),
so a second import adds nothing.
"""
from __future__ import annotations

import gzip
import io
import json
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Iterator, Optional, Union

from ...common.errors import InvalidInput
from . import Skipped, fact, memory, session, stable_id, timestamp

NAME = "mem0"
HEAD_BYTES = 64 * 1024
OWNERS = frozenset({"", "hermes-user", "default_user"})  # mem0's names for the local owner
LOCAL_PLATFORMS = frozenset({"cli", "tui", "desktop", "acp", "local"})  # as hermes/provider.py says
MAX_TAGS = 32


def sniff(path: Path) -> bool:
    """An OpenMemory ZIP, a memories.jsonl(.gz), JSON whose first item has `memory`, or JSON
    Lines of mem0's own items (gzipped or not)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = {PurePosixPath(n).name for n in archive.namelist() if not n.startswith("__MACOSX/")}
            return "memories.jsonl.gz" in names or ("memories.json" in names and "conversations.json" not in names)
    except (OSError, zipfile.BadZipFile):
        return False
    try:
        with _opened(path) as (handle, _user):
            head = handle.read(HEAD_BYTES).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    except (OSError, InvalidInput, zipfile.BadZipFile, EOFError, gzip.BadGzipFile):
        return False
    squeezed = "".join(head[:300].split())
    if head.startswith("[") or squeezed.startswith(('{"count"', '{"results"', '{"next"')):
        return '"memory"' in head and '"chat_messages"' not in head and '"mapping"' not in head
    if head.startswith("{"):  # JSON Lines: OpenMemory's (content and state) or mem0's own items
        first = head.split("\n", 1)[0]
        try:
            item = json.loads(first)
        except ValueError:
            return False
        return isinstance(item, dict) and (_openmemory_line(item) or _mem0_item(item))
    return False


def _openmemory_line(item: dict) -> bool:
    return "content" in item and ("state" in item or "categories" in item)


def _mem0_item(item: dict) -> bool:
    """One of mem0's own memory objects (an item of `get_all`): its text at `memory`, an id,
    and a field only mem0's items have together (`hash`, `user_id`, `metadata`); no `type`
    (hermes-cmms' own export records have one)."""
    return (isinstance(item.get("memory"), str) and "id" in item and "type" not in item
            and any(key in item for key in ("hash", "user_id", "metadata")))


def records(path: Path, *, scope: str) -> Iterator[Union[dict, Skipped]]:
    """The export's memories, sessions and relations (see the module docstring)."""
    path = Path(path)
    reader = _Reader(scope)
    with _opened(path) as (handle, user):
        for where, item in _items(handle, path.name):
            yield from reader.read(item, where, user)


@contextmanager
def _opened(path: Path) -> Iterator[tuple[IO[bytes], Optional[str]]]:
    """The stream of items and the OpenMemory user (None outside a ZIP). A ZIP without
    memories.jsonl.gz gives its memories.json, whose items are read at `memories`."""
    path = Path(path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = {PurePosixPath(n).name: n for n in archive.namelist() if not n.startswith("__MACOSX/")}
            user = _zip_user(archive, names.get("memories.json"))
            if "memories.jsonl.gz" in names:
                with archive.open(names["memories.jsonl.gz"]) as packed, gzip.open(packed) as handle:
                    yield handle, user
            elif "memories.json" in names:  # the relational dump alone: its `memories`
                with archive.open(names["memories.json"]) as handle:
                    yield _Relational(handle), user
            else:
                raise InvalidInput(f"{path.name!r} is a ZIP without OpenMemory's memories.json or "
                                   f"memories.jsonl.gz; nothing was imported.")
        return
    with path.open("rb") as raw:
        if raw.read(2) == b"\x1f\x8b":
            raw.seek(0)
            with gzip.open(raw) as handle:
                yield handle, None
        else:
            raw.seek(0)
            yield raw, None


class _Relational(io.BufferedReader):
    """OpenMemory's memories.json: its memories are the items at `memories`."""


def _zip_user(archive: zipfile.ZipFile, name: Optional[str]) -> Optional[str]:
    """OpenMemory's external user id (`user.user_id` of memories.json), read as a stream."""
    if name is None:
        return None
    import ijson

    with archive.open(name) as handle:
        for user in ijson.items(handle, "user"):
            return str(user.get("user_id") or "") if isinstance(user, dict) else None
    return None


def _items(handle: IO[bytes], name: str) -> Iterator[tuple[str, object]]:
    """(where, item) of each memory item, streamed."""
    import ijson

    if isinstance(handle, _Relational):
        yield from _parsed(ijson.items(handle, "memories.item", use_float=True), name, "memory")
        return
    head = handle.read(HEAD_BYTES)
    stream = io.BufferedReader(_Rejoined(head, handle))
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"["):
        yield from _parsed(ijson.items(stream, "item", use_float=True), name, "item")
    elif _first_line_item(start):
        yield from _lines(stream)
    elif start.startswith(b"{"):
        yield from _results(stream, name)
    else:
        raise InvalidInput(f"{name!r} is not a mem0 or OpenMemory export (it starts with "
                           f"{start[:20].decode('utf-8', 'replace')!r}); nothing was imported.")


class _Rejoined(io.RawIOBase):
    """The bytes already read (`head`), then the rest of `handle`."""

    def __init__(self, head: bytes, handle: IO[bytes]) -> None:
        super().__init__()
        self.head, self.handle = memoryview(head), handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            size = min(len(buffer), len(self.head))
            buffer[:size], self.head = self.head[:size], self.head[size:]
            return size
        data = self.handle.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _first_line_item(head: bytes) -> bool:
    """Whether the file is JSON Lines of memory items: its first line one whole item."""
    first = head.split(b"\n", 1)[0].strip()
    try:
        item = json.loads(first)
    except ValueError:
        return False
    return isinstance(item, dict) and ("content" in item or "memory" in item) and "results" not in item


def _parsed(items, name: str, what: str) -> Iterator[tuple[str, object]]:
    import ijson

    index = -1
    try:
        for index, item in enumerate(items):
            yield f"{what} {index}", item
    except ijson.JSONError as exc:
        raise InvalidInput(f"{name!r} is not valid JSON after {what} {index} ({_first_line(exc)}); "
                           f"nothing was imported.") from None


def _results(handle: IO[bytes], name: str) -> Iterator[tuple[str, object]]:
    """A get_all dump: `results` (then `relations`), at any key order, streamed."""
    import ijson

    index = {"results": 0, "relations": 0}
    try:
        for prefix, event, _value in _builder(ijson.parse(handle, use_float=True)):
            if prefix in ("results.item", "relations.item"):
                key = prefix.split(".")[0]
                yield f"{key}[{index[key]}]", (key, _value)
                index[key] += 1
    except ijson.JSONError as exc:
        raise InvalidInput(f"{name!r} is not valid JSON at results[{index['results']}] "
                           f"({_first_line(exc)}); nothing was imported.") from None


def _first_line(exc: Exception) -> str:
    """The parser's message without the picture of where it stopped (yajl draws one)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _builder(events):
    """ijson events folded into whole items at `results.item` and `relations.item`."""
    import ijson

    builder, depth, current = None, 0, None
    for prefix, event, value in events:
        if builder is None and prefix in ("results.item", "relations.item") and event in ("start_map", "start_array"):
            builder, current, depth = ijson.ObjectBuilder(), prefix, 0
        if builder is not None:
            builder.event(event, value)
            depth += event in ("start_map", "start_array")
            depth -= event in ("end_map", "end_array")
            if depth == 0:
                yield current, "item", builder.value
                builder = None
        elif prefix in ("results.item", "relations.item"):  # a scalar item
            yield prefix, "item", value


def _lines(handle: IO[bytes]) -> Iterator[tuple[str, object]]:
    for number, raw in enumerate(handle, 1):
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            continue
        try:
            yield f"line {number}", json.loads(text)
        except ValueError:
            yield f"line {number}", Skipped("not a JSON object", f"line {number}")


class _Reader:
    """Items to records; remembers the ids and sessions it has yielded."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.seen: set[str] = set()
        self.sessions: set[tuple] = set()
        self.first_user: Optional[str] = None  # the first user the file names: the scope given's

    def read(self, item, where: str, user: Optional[str]) -> Iterator[Union[dict, Skipped]]:
        if isinstance(item, Skipped):
            yield item
            return
        if isinstance(item, tuple):  # from a get_all dump: (results | relations, item)
            key, item = item
            if key == "relations":
                yield from self.relation(item, where)
                return
        if not isinstance(item, dict):
            yield Skipped("not a JSON object", where)
            return
        yield from self.memory(item, where, user)

    def memory(self, item: dict, where: str, user: Optional[str]) -> Iterator[Union[dict, Skipped]]:
        text = item.get("memory", item.get("content"))
        original = str(item.get("id") or "").replace("-", "").lower()
        if not isinstance(text, str) or not text.strip():
            yield Skipped("a memory without text", where)
            return
        state = str(item.get("state") or "active").lower()
        if state == "deleted":
            yield Skipped("deleted in mem0", where)
            return
        if _expired(item):
            yield Skipped("expired in mem0", where)
            return
        owner = str(item.get("user_id") or user or "")
        scope = self.scope_of(owner, _metadata(item))
        parts = (owner, original or text)
        if stable_id(NAME, *parts) in self.seen:
            return
        self.seen.add(stable_id(NAME, *parts))
        run = item.get("run_id") or item.get("session_id")
        created = timestamp(item.get("created_at"))
        if run is not None and (owner, str(run)) not in self.sessions:
            self.sessions.add((owner, str(run)))
            yield session(NAME, (owner, str(run)), started_at=created, scope=scope)
        record = memory(NAME, parts, text.strip(), original=f"mem0:{item.get('id') or where}", created_at=created,
                        updated_at=timestamp(item.get("updated_at")), tier="semantic", kind="observation",
                        conversation=None if run is None else (owner, str(run)), tags=_tags(item), scope=scope)
        if state == "archived":
            record["state"] = "archived"
        yield record

    def scope_of(self, owner: str, metadata: dict) -> Optional[str]:
        """A gateway user's own scope (Hermes' mem0 provider sets `metadata.channel`); None (the
        scope given) for the first user the file names (mem0's default names, or none, being
        one user); `user:mem0:<id>` for any other, so no two users share a scope."""
        channel = str(metadata.get("channel") or "").strip()
        if channel and channel not in LOCAL_PLATFORMS and owner not in OWNERS:
            return f"user:{channel}:{owner}"
        who = "" if owner in OWNERS else owner  # mem0's names for the owner are one user
        if self.first_user is None:
            self.first_user = who
        return None if who == self.first_user else f"user:mem0:{who or 'default_user'}"

    def relation(self, item, where: str) -> Iterator[Union[dict, Skipped]]:
        if not isinstance(item, dict):
            yield Skipped("not a JSON object", where)
            return
        ends = tuple(str(item.get(k) or "").strip() for k in ("source", "relationship"))
        target = str(item.get("target") or item.get("destination") or "").strip()
        if not all(ends) or not target:
            yield Skipped("a relation without source, relationship or target", where)
            return
        parts = ("relation", *ends, target)
        if stable_id(NAME, *parts) in self.seen:
            return
        self.seen.add(stable_id(NAME, *parts))
        subject, predicate = ends
        yield memory(NAME, parts, f"{subject} {predicate.replace('_', ' ')} {target}",
                     original=f"mem0:relation/{where}", created_at=None, tier="semantic", kind="fact")
        yield fact(NAME, parts, subject, predicate, target)


def _metadata(item: dict) -> dict:
    value = item.get("metadata")
    if isinstance(value, str):  # older OpenMemory scripts print it as JSON text
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _tags(item: dict) -> tuple:
    metadata = _metadata(item)
    found = []
    for value in (item.get("categories"), metadata.get("categories"), metadata.get("category")):
        for tag in (value if isinstance(value, list) else [value]):
            if isinstance(tag, str) and tag.strip() and tag.strip() not in found:
                found.append(tag.strip())
    return tuple(found[:MAX_TAGS])


def _expired(item: dict) -> bool:
    until = timestamp(item.get("expiration_date"))
    return until is not None and until < time.time()
