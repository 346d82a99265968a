"""The compact Hermes tool set: schemas, argument checks, one engine call each."""
from __future__ import annotations

from typing import Any, Optional

from ..common.answers import HIT_KEYS
from ..common.bounds import count_in, query_text
from ..common.checks import admitted
from ..common.errors import CmmsError, InvalidInput
from ..common.ids import given_back, given_forms, public_ids, stored_id
from ..common.nesting import MAX_DEPTH, too_deep, value_depth
from ..common.text import brief

MAX_LIMIT = 50

TOOL_SCHEMAS = [
    {"name": "cmms_recall",
     "description": "Search long-term memory (past conversations and stored facts) for this user.",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "What to look for, in plain words."},
         "limit": {"type": "integer", "description": "Most results to return (1-50, default 8)."},
         "route": {"type": "boolean", "description": "Let the router pick the retriever for the question "
                                                     "(preferences, decisions, skills, facts, beliefs, graph) "
                                                     "and say which and why."}},
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
    {"name": "cmms_belief",
     "description": "Record an opinion or judgement as a belief with a confidence; the same "
                    "proposition again reinforces it, a contradiction is kept for resolution.",
     "parameters": {"type": "object", "properties": {
         "text": {"type": "string", "description": "The proposition, e.g. 'the staging API is stable'."},
         "confidence": {"type": "number", "description": "How sure, 0 to 1."},
         "evidence": {"type": "string", "description": "Why, in a sentence."}},
         "required": ["text"]}},
    {"name": "cmms_graph",
     "description": "Look up people, places and things named in a question in the memory's entity "
                    "graph, with how they are related.",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "A question or names, e.g. 'Where does Ana work?'."}},
         "required": ["query"]}},
]


KIND_NAMES = {str: "a string", int: "a whole number", list: "a list", dict: "an object",
              bool: "a boolean", float: "a number", (int, float): "a number"}


def _arg(args: Any, name: str, kind: type, required: bool = False, default: Any = None) -> Any:
    if not isinstance(args, dict):
        raise InvalidInput("Tool arguments must be a JSON object.")
    value = args.get(name, default)
    if value is None:
        if required:
            raise InvalidInput(f"Missing required argument {name!r}.")
        return default
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        given = KIND_NAMES.get(type(value), type(value).__name__)
        raise InvalidInput(f"Argument {name!r} must be {KIND_NAMES[kind]}, not {given}.")
    return value


ARGUMENTS = {schema["name"]: list(schema["parameters"]["properties"]) for schema in TOOL_SCHEMAS}


def call_tool(service, scope: str, name: str, args: Any, session_id: Optional[str] = None) -> dict:
    """Run one Hermes tool call; raises CmmsError subclasses for bad input (with a short message:
    an echoed argument is cut), an argument the tool does not take among them. Ids in the answer
    are shown dashed (common/ids.py); an id argument may be given dashed or as stored."""
    try:
        if value_depth(args) > MAX_DEPTH:
            raise InvalidInput(too_deep("The tool call"))
        if name in ARGUMENTS and isinstance(args, dict):
            args = admitted(name, args, ARGUMENTS[name], {})
        return public_ids(_call(service, scope, name, args, session_id))
    except CmmsError as exc:
        exc.args = (brief(given_back(str(exc), given_forms(args) if isinstance(args, dict) else {})),)
        raise


def _call(service, scope: str, name: str, args: Any, session_id: Optional[str]) -> dict:
    if name == "cmms_recall":
        query, limit = _arg(args, "query", str, required=True), _arg(args, "limit", int, default=8)
        query, limit = query_text(query), count_in(limit, "limit", MAX_LIMIT)
        if _arg(args, "route", bool, default=False):
            answer = service.route(scope, query, limit)
            return {key: answer[key] for key in ("stage", "route", "answered", "reason", "results")}
        return {"results": [hit.as_dict(HIT_KEYS) for hit in service.search(scope, query, limit)]}
    if name == "cmms_remember":
        content = _arg(args, "content", str, required=True)
        tags = _arg(args, "tags", list, default=[])
        if not all(isinstance(t, str) for t in tags):
            raise InvalidInput("Argument 'tags' must be a list of strings.")
        item = service.store_note(scope, content, tags=tags, source="hermes:cmms_remember",
                                  session_id=session_id or None)
        return {"stored": not item.reinforced, "reinforced": item.reinforced, "id": item.id}
    if name == "cmms_forget":
        memory_id = stored_id(_arg(args, "memory_id", str, required=True))
        service.forget(scope, memory_id, actor="hermes:cmms_forget")
        return {"forgotten": True, "id": memory_id, "vectors_pending": service.upkeep.vectors_pending(scope)}
    if name == "cmms_belief":
        text = _arg(args, "text", str, required=True)
        confidence = _arg(args, "confidence", (int, float))
        evidence = _arg(args, "evidence", str)
        result = service.set_belief(scope, text, confidence=None if confidence is None else float(confidence),
                                    evidence=evidence, source="hermes:cmms_belief")
        belief = result["belief"]
        return {"id": result["id"], "action": result["action"], "confidence": belief["confidence"],
                "contested_by": belief["contested_by"]}
    if name == "cmms_graph":
        query = query_text(_arg(args, "query", str, required=True))
        return service.graph_search(scope, query=query, limit=10)
    raise InvalidInput(f"Unknown cmms tool {name!r}.")
