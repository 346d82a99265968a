"""The records of an export file: one kind per table, how a row becomes a record and back,
and the checks every record passes before anything is written. See transfer.py."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..common import lifecycle_rules as lifecycle
from ..common.vocabulary import TIERS
from ..common.errors import InvalidInput
from ..store.columns import column_kind
from ..store.models import AuditEvent, Belief, ConversationSession, Evidence, Fact, Link, Memory
from ..redact import redact_key
from ..common.nesting import MAX_DEPTH, text_depth
from ..store.store import fact_keys as _fact_keys
from ..common.text import clean, clean_key, content_hash, map_strings

FORMAT = "hermes-cmms-export"
VERSION = 1
ID_FIELDS = ("id", "memory_id", "source_id", "belief_id", "superseded_by", "session_id")
REFERENCES = {"memory": ("superseded_by",), "fact": ("memory_id",), "belief": ("memory_id",),
              "evidence": ("belief_id", "memory_id"), "link": ("memory_id", "source_id")}


@dataclass(frozen=True)
class Kind:
    """One record type: its table, the columns that say a row is already stored (None: rows are
    counted, several equal ones may exist), the columns held as JSON text (exported as JSON
    values, each with the json.dumps options the store writes it with), the columns left out
    (physical keys and what import derives again)."""

    name: str
    plural: str
    model: type
    key: Optional[tuple[str, ...]]
    json: dict[str, dict] = field(default_factory=dict)
    dropped: frozenset = frozenset()

    @functools.cached_property
    def columns(self) -> dict:
        """The table's columns that a record of this kind carries, by name."""
        return {c.name: c for c in self.model.__table__.columns if c.name not in self.dropped | {"scope"}}

    @functools.cached_property
    def fields(self) -> tuple[tuple, ...]:
        """(name, column, required, default, column kind) of each column, read from the model
        once: row_of runs for every record of an import."""
        specs = self.model.model_fields
        return tuple((name, column, specs[name].is_required(), specs[name].default, column_kind(column))
                     for name, column in self.columns.items())

    def key_of(self, row: dict) -> tuple:
        return tuple(row[name] for name in (self.key or self.count_key))

    @property
    def count_key(self) -> tuple[str, ...]:
        """What makes two rows of a counted kind the same (an audit snapshot may have been
        blanked since, so it is not part of it)."""
        return tuple(name for name in self.columns if name != "snapshot")


KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("session", "sessions", ConversationSession, ("session_id",)),
    Kind("memory", "memories", Memory, ("id",),
         json={"tags": {}, "receipts": {}, "detail": {"ensure_ascii": False}},
         dropped=frozenset({"seq", "content_hash"})),
    Kind("fact", "facts", Fact, ("memory_id",), dropped=frozenset({"subject_key", "predicate_key", "object_key"})),
    Kind("belief", "beliefs", Belief, ("memory_id",)),
    Kind("evidence", "evidence", Evidence, None, dropped=frozenset({"id"})),
    Kind("link", "links", Link, ("memory_id", "source_id")),
    Kind("audit", "audit_events", AuditEvent, None, dropped=frozenset({"id"}),
         json={"detail": {"ensure_ascii": False, "default": str}, "snapshot": {"ensure_ascii": False}}),
)}
JSON_SHAPES = {("memory", "tags"): list, ("memory", "receipts"): list, ("memory", "detail"): (dict, list),
               ("audit", "detail"): dict, ("audit", "snapshot"): dict}


def bad(line: int, what: str) -> InvalidInput:
    """The one-sentence error for a malformed line."""
    return InvalidInput(f"Line {line}: {what}; nothing was imported.")


def parse(text: str, line: int) -> dict:
    """One line as a JSON object with a known `type` (NaN and Infinity are refused, and so
    is nesting deeper than any export writes, before the parser would overflow)."""
    if text_depth(text) > MAX_DEPTH:
        raise bad(line, f"it nests lists or objects deeper than {MAX_DEPTH} levels")
    try:
        record = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise bad(line, f"not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise bad(line, "a record must be a JSON object")
    if record.get("type") != "header" and record.get("type") not in KINDS:
        raise bad(line, f"unknown record type {record.get('type')!r}; expected one of {', '.join(KINDS)}")
    return record


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number this format accepts")


def check_header(record: dict, line: int) -> dict:
    """The header's fields, checked: format, version, scope and counts."""
    if line != 1 or record.get("type") != "header":
        raise bad(line, "the first line must be the header record of a hermes-cmms export")
    if record.get("format") != FORMAT:
        raise bad(line, f"format {record.get('format')!r} is not {FORMAT!r}")
    if record.get("version") != VERSION:
        raise bad(line, f"format version {record.get('version')!r} is not supported; this hermes-cmms "
                        f"reads version {VERSION}")
    if not isinstance(record.get("scope"), str) or not record["scope"].strip():
        raise bad(line, "the header's scope must be a non-empty string")
    counts = record.get("counts")
    plurals = {kind.plural for kind in KINDS.values()}
    if not isinstance(counts, dict) or set(counts) - plurals or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts.values()):
        raise bad(line, f"the header's counts must map {', '.join(sorted(plurals))} to whole numbers")
    return record


