"""Built-in session flush: index what the session wrote, consolidate it, mark it closed."""
from __future__ import annotations

from .specs import hookimpl

FLUSH_WAIT_S = 5.0


@hookimpl
def session_flush(service, scope, session_id):
    service.indexer.drain(FLUSH_WAIT_S)
    service.consolidate(scope, session_id, actor="cmms:session-flush")
    service.store.mark_flushed(scope, session_id)
