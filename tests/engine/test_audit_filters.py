"""audit_log's door and date filters, applied in SQL (the dashboard's audit page uses them)."""
from __future__ import annotations

import time

import pytest

from hermes_cmms.common.errors import InvalidInput


@pytest.mark.quick
def test_door_and_dates_filter_the_audit_trail(keyword_service):
    svc, scope = keyword_service, "local:audit"
    kept = svc.remember(scope, "a note from the command line", source="cli")
    svc.remember(scope, "a note from an MCP client", source="mcp:store_memory")
    svc.forget(scope, kept, actor="mcpx")  # a door whose name starts like another's
    actors = lambda **f: sorted(e.actor for e in svc.audit_log(scope, **f))  # noqa: E731
    assert actors(door="mcp") == ["mcp:store_memory"]  # whole, or up to a colon: not "mcpx"
    assert actors(door="mcpx") == ["mcpx"]
    assert actors(door="m%") == [] and actors(door="mcp:") == []  # no pattern, no empty door name
    assert len(actors(since=time.time() - 60)) == 3 and actors(until=time.time() - 60) == []
    assert actors(since=time.time() + 60) == []
    for bad in ("yesterday", True, [1]):
        with pytest.raises(InvalidInput, match="must be a Unix time"):
            svc.audit_log(scope, since=bad)
