"""The argument types the MCP tool families share, and the receipt a write records."""
from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field

MAX_RESULTS = 100
MAX_PAGE = 500

Query = Annotated[str, Field(description="What to look for, in plain words.")]
Scope = Annotated[str, Field(description="The memory scope, e.g. 'local:default' (Hermes CLI) or "
                                         "'user:telegram:12345' (one gateway user).")]
Tags = Annotated[Optional[list[str]], Field(description="Labels; as a filter, all must be present.")]
Actor = Annotated[Optional[str], Field(description="Who is acting (recorded with the write).")]
Source = Annotated[Optional[str], Field(description="Where it came from (a receipt), e.g. 'slack'.")]


def field(description: str, **schema):
    """A Field advertising the contract's schema keywords (minimum, maximum, enum, ...); the tool
    or the engine checks them itself, in one sentence, not the SDK (a validation dump)."""
    return Field(description=description, json_schema_extra=schema or None)


def given(value: Optional[str]) -> Optional[str]:
    """A contract string argument: "" (its default) or blank means not given."""
    return value if value is not None and value.strip() else None


def receipt(tool: str, source: Optional[str], actor: Optional[str]) -> str:
    """The receipt stored with a write: the given source (or `mcp:<tool>`), then `by <actor>`."""
    text = source.strip() if source and source.strip() else f"mcp:{tool}"
    return f"{text} by {actor.strip()}" if actor and actor.strip() else text
