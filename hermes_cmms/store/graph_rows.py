"""The entity graph's rows as the store writes them: entity names and keys, and the entities
and relations of new facts (added inside the store's own write, and an import's). The graph's
reads and its rebuild are hermes_cmms.knowledge._rows.graph. See docs/graph.md."""
from __future__ import annotations

import re
import uuid
from typing import Iterator

from sqlalchemy import Connection, insert, select

from ..common.text import bounded_key
from .models import Entity, Relation

CHUNK = 500  # ids per IN (...) list

_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"


# -- names --------------------------------------------------------------------------------

def _trimmed(name: str) -> str:
    """The name with spaces collapsed and outer punctuation and a possessive "'s" dropped."""
    name = " ".join(name.split()).strip(_EDGE_PUNCTUATION).strip()
    return _POSSESSIVE.sub("", name).strip(_EDGE_PUNCTUATION).strip()


def entity_key(name: str) -> str:
    """The key that deduplicates entity names: spaces collapsed, outer punctuation (a trailing
    dot too), a possessive "'s" and a leading article dropped, case-folded ("The Lisbon office",
    "lisbon office." and "Lisbon office's" are one entity)."""
    trimmed = _trimmed(name)
    return bounded_key((_ARTICLE.sub("", trimmed) or trimmed).casefold() or " ".join(name.split()).casefold())


def display_name(name: str) -> str:
    """The name an entity is shown by: its first spelling, spaces collapsed, outer punctuation
    dropped."""
    return " ".join(name.split()).strip(_EDGE_PUNCTUATION).strip() or " ".join(name.split())


# -- writes -------------------------------------------------------------------------------

def _entities(conn: Connection, scope: str, names: list[str], now: float) -> dict[str, str]:
    """Entity ids by key for these names in `scope`, creating the missing ones (named by the
    first spelling met)."""
    keys: dict[str, str] = {}
    for name in names:
        keys.setdefault(entity_key(name), display_name(name))
    found = {}
    for chunk in chunks(list(keys)):
        found.update({row.key: row.id for row in conn.execute(
            select(Entity.key, Entity.id).where(Entity.scope == scope, Entity.key.in_(chunk)))})
    fresh = [{"id": uuid.uuid4().hex, "scope": scope, "name": name, "key": key, "created_at": now}
             for key, name in keys.items() if key not in found]
    if fresh:
        conn.execute(insert(Entity), fresh)
        found.update({row["key"]: row["id"] for row in fresh})
    return found


def add_facts(conn: Connection, facts: list[dict], now: float) -> None:
    """Add the entities and relation of each new fact row (memory_id, scope, subject,
    predicate, object) inside the caller's transaction."""
    for scope in {fact["scope"] for fact in facts}:
        mine = [fact for fact in facts if fact["scope"] == scope]
        ids = _entities(conn, scope, [n for f in mine for n in (f["subject"], f["object"])], now)
        conn.execute(insert(Relation), [
            {"scope": scope, "source_id": ids[entity_key(f["subject"])], "target_id": ids[entity_key(f["object"])],
             "predicate": " ".join(f["predicate"].split()), "memory_id": f["memory_id"], "created_at": now}
            for f in mine])


def chunks(items: list) -> Iterator[list]:
    """`items` in lists of CHUNK (for IN (...) lists)."""
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
