"""A short id as the doors print it (the dashed id's first 8 digits, or any start of an id of at
least MIN_PREFIX digits) resolved to the one memory of the asked scope it starts. Another scope's
memories are never matched, counted or named: a start no memory of the scope has is given back
unchanged, for the verb to refuse it as the unknown id it is."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from sqlalchemy import func, select

from ..common.errors import AmbiguousId
from ..common.ids import id_prefix
from .models import Memory

if TYPE_CHECKING:
    from .store import Store


def resolved(store: "Store", scope: Optional[str], given: Any) -> Any:
    """The stored id of the one memory of `scope` whose id starts with `given` (a short id);
    `given` unchanged when it is no short id or starts none; AmbiguousId when it starts several.
    `scope` None: among every scope's (only for a call that reads every scope already, as an
    audit log asked no scope does)."""
    prefix = id_prefix(given)
    if prefix is None:
        return given
    # a range of the primary key, not LIKE: an index seek on SQLite and PostgreSQL alike
    starting = (Memory.id >= prefix, Memory.id < prefix + "g", *((Memory.scope == scope,) if scope is not None else ()))
    with store.read() as conn:
        count = conn.execute(select(func.count()).select_from(Memory).where(*starting)).scalar_one()
        if count == 1:
            return conn.execute(select(Memory.id).where(*starting)).scalar_one()
    if count:
        where = "in this scope" if scope is not None else "in the store"
        raise AmbiguousId(f"{count} memories {where} start with {given.strip()}: give more of the id.")
    return given
