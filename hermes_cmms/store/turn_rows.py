"""The conversation messages a scope already holds, by role and text (a checkpoint's check)."""
from __future__ import annotations

from typing import Any, Iterable

from sqlalchemy import select

from .models import Memory

Store = Any  # the Store, for its read()


def held(store: Store, scope: str, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which (role, content_hash) `keys` the scope holds as a message, in any state: one
    consolidated, superseded or archived since is held too."""
    keys = set(keys)
    if not keys:
        return set()
    with store.read() as conn:
        rows = conn.execute(select(Memory.role, Memory.content_hash).where(
            Memory.scope == scope, Memory.kind == "message",
            Memory.content_hash.in_(sorted({digest for _, digest in keys})))).all()
    return {(role or "", digest) for role, digest in rows} & keys
