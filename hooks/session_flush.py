"""Built-in session flush: index what the session wrote, learn from it, consolidate it, mark it
closed."""
from __future__ import annotations

import logging

from .specs import hookimpl

log = logging.getLogger(__name__)

FLUSH_WAIT_S = 5.0


@hookimpl
def session_flush(service, scope, session_id):
    service.indexer.drain(FLUSH_WAIT_S)
    try:
        service.extract_session(scope, session_id)
    except Exception as exc:  # noqa: BLE001 - a failing extractor never breaks the flush
        log.warning("hermes-cmms: learning from session %s failed: %s", session_id, exc)
    try:
        service.consolidate(scope, session_id, actor="cmms:session-flush", wait=FLUSH_WAIT_S)
    except Exception as exc:  # noqa: BLE001 - the scheduler consolidates it later; the flush goes on
        log.warning("hermes-cmms: consolidating session %s failed: %s", session_id, exc)
    service.store.mark_flushed(scope, session_id)
