"""The Hermes holographic memory provider's store (`memory_store.db`): each fact becomes a
semantic note of the profile's scope, its trust score as its confidence (a fact Hermes hides
for low trust comes in with that low confidence), its category and tags as tags, its times
(UTC without a zone) as its own. A fact whose lifecycle column says it is not active is skipped."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ...common.scopes import local_scope
from . import _hermes_files as hermes_files
from . import Skipped, memory, timestamp

NAME = "hermes-holographic"
MOST_TAGS = 8


def sniff(path: Path) -> bool:
    return path.is_file() and {"facts", "entities", "fact_entities"} <= hermes_files.tables(path)


def records(path: Path, *, scope: str) -> Iterator[Any]:
    owner = local_scope(path.resolve().parent)
    with hermes_files.copy_of(path) as conn:
        for row in hermes_files.holographic_facts(conn):
            where = f"fact {row['fact_id']}"
            if row.get("lifecycle") not in (None, "active"):
                yield Skipped(f"a fact no longer active ({str(row['lifecycle'])[:20]})", where)
                continue
            text = (row.get("content") or "").strip() if isinstance(row.get("content"), str) else ""
            if not text:
                yield Skipped("a fact without text", where)
                continue
            trust = row.get("trust_score")
            created = timestamp(row.get("created_at"))
            yield memory(NAME, (row["fact_id"], text), text, original=f"holographic:fact/{row['fact_id']}",
                         created_at=created, updated_at=timestamp(row.get("updated_at")) or created,
                         tier="semantic", kind="note", tags=_tags(row),
                         confidence=trust if isinstance(trust, (int, float)) else 0.5, scope=owner)


def _tags(row: dict) -> tuple[str, ...]:
    tags = ["hermes-holographic", str(row.get("category") or "general")]
    tags += [tag.strip() for tag in str(row.get("tags") or "").split(",") if tag.strip()]
    return tuple(dict.fromkeys(tag[:64] for tag in tags))[:MOST_TAGS]
