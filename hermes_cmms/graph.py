"""The entity graph: entities and relations built from facts, persisted in SQL."""
from __future__ import annotations

import re
import uuid

from sqlalchemy import Connection, insert, select

from .models import Entity, Relation

_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}"


def entity_key(name: str) -> str:
    """The key that deduplicates entity names: spaces collapsed, case-folded, outer punctuation
    and a leading article dropped ("The Lisbon office" and "lisbon office." are one entity)."""
    name = " ".join(name.split()).strip(_EDGE_PUNCTUATION).strip()
    return _ARTICLE.sub("", name).casefold() or name.casefold()


def _entities(conn: Connection, scope: str, names: list[str], now: float) -> dict[str, str]:
    """Entity ids by key for these names in `scope`, creating the missing ones."""
    keys = {entity_key(n): " ".join(n.split()) for n in names}
    found = {row.key: row.id for row in conn.execute(
        select(Entity.key, Entity.id).where(Entity.scope == scope, Entity.key.in_(list(keys))))}
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