def row_of(record: dict, line: int) -> tuple[Kind, dict]:
    """The record checked field by field, as the row it stands for (without its scope)."""
    kind = KINDS[record["type"]]
    columns = kind.columns
    unknown = [name for name in record if name not in columns and name != "type"]
    if unknown:
        raise bad(line, f"unknown field {min(unknown)!r} in a {kind.name} record")
    row = {}
    for name, column, required, default, held in kind.fields:
        if name not in record and required:
            raise bad(line, f"the {kind.name} record has no {name!r}")
        if name in kind.json:
            default = json.loads(default) if isinstance(default, str) else None
            row[name] = _json_value(kind, name, record.get(name, default), line)
        else:
            row[name] = _value(kind, name, column, held, record[name] if name in record else default, line)
    _check_meaning(kind, row, line)
    return kind, row


def _value(kind: Kind, name: str, column, held: str, value: Any, line: int) -> Any:
    if value is None:
        if not column.nullable:
            raise bad(line, f"{name!r} of a {kind.name} record cannot be null")
        return None
    if held == "integer":  # the range both SQLite and PostgreSQL's INTEGER hold
        ok = isinstance(value, int) and not isinstance(value, bool) and -2**31 <= value < 2**31
        wanted = "a whole number between -2147483648 and 2147483647"
    elif held == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300
        wanted, value = "a finite number", float(value) if ok else value
    else:
        ok, wanted = isinstance(value, str), "a string"
        length = getattr(column.type, "length", None)
        if ok and name in ID_FIELDS and not (value.strip() and (length is None or len(value) <= length)):
            raise bad(line, f"{name!r} of a {kind.name} record must be a non-empty id"
                            + (f" of at most {length} characters" if length else ""))
    if not ok:
        raise bad(line, f"{name!r} of a {kind.name} record must be {wanted}, not {value!r}"[:300])
    return value


def _json_value(kind: Kind, name: str, value: Any, line: int) -> Any:
    shape = JSON_SHAPES[(kind.name, name)]
    if value is None and kind.model.__table__.c[name].nullable:
        return None
    if not isinstance(value, shape):
        raise bad(line, f"{name!r} of a {kind.name} record must be a JSON "
                        f"{' or '.join(t.__name__ for t in (shape if isinstance(shape, tuple) else (shape,)))}")
    if name == "tags" and not all(isinstance(tag, str) and tag.strip() for tag in value):
        raise bad(line, "'tags' must be a list of non-empty strings")
    if name == "receipts" and not all(isinstance(receipt, dict) for receipt in value):
        raise bad(line, "'receipts' must be a list of JSON objects")
    return value


def _check_meaning(kind: Kind, row: dict, line: int) -> None:
    """What the column types alone do not say: tiers, states, ranges, signs."""
    if kind.name == "memory":
        if not clean(row["content"]).strip():
            raise bad(line, "a memory's content cannot be empty")
        if row["tier"] not in TIERS:
            raise bad(line, f"unknown tier {row['tier']!r}; choose one of {', '.join(TIERS)}")
        if row["state"] not in lifecycle.LIVE_STATES:
            raise bad(line, f"unknown state {row['state']!r}; choose one of {', '.join(lifecycle.LIVE_STATES)}")
        for name in ("confidence", "reliability"):
            if not 0.0 <= row[name] <= 1.0:
                raise bad(line, f"{name!r} must be from 0 to 1, not {row[name]!r}")
    for name in ("stance", "polarity"):
        if name in row and row[name] not in (1, -1):
            raise bad(line, f"{name!r} must be 1 or -1, not {row[name]!r}")


# -- rows out and in --------------------------------------------------------------------------

def record_of(kind: Kind, mapping) -> dict:
    """A stored row as an export record."""
    record = {"type": kind.name}
    for name in kind.columns:
        value = mapping[name]
        record[name] = json.loads(value) if name in kind.json and value is not None else value
    return record


def stored_id(value: str) -> str:
    """An id (memory id, session id, ...) of a file as stored: cleaned, and a secret in it masked
    with a digest (redact_key), so equal ids stay equal and distinct ones distinct."""
    return redact_key(clean_key(value))


def prepared(kind: Kind, row: dict, scope: str, redact: Callable[[str], str]) -> tuple[dict, bool]:
    """The row ready to insert into `scope`: every string (role, kind, speaker, ids too) cleaned
    and passed through the redactor again, JSON columns written as the store writes them,
    derived columns computed; and whether the redactor changed anything."""
    out, changed = dict(row, scope=scope), False
    for name, value in row.items():
        if name in ID_FIELDS and isinstance(value, str):
            out[name] = stored_id(value)
            changed |= out[name] != clean_key(value)
        elif name in kind.json:
            done = map_strings(value, lambda text: redact(clean(text)))
            changed |= done != value
            out[name] = None if done is None else json.dumps(done, **kind.json[name])
        elif isinstance(value, str):
            out[name] = redact(clean(value))
            changed |= out[name] != value
    if kind.name == "memory":
        out["content_hash"] = content_hash(out["content"])
        if row["detail"] is not None and not row["detail"]:
            out["detail"] = None  # the store keeps no empty detail
    if kind.name == "fact":
        out.update(_fact_keys((out["subject"], out["predicate"], out["object"])))
    return out, changed
