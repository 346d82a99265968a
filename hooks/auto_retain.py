"""Built-in auto-retain: every write lands in the SQL store before the caller returns."""
from __future__ import annotations

from .specs import hookimpl


@hookimpl
def retain(engine, items, turn_of):
    return engine.store.add(items, turn_of=turn_of)
