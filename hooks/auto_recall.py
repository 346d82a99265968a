"""Built-in auto-recall: hybrid search in the caller's scope, packed into the token budget."""
from __future__ import annotations

from .specs import hookimpl


@hookimpl(trylast=True)
def recall(service, scope, query, budget_tokens, seen):
    from hermes_cmms.recall import render

    return render(service.search(scope, query), budget_tokens, query, seen)
