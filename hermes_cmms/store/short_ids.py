"""A short id as the doors print it (the dashed id's first 8 digits, or any start of an id of at
least MIN_PREFIX digits) resolved to the one memory of the asked scope it starts. Another scope's
memories are never matched, counted or named: a start no memory of the scope has is given back
unchanged, for the verb to refuse it as the unknown id it is."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from ..common.errors import AmbiguousId
from ..common.ids import id_prefix
from .models import Memory

if TYPE_CHECKING:
    from .store import Store


def resolved(store: "Store", scope: str, given: Any) -> Any:
    """The stored id of the one memory of `scope` whose id starts with `given` (a short id);
    `given` unchanged when it is no short id or starts none; AmbiguousId when it starts several."""
    prefix = id_prefix(given)
    if prefix is None:
        return given
    # a range of the primary key, not LIKE: an index seek on SQLite and PostgreSQL alike
    starting = (Memory.scope == scope, Memory.id >= prefix, Memory.id < prefix + "g")
    with store.read() as conn:
        count = conn.execute(select(func.count()).select_from(Memory).where(*starting)).scalar_one()
        if count == 1:
            return conn.execute(select(Memory.id).where(*starting)).scalar_one()
    if count:
        raise AmbiguousId(f"{count} memories in this scope start with {given.strip()}: give more of the id.")
    return given
