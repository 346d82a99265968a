"""Ids at the doors: stored as 32 hex digits, shown as RFC 4122 UUID strings with dashes.

Every door (MCP tools, Hermes tools, `--json` CLI output) shows an id dashed (`shown_id`,
`public_ids`) and accepts it dashed, braced, upper-case or as stored (`stored_id`); the engine
and the SQL see only the stored form. Where a door prints an id short (the dashboard and `list`:
its first 8 digits), the facade takes that too: `id_prefix` reads a start of an id (at least
MIN_PREFIX hex digits, dashed or not) and the store finds the one memory of the asked scope it
starts (store/short_ids.py). Only the values of id keys are rewritten, never text: a
note whose content is a 32-digit hash stays as it was written.
"""
from __future__ import annotations

import re
import uuid
from typing import Any, Mapping, Optional

STORED = re.compile(r"[0-9a-f]{32}")
MIN_PREFIX = 8  # hex digits of a short id: the dashed id's first group, as the doors print it
_PREFIX = re.compile(r"[0-9a-fA-F-]{8,35}")
ID_KEYS = frozenset({"id", "ids", "superseded_by", "supersedes", "superseded", "superseded_ids",
                     "contested_by", "winner", "merged", "kept", "archived", "cycle", "learned_from",
                     "low_confidence", "summaries", "belief_a", "belief_b"})
# Hermes' own session ids are shown as Hermes gave them; a belief's sources are shown by the
# engine (a memory cited dashed, an outside reference exactly as given, even 32 hex digits)
NOT_IDS = frozenset({"session_id", "source_ids", "source_ref"})


def shown_id(value: Any) -> Any:
    """A stored id (32 hex digits) as a dashed UUID string; anything else unchanged."""
    return str(uuid.UUID(hex=value)) if isinstance(value, str) and STORED.fullmatch(value) else value


def stored_id(value: Any) -> Any:
    """An id as given at a door (dashed, braced, `urn:uuid:`, any case, or stored) in its stored
    form; anything that is not a UUID (an entity's name, a typo) unchanged, for the engine to
    look up or refuse."""
    if not isinstance(value, str) or not 32 <= len(value.strip()) <= 45:
        return value
    try:
        return uuid.UUID(value.strip()).hex
    except ValueError:
        return value


def id_prefix(value: Any) -> Optional[str]:
    """The stored form's start that `value` gives, when it is a start of an id as a door shows it
    (MIN_PREFIX to 31 hex digits, any case, dashed where a dashed id has its dashes or not at
    all: `1234abcd`, `1234ABCD-ef`); None for anything else (a whole id, a name, a typo)."""
    if not isinstance(value, str) or not _PREFIX.fullmatch(value.strip()):
        return None
    given = value.strip().lower()
    digits = given.replace("-", "")
    if not MIN_PREFIX <= len(digits) < 32:
        return None
    if "-" in given and str(uuid.UUID(hex=digits.ljust(32, "0")))[:len(given)] != given:
        return None  # dashes where no dashed id has them
    return digits


def is_id_key(key: Any) -> bool:
    return isinstance(key, str) and key not in NOT_IDS and (
        key in ID_KEYS or key.endswith("_id") or key.endswith("_ids"))


def public_ids(value: Any, _key: Any = None) -> Any:
    """`value` (a tool's answer) with the ids under id keys shown dashed, recursively."""
    if isinstance(value, dict):
        return {key: public_ids(item, key) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [public_ids(item, _key) for item in value]
    return shown_id(value) if is_id_key(_key) else value


def stored_ids(value: Any) -> Any:
    """An id argument (a string or a list of them) in stored form."""
    if isinstance(value, list):
        return [stored_id(item) for item in value]
    return stored_id(value)


def given_forms(arguments: Mapping[str, Any]) -> dict[str, str]:
    """{stored form: the form the caller gave} of the id arguments that a door converted."""
    pairs = {}
    for name, value in arguments.items():
        for given in (value if isinstance(value, list) else [value]) if is_id_key(name) else ():
            if isinstance(given, str) and stored_id(given) != given:
                pairs[stored_id(given)] = given
    return pairs


def given_back(text: str, given: Mapping[str, str]) -> str:
    """An error sentence with each converted id it quotes back in the form the caller gave."""
    for stored, shown in given.items():
        text = text.replace(repr(stored), repr(shown))
    return text
