"""Built-in auto-recall: hybrid search in the caller's scope, packed into the token budget."""
from __future__ import annotations

from .specs import hookimpl


@hookimpl(trylast=True)
def recall(engine, scope, query, budget_tokens, session_id, seen, prepared, kind):
    from hermes_cmms.recall.block import recall_block

    return recall_block(engine, scope, query, budget_tokens, seen, session_id,  # (records the recall event)
                        prepared=prepared, kind=kind)
