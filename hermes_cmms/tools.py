"""The compact Hermes tool set: schemas, argument checks, one engine call each."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from .errors import InvalidInput
from .recall import Hit

MAX_QUERY_CHARS = 10_000
MAX_LIMIT = 50

TOOL_SCHEMAS = [
    {"name": "cmms_recall",
     "description": "Search long-term memory (past conversations and stored facts) for this user.",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "What to look for, in plain words."},
         "limit": {"type": "integer", "description": "Most results to return (1-50, default 8)."}},
         "required": ["query"]}},
    {"name": "cmms_remember",
     "description": "Store a fact or note in long-term memory so later sessions can recall it.",
     "parameters": {"type": "object", "properties": {
         "content": {"type": "string", "description": "The fact to remember, one or two sentences."},
         "tags": {"type": "array", "items": {"type": "string"}, "description": "Optional labels."}},
         "required": ["content"]}},
    {"name": "cmms_forget",
     "description": "Delete one memory from every index, by the id cmms_recall returned.",
     "parameters": {"type": "object", "properties": {
         "memory_id": {"type": "string", "description": "The id of the memory to delete."}},
         "required": ["memory_id"]}},
]


KIND_NAMES = {str: "a string", int: "a whole number", list: "a list", dict: "an object",
              bool: "a boolean", float: "a number"}


def _arg(args: Any, name: str, kind: type, required: bool = False, default: Any = None) -> Any:
    if not isinstance(args, dict):
        raise InvalidInput("Tool arguments must be a JSON object.")
    value = args.get(name, default)
    if value is None:
        if required:
            raise InvalidInput(f"Missing required argument {name!r}.")
        return default
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        given = KIND_NAMES.get(type(value), type(value).__name__)
        raise InvalidInput(f"Argument {name!r} must be {KIND_NAMES[kind]}, not {given}.")
    return value


def _hit(hit: Hit) -> dict:
    m = hit.memory
    return {"id": m.id, "content": m.content, "kind": m.kind, "role": m.role,
            "session_id": m.session_id, "source": m.source,
            "date": datetime.fromtimestamp(m.created_at, timezone.utc).isoformat(timespec="seconds"),
            "score": round(hit.score, 5)}


def call_tool(service, scope: str, name: str, args: Any, session_id: Optional[str] = None) -> dict:
    """Run one Hermes tool call; raises CmmsError subclasses for bad input."""
    if name == "cmms_recall":
        query = _arg(args, "query", str, required=True)
        limit = _arg(args, "limit", int, default=8)
        if not query.strip() or len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"Argument 'query' must hold 1 to {MAX_QUERY_CHARS:,} characters.")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"Argument 'limit' must be between 1 and {MAX_LIMIT}, not {limit}.")
        return {"results": [_hit(h) for h in service.search(scope, query, limit)]}
    if name == "cmms_remember":
        content = _arg(args, "content", str, required=True)
        tags = _arg(args, "tags", list, default=[])
        if not all(isinstance(t, str) for t in tags):
            raise InvalidInput("Argument 'tags' must be a list of strings.")
        item = service.store_note(scope, content, tags=tags, source="hermes:cmms_remember",
                                  session_id=session_id or None)
        return {"stored": not item.reinforced, "reinforced": item.reinforced, "id": item.id}
    if name == "cmms_forget":
        memory_id = _arg(args, "memory_id", str, required=True)
        service.forget(scope, memory_id, actor="hermes:cmms_forget")
        return {"forgotten": True, "id": memory_id}
    raise InvalidInput(f"Unknown cmms tool {name!r}.")
