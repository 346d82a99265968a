"""Built-in session flush: index what the session wrote and mark it closed, once."""
from __future__ import annotations

from .specs import hookimpl

FLUSH_WAIT_S = 5.0


@hookimpl
def session_flush(service, scope, session_id):
    service.indexer.drain(FLUSH_WAIT_S)
    service.store.mark_flushed(scope, session_id)
