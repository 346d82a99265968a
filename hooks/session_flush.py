"""Built-in session flush: index what the session wrote, learn from it, consolidate it, mark it
closed."""
from __future__ import annotations

import logging

from .specs import hookimpl

log = logging.getLogger(__name__)

FLUSH_WAIT_S = 5.0


@hookimpl
def session_flush(engine, scope, session_id):
    from hermes_cmms.knowledge.learn import extract_session
    from hermes_cmms.lifecycle.consolidate import consolidate_audited

    engine.indexer.drain(FLUSH_WAIT_S)
    try:
        extract_session(engine, scope, session_id)
    except Exception as exc:  # noqa: BLE001 - a failing extractor never breaks the flush
        log.warning("hermes-cmms: learning from session %s failed: %s", session_id, exc)
    try:
        consolidate_audited(engine, scope, session_id, actor="cmms:session-flush", wait=FLUSH_WAIT_S)
    except Exception as exc:  # noqa: BLE001 - the scheduler consolidates it later; the flush goes on
        log.warning("hermes-cmms: consolidating session %s failed: %s", session_id, exc)
    engine.store.mark_flushed(scope, session_id)
