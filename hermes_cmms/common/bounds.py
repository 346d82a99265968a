"""The bounds a door checks its arguments against, each refused in one sentence (the same
sentence at the Hermes tools, the MCP tools and the CLI)."""
from __future__ import annotations

from .errors import InvalidInput
from .vocabulary import MAX_QUERY_CHARS


def query_text(value: str, name: str = "query") -> str:
    """`value` unless it is blank or longer than MAX_QUERY_CHARS."""
    if not value.strip() or len(value) > MAX_QUERY_CHARS:
        raise InvalidInput(f"Argument {name!r} must hold 1 to {MAX_QUERY_CHARS:,} characters.")
    return value


def count_in(value: int, name: str, high: int, low: int = 1) -> int:
    """`value` unless it is outside low..high."""
    if not low <= value <= high:
        raise InvalidInput(f"Argument {name!r} must be between {low} and {high}, not {value}.")
    return value
