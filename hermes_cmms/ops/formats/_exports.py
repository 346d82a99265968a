"""Export a scope to open formats, from the records of ops/transfer's export (one snapshot,
streamed): the MCP memory server's JSON Lines (`memory-json`) and a folder of Markdown notes in
basic-memory's shape (`markdown`). The text is the store's (redacted once, on the way in);
nothing is redacted again, and nothing a memory says becomes markup.

memory-json: a memory that is not a fact is an observation of an entity: the entity it was
imported from (its `detail`), else its session (`session <id>`, type `session`, a message
written `<role>: <text>`), else `user` (type `person`). A fact is a relation, except `X is a T`,
which is X's entityType. Superseded memories are left out. An entity's observations are
gathered into one line, up to GROUP_BYTES of text held at once: past that, what is held is
written and gathering starts again, so only in a very large store can an entity have several
lines (our import merges them; the MCP server's tools use the first). Each line carries, under
the key `hermes_cmms` (MARKS; the MCP server's reader takes only the keys it knows), the ids of
the memories it stands for: an entity line `ids` (one per observation) and `holder` for an
entity made up to hold memories (a session, `user`); an entity or relation line written for a
fact that fact's `id`. Our import takes an id only for a memory of the scope that holds it with
the very text of the line (memory_json.py), so the file imported into the store it came from
adds nothing, and into another each memory once.

markdown: one note per session (`sessions/<date>-<id>.md`) and one per day for memories outside
a session (`days/<date>.md`), dates in UTC; front matter (title, type, permalink, created,
modified, tags, scope), each memory an observation `- [<role or kind>] <text> (<time>)` (the
trailing context is ours, so a text ending in `(...)` keeps it), each fact's subject and object
a relation `- mentions [[name]]`. Text is one line with Markdown's punctuation backslash-escaped,
so a memory cannot start a heading, a link, a tag, a list or HTML.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterable, Iterator

from ...common.errors import InvalidInput
from ...common.vocabulary import EXPORT_FORMATS

if TYPE_CHECKING:
    from ...engine import Engine

MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]<>#~&])")  # what can start markup inside a line
YAML_BREAKS = {"\u0085": "\\N", "\u2028": "\\L", "\u2029": "\\P"}
OPEN_FILES = 64  # note parts kept open at once while writing
GROUP_BYTES = 32 * 2**20  # observations (characters) a memory-json export gathers per entity line at most
MARKS = "hermes_cmms"  # the key of a memory-json line that names the memories it stands for

__all__ = ["MARKS", "export_open", "memory_json", "markdown"]


def export_open(engine: "Engine", scope: str, fmt: str, directory=None, actor: str = ""):
    """`scope` in the open format `fmt`: memory-json's lines (an iterator of dicts), or the
    markdown notes written into `directory` (what was written)."""
    from ..transfer import export_scope

    if fmt not in EXPORT_FORMATS[1:]:
        raise InvalidInput(f"Unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}.")
    if fmt == "markdown" and directory is None:
        raise InvalidInput("A markdown export is a folder of notes: name it with --output.")
    records = export_scope(engine, scope, actor=actor)
    return memory_json(records) if fmt == "memory-json" else markdown(records, Path(directory))


# -- memory-json --------------------------------------------------------------------------

def memory_json(records: Iterable[dict], budget: int = GROUP_BYTES) -> Iterator[dict]:
    """The MCP memory server's lines (entity, relation) of an export's records: one line per
    entity, its observations gathered until `budget` characters are held (then written, and
    gathering starts again: only a store bigger than that writes an entity on several lines).
    Each line carries MARKS: the ids of the memories it stands for (see the module docstring)."""
    superseded: set[str] = set()
    typed: dict[str, str] = {}  # entity -> the entityType written for it
    groups: dict[str, list[tuple[str, str]]] = {}  # entity -> (memory id, observation)
    holders: set[str] = set()  # entities made up to hold memories (a session, the user)
    held = 0
    for record in records:
        if record.get("type") == "memory":
            if record.get("superseded_by"):
                superseded.add(record["id"])
            elif record.get("kind") != "fact":
                name, kind, text, holder = _observation(record)
                typed.setdefault(name, kind)
                if holder:
                    holders.add(name)
                groups.setdefault(name, []).append((record["id"], text))
                held += len(text)
                if held > budget:
                    yield from _entities(groups, typed, holders)
                    held = 0
        elif record.get("type") == "fact" and record["memory_id"] not in superseded:
            yield from _entities(groups, typed, holders)  # (facts come after every memory)
            subject, predicate, target = record["subject"], record["predicate"], record["object"]
            marks = {MARKS: {"id": record["memory_id"]}}
            if predicate == "is a" and typed.get(subject, target) == target:
                if subject not in typed:  # (one whose observations were written has its type)
                    typed[subject] = target
                    yield {"type": "entity", "name": subject, "entityType": target, "observations": [], **marks}
            else:
                yield {"type": "relation", "from": subject, "to": target, "relationType": predicate, **marks}
    yield from _entities(groups, typed, holders)


def _entities(groups: dict[str, list[tuple[str, str]]], typed: dict[str, str], holders: set[str]) -> Iterator[dict]:
    """The entity lines of the observations gathered (in the order the entities were met),
    which are then let go."""
    for name, gathered in groups.items():
        observations = [text for _, text in gathered]
        marks = {"ids": [memory_id for memory_id, _ in gathered]}
        if name in holders:
            marks["holder"] = True
        yield {"type": "entity", "name": name, "entityType": typed[name], "observations": observations,
               MARKS: marks}
    groups.clear()


def _observation(record: dict) -> tuple[str, str, str, bool]:
    """(entity, entityType, observation, whether the entity is made up to hold it) of a memory
    that is not a fact."""
    detail = record.get("detail") if isinstance(record.get("detail"), dict) else {}
    entity, content = detail.get("entity"), record["content"]
    if isinstance(entity, str) and entity:
        kind = detail.get("entity_type") if isinstance(detail.get("entity_type"), str) else "entity"
        if detail.get("holder") is True:  # (imported from such a line: its text is the content)
            return entity, kind or "entity", content, True
        return entity, kind or "entity", content.removeprefix(f"{entity}: "), False
    if record.get("session_id"):
        text = f"{record['role']}: {content}" if record.get("role") else content
        return f"session {record['session_id']}", "session", text, True
    return "user", "person", content, True


# -- markdown -----------------------------------------------------------------------------

def markdown(records: Iterable[dict], directory: Path) -> dict:
    """Write the notes into `directory` (made if missing; notes of the same name replaced);
    how many notes, observations and relations were written."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".cmms-export-", dir=directory))
    except OSError as exc:
        raise InvalidInput(f"Cannot write into {str(directory)!r}: {exc.strerror}.") from None
    notes = _Notes(work)
    try:
        for record in records:
            notes.take(record)
        return notes.finish(directory)
    finally:
        notes.close()
        shutil.rmtree(work, ignore_errors=True)


