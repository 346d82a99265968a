"""The MCP tool catalogue: thin typed functions over the one engine, returning JSON objects.

Two families share one store: the CMMS names (`remember`, `search`, ...) work in the bridge's
default scope; the memser names (`store_memory`, `recall_memory`, ...) name their scope. Each
family lives in its own module (`_recall_tools`, `_memser_tools`, `_knowledge_tools`,
`_belief_tools`); this one assembles them and checks every call (`guarded`).
"""
from __future__ import annotations

import functools
import inspect
import logging
import typing
from typing import Annotated, Any, Callable, Optional

from pydantic import TypeAdapter, ValidationError, WithJsonSchema

from hermes_cmms.common.errors import CmmsError
from hermes_cmms.common.ids import given_back, given_forms, is_id_key, public_ids, stored_ids
from hermes_cmms.common.text import brief, escape_surrogates
from hermes_cmms.service import MemoryService

from . import _belief_tools, _knowledge_tools, _memser_tools, _recall_tools

log = logging.getLogger(__name__)

FAMILIES = (_recall_tools, _memser_tools, _knowledge_tools, _belief_tools)
ORDER = ("ping", "remember", "search", "get_context", "semantic_search",
         "store_memory", "recall_memory", "forget_memory", "list_memories", "consolidate_memories", "audit_log",
         "learn", "graph_search", "route", "audit", "metrics", "set_belief", "get_belief", "resolve_conflict",
         "reflect")


def catalogue(service: MemoryService, default_scope: str) -> list[Callable[..., dict]]:
    """The tool functions, bound to one engine and the default scope of the CMMS names."""
    fns = {fn.__name__: fn for family in FAMILIES for fn in family.tools(service, default_scope)}
    return [fns[name] for name in ORDER]


def aliases(tool: str) -> dict[str, str]:
    """The earlier argument names `tool` still accepts: {earlier name: the contract's name}."""
    return next((family.ALIASES[tool] for family in FAMILIES if tool in family.ALIASES), {})


KINDS = {"integer": "a whole number", "number": "a number", "string": "a string",
         "array": "a list of strings", "boolean": "true or false"}


def _kind(schema: dict) -> str:
    """What a JSON schema asks for, in words."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "array" and option.get("items", {}).get("type") == "object":
            return "a list of objects"
        if option.get("type") not in (None, "null"):
            return KINDS.get(option["type"], option["type"])
    return "a value"


GIVEN = {bool: "true or false", int: "a whole number", float: "a number", str: "a string", dict: "an object"}


def _given(value) -> str:
    """What a JSON value is, in words: a list by what it holds ("a list holding a list")."""
    if not isinstance(value, list):
        return GIVEN.get(type(value), "null" if value is None else type(value).__name__)
    odd = [item for item in value if not isinstance(item, str)][:1]
    if not odd:
        return "a list of strings" if value else "an empty list"
    return f"a list holding {'a list' if isinstance(odd[0], list) else _given(odd[0])}"


def _json_safe(value):
    """A result the SDK can serialise: an echoed argument (a scope, an id) may hold a lone
    surrogate, shown escaped (`\\ud800`) as the store keeps it."""
    if isinstance(value, dict):  # keys too
        return {escape_surrogates(key) if isinstance(key, str) else key: _json_safe(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return escape_surrogates(value) if isinstance(value, str) else value


def guarded(fn: Callable[..., dict], tool_error: type[Exception],
            audit: Optional[Callable[[str, dict, bool, str], None]] = None,
            metrics: Any = None, confined: Optional[str] = None) -> Callable[..., dict]:
    """`fn` as the SDK should see it: the same typed JSON schema, but arguments are checked
    here so a wrong one gets one sentence ("Argument 'limit' must be a whole number, not a
    string.") instead of a validation dump, and engine errors become the SDK's tool error.
    With `metrics` (anything with `tool_call`, such as the service's upkeep) each call is counted, timed
    and traced. With `confined` (a bridge started with --scope) a `scope` argument naming any
    other scope is refused."""
    hints = typing.get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn)
    adapters = {name: TypeAdapter(hints[name]) for name in signature.parameters}
    schemas = {name: adapter.json_schema() for name, adapter in adapters.items()}

    required = [name for name, p in signature.parameters.items() if p.default is inspect.Parameter.empty]

    @functools.wraps(fn)
    def call(**kwargs):
        if metrics is None:
            return audited(**kwargs)
        scope = kwargs.get("scope")
        with metrics.tool_call("mcp", fn.__name__, scope if isinstance(scope, str) else None):
            return audited(**kwargs)

    def audited(**kwargs):
        try:
            result = checked(**kwargs)
        except Exception as exc:
            if audit is not None:
                audit(fn.__name__, kwargs, False, str(exc))
            raise
        if audit is not None:
            audit(fn.__name__, kwargs, True, "")
        return result

    def checked(**kwargs):
        for name in required:
            if kwargs.get(name) is None:
                raise tool_error(f"Missing required argument {name!r}.")
        for name, value in kwargs.items():
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**63 \
                    and _kind(schemas[name]) == KINDS["integer"]:
                value = int(value)  # JSON Schema's integer: 1.0 is one
            try:
                kwargs[name] = adapters[name].validate_python(value, strict=True)
            except ValidationError:
                raise tool_error(f"Argument {name!r} must be {_kind(schemas[name])}, not {_given(value)}.") from None
        given = given_forms(kwargs)  # an error quotes an id as the caller gave it
        for name in kwargs:
            if is_id_key(name):  # a dashed (shown) id in its stored form
                kwargs[name] = stored_ids(kwargs[name])
        if confined is not None and "scope" in kwargs and kwargs["scope"] != confined:
            raise tool_error(f"This bridge serves only the scope {brief(confined, 120)!r} (--scope); "
                             "it cannot reach another scope.")
        try:
            return _json_safe(public_ids(fn(**kwargs)))
        except CmmsError as exc:
            raise tool_error(brief(given_back(str(exc), given))) from None
        except Exception as exc:  # a bug or a broken index: say so, keep serving
            log.exception("hermes-cmms: MCP tool %s failed", fn.__name__)
            raise tool_error(f"The {fn.__name__} tool failed inside hermes-cmms "
                             f"({type(exc).__name__}: {exc}).") from None

    # Required arguments default to None for the SDK, so that a missing one reaches the check
    # above; the schema still lists them as required (see server.build).
    parameters = [p.replace(annotation=Annotated[Any, WithJsonSchema(schemas[p.name])],
                            default=None if p.name in required else p.default)
                  for p in signature.parameters.values()]
    call.__signature__ = signature.replace(parameters=parameters, return_annotation=hints["return"])
    call.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": hints["return"]}
    del call.__wrapped__
    call.required = required
    return call
