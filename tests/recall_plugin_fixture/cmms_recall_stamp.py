"""A third-party recall plugin, installed for tests as a bare dist-info on PYTHONPATH: it builds
the block for questions that name a stamp, and leaves the others to the built-in recall."""
from hermes_cmms import hookimpl


@hookimpl
def recall(service, scope, query, budget_tokens, session_id, seen):
    return f"STAMPED for {scope} within {budget_tokens} tokens" if "stamp" in query else None
