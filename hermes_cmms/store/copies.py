"""Copies of a file's entries in a scope: the rows the Hermes door's mirror of MEMORY.md and
USER.md reads back (hermes/mirror.py), so that its SQL lives in the store."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import and_, or_, select

from ..common.text import like_literal
from .models import Memory

if TYPE_CHECKING:
    from .store import Store


class Owner(NamedTuple):
    """Who writes a file's copies: the receipt `source` of a copy of the file, and the receipt
    `tool_source` of a tool that writes the same entries, telling which file by its `tag`."""

    source: str
    tool_source: str
    tag: str


def _owned(owner: Owner):
    """The copies a mirror may edit or forget: its own, and the tool's copies of the file."""
    tag = like_literal(json.dumps(owner.tag))
    return or_(Memory.source == owner.source,
               and_(Memory.source == owner.tool_source, Memory.tags.like(f"%{tag}%", escape="\\")))


def current(store: "Store", scope: str, owner: Owner) -> list:
    """The scope's current copies, oldest first (id, content, content_hash, owned), including
    the memories a copy reinforced instead of inserting (they hold its receipt)."""
    receipt = like_literal(json.dumps(owner.source))
    query = (select(Memory.id, Memory.content, Memory.content_hash, _owned(owner).label("owned"))
             .where(Memory.scope == scope, Memory.superseded_by.is_(None),
                    or_(_owned(owner), Memory.receipts.like(f'%"source": {receipt}%', escape="\\")))
             .order_by(Memory.seq))
    with store.read() as conn:
        return list(conn.execute(query))


def chain(store: "Store", scope: str, memory_id: str, owner: Owner) -> list[str]:
    """`memory_id`, then the owned copies it superseded, directly or not, newest first."""
    found, frontier = [], [memory_id]
    with store.read() as conn:
        while frontier:
            found += frontier
            frontier = list(conn.execute(select(Memory.id).where(
                Memory.scope == scope, Memory.superseded_by.in_(frontier), _owned(owner))).scalars())
    return found
