"""A real MCP client session against `hermes-cmms mcp`, for mcp 1.x and 2.x alike.

The SDK is imported when a session starts, not with this module: most test modules that import
it are collected without running a session (the quick loop's collection, docs/testing.md)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from mcp import ClientSession


def bridge_command(home, *extra: str) -> list[str]:
    """`hermes-cmms mcp` for `home`, which may start its store there (--create: a test's home is
    not one Hermes has used)."""
    return [sys.executable, "-m", "hermes_cmms.cli", "mcp", "--hermes-home", str(home), "--create", *extra]


def _get(obj, *names):
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(names[0])


class Result:
    """A tool result: `error` (bool), `data` (the JSON object) and `text`."""

    def __init__(self, raw):
        self.error = bool(_get(raw, "is_error", "isError"))
        self.text = "\n".join(getattr(c, "text", "") for c in raw.content)
        structured = _get(raw, "structured_content", "structuredContent")
        self.data = structured if structured is not None else (
            json.loads(self.text) if not self.error and self.text.startswith("{") else None)


class Bridge:
    """Async helpers over one client session."""

    def __init__(self, session: ClientSession, initialized=None):
        self.session = session
        self.server_info = _get(initialized, "server_info", "serverInfo") if initialized else None

    async def tools(self) -> dict[str, Any]:
        listed = await self.session.list_tools()
        return {t.name: t for t in listed.tools}

    async def call(self, name: str, **args) -> Result:
        return Result(await self.session.call_tool(name, args))

    async def ok(self, name: str, **args) -> dict:
        result = await self.call(name, **args)
        assert not result.error, result.text
        return result.data


def input_schema(tool) -> dict:
    return _get(tool, "input_schema", "inputSchema")


@asynccontextmanager
async def stdio_bridge(home, *extra: str, env: Optional[dict] = None, command: Optional[list] = None,
                       cwd=None):
    """A session with `hermes-cmms mcp` for `home`, or with another server `command` in `cwd`."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command = command or bridge_command(home, *extra)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=cwd,
                                   env={**os.environ, **(env or {})})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            yield Bridge(session, await session.initialize())


@asynccontextmanager
async def http_bridge(url: str, token: Optional[str] = None):
    from mcp import ClientSession

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        import httpx2  # mcp 2.x
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client

        transport = streamablehttp_client(url, headers=headers)
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            yield Bridge(session, await session.initialize())


def run(coro):
    return asyncio.run(coro)
