"""The official MCP memory server's file (`memory.jsonl`, or `memory.json`, which is JSON Lines
too): entity lines (name, entityType, observations) and relation lines (from, to,
relationType). See ../shared/formats/mcp-memory-server.md.

Each entity becomes a fact memory `<name> is a(n) <entityType>` (so it is an entity of the graph
even without relations), each observation a semantic observation memory `<name>: <text>` (its
entity named in `detail`, for the export back), each relation a fact memory
`<from> <relationType> <to>` whose fact row puts the edge in the graph (a relation to a name
with no entity line makes a placeholder entity, as the graph does for any fact). Ids come from
the entity name and the text, so a repeated entity line, observation or relation adds nothing,
and neither does a second import. A line of hermes-cmms' own export names the memories it
stands for (its `hermes_cmms` marks, _exports.py): each record carries them as `same_as`, and the
pipeline takes one of them as the record's id only where the scope holds a memory of that id
with the record's very text (run.py), so the export imported into its store adds nothing, while
a mark that names another memory, another scope's or a made-up one changes nothing (the record
keeps its own id); an entity it made up to hold memories (`holder`: a session, `user`) gets no
"is a" fact, and its observations are their text alone. The format has no times: the records carry none, so the
pipeline dates every memory by the file's modification time (and the dry run says so). A line
that is not JSON is reported (skipped) and the rest imported; two objects run together on one
line (`}{`, from concurrent writers) are split. The whole-document form
`{"entities": [...], "relations": [...]}` (read_graph's answer) and a JSON array of typed
records are read too.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, Optional, Union

from ...common.errors import InvalidInput
from ..transfer import bounded_lines
from . import Skipped, fact, memory, stable_id
from ._exports import MARKS

NAME = "memory-json"
SOURCE = f"import:{NAME}"
SNIFF_BYTES = 64 * 1024
MARKED_IDS = 10_000  # the most ids one line's marks are read for (an entity line of our export has one an observation)


def sniff(path: Path) -> bool:
    """A file whose first JSON object is an entity or relation line, or a document with
    `entities`."""
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    text = head.decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    squeezed = "".join(text[:300].split())
    if squeezed.startswith(('{"entities"', '{"relations"')):
        return True
    if text.startswith("["):
        return squeezed.startswith('[{"type":') and ('"entityType"' in text or '"relationType"' in text)
    if text.startswith("{"):
        try:
            record = json.loads(text.split("\n", 1)[0])
        except ValueError:
            return False
        return isinstance(record, dict) and record.get("type") in ("entity", "relation")
    return False


def records(path: Path, *, scope: str) -> Iterator[Union[dict, Skipped]]:
    """The file's entities, observations and relations as export records (see the module
    docstring), with a Skipped for each line or item that cannot be read."""
    path = Path(path)
    reader = _Reader()
    for where, item in _items(path):
        if isinstance(item, Skipped):
            yield item
        else:
            yield from reader.read(item, where)


def _items(path: Path) -> Iterator[tuple[str, Union[dict, Skipped]]]:
    """(where, record) of each typed record of the file, in either form."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInput(f"Cannot read {str(path)!r}: {exc.strerror}.") from None
    with handle:
        for number, raw in enumerate(bounded_lines(handle), 1):
            text = raw.decode("utf-8", "replace").strip().lstrip("\ufeff")
            if not text:
                continue
            where = f"line {number}"
            parsed = _objects(text)
            if parsed is None:
                if number == 1 and text.startswith(("{", "[")):  # a whole JSON document over several lines
                    yield from _document(path)
                    return
                yield where, Skipped("not valid JSON (a line cut short or corrupted)", where)
                continue
            for record in parsed:
                if isinstance(record, dict) and isinstance(record.get("entities"), list):
                    yield from _graph(record, where)
                else:
                    yield where, record


def _objects(text: str) -> Optional[list]:
    """The JSON objects on one line: one, or several run together (`}{`); None if it is not."""
    decoder, found, at = json.JSONDecoder(), [], 0
    try:
        while at < len(text):
            value, at = decoder.raw_decode(text, at)
            found.append(value)
            while at < len(text) and text[at].isspace():
                at += 1
    except ValueError:
        return None
    return found


def _document(path: Path) -> Iterator[tuple[str, Union[dict, Skipped]]]:
    """A pretty-printed `{"entities": [...], "relations": [...]}` or `[...]` of typed records."""
    try:
        with path.open("rb") as handle:
            value = json.load(handle)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path.name!r} is neither JSON Lines nor a JSON document of the MCP memory "
                           f"server ({exc}); nothing was imported.") from None
    if isinstance(value, dict):
        yield from _graph(value, "the document")
    elif isinstance(value, list):
        for index, record in enumerate(value):
            yield f"item {index}", record
    else:
        raise InvalidInput(f"{path.name!r} holds a JSON {type(value).__name__}, not the MCP memory "
                           f"server's entities and relations; nothing was imported.")


def _graph(document: dict, where: str) -> Iterator[tuple[str, dict]]:
    for name in ("entities", "relations"):
        for index, record in enumerate(document.get(name) or ()):
            if isinstance(record, dict):
                record = {"type": name[:-1] if name == "relations" else "entity", **record}
            yield f"{where}, {name}[{index}]", record