class _Notes:
    """The notes being written: each one's body is appended to a part file as its memories
    come; its front matter (which needs the last time) is written at the end."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.meta: dict[str, dict] = {}  # note path -> title, type, times, tags, part file
        self.facts: dict[str, str] = {}  # fact memory id -> its note
        self.linked: set[tuple[str, str]] = set()  # (note, entity) written as a relation
        self.sessions: dict[str, str] = {}  # session id -> its note
        self.open: dict[str, IO[str]] = {}
        self.scope = ""
        self.counts = {"notes": 0, "observations": 0, "relations": 0}

    def take(self, record: dict) -> None:
        kind = record.get("type")
        if kind == "header":
            self.scope = record.get("scope") or ""
        elif kind == "memory" and not record.get("superseded_by"):
            note = self.note_of(record)
            category = record.get("role") or record.get("kind") or "note"
            self.write(note, f"- [{_category(category)}] {_inline(record['content'])} ({_time(record['created_at'])})\n")
            self.counts["observations"] += 1
            if record.get("kind") == "fact":
                self.facts[record["id"]] = note
        elif kind == "fact" and record["memory_id"] in self.facts:
            note = self.facts[record["memory_id"]]
            for name in (record["subject"], record["object"]):
                if (note, _link(name)) not in self.linked:
                    self.linked.add((note, _link(name)))
                    self.write(note, f"- mentions [[{_link(name)}]]\n", relations=True)
                    self.counts["relations"] += 1

    def note_of(self, record: dict) -> str:
        at = float(record["created_at"])
        day = datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d")
        session = record.get("session_id")
        if session and session in self.sessions:  # a session past midnight stays one note
            key = self.sessions[session]
        elif session:
            safe = re.sub(r"[^a-z0-9-]+", "", str(session).lower())[:32] or "session"
            digest = hashlib.sha256(str(session).encode("utf-8")).hexdigest()[:8]
            key = self.sessions[session] = f"sessions/{day}-{safe}-{digest}"
        else:
            key = f"days/{day}"
        meta = self.meta.get(key)
        if meta is None:
            title = f"Session {session} ({day})" if session else f"Memories of {day}"
            meta = self.meta[key] = {"title": title, "type": "conversation" if session else "day", "created": at,
                                     "modified": at, "tags": [], "session_id": session}
        meta["modified"] = max(meta["modified"], float(record.get("updated_at") or at))
        for tag in record.get("tags") or ():
            if tag not in meta["tags"] and len(meta["tags"]) < 32:
                meta["tags"].append(tag)
        return key

    def write(self, note: str, line: str, relations: bool = False) -> None:
        part = f"{note}.{'relations' if relations else 'body'}"
        handle = self.open.get(part)
        if handle is None:
            if len(self.open) >= OPEN_FILES:
                self.close()
            path = self.work / part
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.open[part] = path.open("a", encoding="utf-8")
        handle.write(line)

    def close(self) -> None:
        for handle in self.open.values():
            handle.close()
        self.open.clear()

    def finish(self, directory: Path) -> dict:
        self.close()
        for note, meta in self.meta.items():
            target = directory / f"{note}.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = self.work / f"{note}.md"
            with staged.open("w", encoding="utf-8") as out:
                out.write(self.front_matter(note, meta))
                out.write(f"\n# {_inline(meta['title'])}\n\n## Observations\n")
                _copy(self.work / f"{note}.body", out)
                if (self.work / f"{note}.relations").exists():
                    out.write("\n## Relations\n")
                    _copy(self.work / f"{note}.relations", out)
            os.replace(staged, target)
            self.counts["notes"] += 1
        return dict(self.counts)

    def front_matter(self, note: str, meta: dict) -> str:
        fields = {"title": meta["title"], "type": meta["type"], "permalink": note, "created": _time(meta["created"]),
                  "modified": _time(meta["modified"]), "tags": meta["tags"], "scope": self.scope,
                  "source": "hermes-cmms"}
        if meta["session_id"]:
            fields["session_id"] = meta["session_id"]
        lines = [f"{name}: {_yaml(value)}" for name, value in fields.items()]
        return "---\n" + "\n".join(lines) + "\n---\n"


def _copy(path: Path, out: IO[str]) -> None:
    if path.exists():
        with path.open(encoding="utf-8") as source:
            shutil.copyfileobj(source, out)


def _time(at) -> str:
    """UTC with an explicit zone (basic-memory reads a time without one as local time)."""
    return datetime.fromtimestamp(float(at), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _inline(text: str) -> str:
    """One line of text that Markdown shows as it is: white space runs folded to one space,
    Markdown's punctuation backslash-escaped (no heading, link, tag, emphasis, list or HTML)."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))


def _category(name: str) -> str:
    """A category basic-memory reads as one: no brackets, parentheses or spaces."""
    return re.sub(r"[\[\]()\s]+", "-", str(name)).strip("-") or "note"


def _link(name: str) -> str:
    """A wiki link's target: one line, without the brackets and bar that would end it, nor a
    character that would start markup where wiki links are not read (HTML, code, emphasis)."""
    return " ".join(re.sub(r"[\[\]|<>&`*~\\#]", " ", str(name)).split()) or "unnamed"


def _yaml(value) -> str:
    """A YAML value written as JSON (YAML's flow style reads it), line breaks YAML knows
    beyond JSON's escaped too."""
    text = json.dumps(value, ensure_ascii=False)
    for raw, escaped in YAML_BREAKS.items():
        text = text.replace(raw, escaped)
    return text
