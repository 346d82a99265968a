"""Built-in auto-retain: every write lands in the SQL store before the caller returns."""
from __future__ import annotations

from .specs import hookimpl


@hookimpl
def retain(service, items, turn_of):
    return service.store.add(items, turn_of=turn_of)