class _Reader:
    """Turns typed records into export records, remembering what it has yielded (ids only)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.types: dict[str, str] = {}  # entity name -> its first entityType

    def read(self, record, where: str) -> Iterator[Union[dict, Skipped]]:
        if not isinstance(record, dict):
            yield Skipped("not a JSON object", where)
        elif record.get("type") == "entity":
            yield from self.entity(record, where)
        elif record.get("type") == "relation":
            yield from self.relation(record, where)
        else:
            yield Skipped(f"unknown record type {str(record.get('type'))[:40]!r}", where)

    def entity(self, record: dict, where: str) -> Iterator[Union[dict, Skipped]]:
        name = _text(_first(record, "name", "entityName", "id"))
        if not name:
            yield Skipped("an entity without a name", where)
            return
        kind = self.types.setdefault(name, _text(record.get("entityType")) or "entity")
        marks = _marks(record)
        if not marks.get("holder"):  # (a session or `user` our export made up is no entity of the graph)
            yield from self.fact(("entity", name), name, "is a", kind, f"entity/{name}", _ids([marks.get("id")]))
        observations = record.get("observations") or []
        if not isinstance(observations, list):
            observations = [observations]
        same_as = _ids(marks.get("ids"))
        for observation in observations:
            text = _text(observation)
            if not text:
                continue
            key = ("observation", name, text)
            if self.fresh(stable_id(NAME, *key)):
                detail = {"entity": name, "entity_type": kind} | ({"holder": True} if marks.get("holder") else {})
                content = text if marks.get("holder") else f"{name}: {text}"
                yield self.memory(key, "observation", content, f"entity/{name}", tags=[kind], detail=detail,
                                  same_as=same_as)

    def relation(self, record: dict, where: str) -> Iterator[Union[dict, Skipped]]:
        ends = (_text(_first(record, "from", "from_id")), _text(_first(record, "relationType", "relation_type")),
                _text(_first(record, "to", "to_id")))
        if not all(ends):
            yield Skipped("a relation without from, to or relationType", where)
            return
        subject, predicate, target = ends
        yield from self.fact(("relation", *ends), subject, predicate, target,
                             f"relation/{subject}/{predicate}/{target}", _ids([_marks(record).get("id")]))

    def fact(self, key: tuple, subject: str, predicate: str, target: str, origin: str,
             same_as: list[str]) -> Iterator[dict]:
        if not self.fresh(stable_id(NAME, *key)):
            return
        content = f"{subject} {_spoken(predicate, target)} {target}"
        yield self.memory(key, "fact", content, origin, same_as=same_as)
        yield fact(NAME, key, subject, predicate, target)

    def fresh(self, memory_id: str) -> bool:
        """Whether the memory is new to this file (the import refuses an id twice)."""
        if memory_id in self.seen:
            return False
        self.seen.add(memory_id)
        return True

    def memory(self, key: tuple, kind: str, content: str, origin: str, *, tags=(),
               detail: Optional[dict] = None, same_as: list[str]) -> dict:
        record = memory(NAME, key, content, original=f"mcp-memory:{origin}", created_at=None,
                        tier="semantic", kind=kind, tags=tuple(t for t in tags if t.strip()))
        if detail:
            record["detail"] = detail
        if same_as:
            record["same_as"] = same_as
        return record


def _marks(record: dict) -> dict:
    """What a line of our own export says of the memories it stands for (MARKS in
    _exports.py); {} for a line of anyone else's."""
    marks = record.get(MARKS)
    return marks if isinstance(marks, dict) else {}


_AN_ID = re.compile(r"[0-9a-f]{32}")


def _ids(marked) -> list[str]:
    """The ids a line's marks name, as the store keeps ids (32 hex digits, a dashed UUID too),
    at most MARKED_IDS of them; anything else is no id of ours and is dropped."""
    if not isinstance(marked, list):
        return []
    found = (v.replace("-", "").lower() for v in marked[:MARKED_IDS] if isinstance(v, str) and len(v) <= 36)
    return list(dict.fromkeys(v for v in found if _AN_ID.fullmatch(v)))


# words whose first letter is a vowel but whose sound is not ("a unit", "a one-off"), and the reverse ("an hour")
_CONSONANT_SOUND = re.compile(r"(?i)(?:u(?:ni|s[eu]|r[aeiou]|t[aeiou]|bi|ku)|eu|ew|one(?![a-z])|once)")
_VOWEL_SOUND = re.compile(r"(?i)(?:[aeiou]|hour|honou?r|honest|heir)")


def _spoken(predicate: str, target: str) -> str:
    """The predicate as the fact's sentence says it: "is an organization", "is a person" (the
    stored predicate stays "is a", the entity type's name in the format)."""
    if predicate == "is a" and _VOWEL_SOUND.match(target) and not _CONSONANT_SOUND.match(target):
        return "is an"
    return predicate.replace("_", " ")


def _first(record: dict, *names: str):
    return next((record[name] for name in names if record.get(name) not in (None, "")), None)


def _text(value) -> str:
    """A name or observation as text: strings as they are, numbers written out; other JSON
    (lists, objects) as JSON; None as nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
