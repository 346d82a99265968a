"""Built-in auto-recall: hybrid search in the caller's scope, packed into the token budget."""
from __future__ import annotations

from .specs import hookimpl


@hookimpl(trylast=True)
def recall(engine, scope, query, budget_tokens, seen):
    from hermes_cmms.recall.render import render
    from hermes_cmms.recall.search import search

    # enough candidates to fill the budget even with short memories (~15 tokens a line)
    hits = search(engine, scope, query, max(30, budget_tokens // 15))
    return render(hits, budget_tokens, query, seen)
