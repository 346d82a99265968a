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


def receipt(tool: str, source: Optional[str], actor: Optional[str]) -> str:
    """The receipt stored with a write: the given source (or `mcp:<tool>`), then `by <actor>`."""
    text = source.strip() if source and source.strip() else f"mcp:{tool}"
    return f"{text} by {actor.strip()}" if actor and actor.strip() else text
