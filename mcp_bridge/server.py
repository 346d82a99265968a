"""The MCP server on the official SDK: mcp 2.x (`MCPServer`) or 1.x (`FastMCP`), stdio or HTTP."""
from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from contextlib import contextmanager
from typing import Iterator, Optional

from hermes_cmms.common.config import Settings, hermes_home
from hermes_cmms.common.checks import admitted
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.common.scopes import local_scope  # re-exported (mcp_bridge.local_scope)
from hermes_cmms.common.version import __version__

from .limits import BoundedLines, BoundedRequests, Wire
from .tools import aliases, catalogue, guarded

INSTRUCTIONS = ("Long-term memory shared with Hermes Agent (hermes-cmms). Use get_context or "
                "search before answering questions about the user or past work; remember or "
                "store_memory to keep something for later sessions.")


def sdk():
    """(server class, ToolError class, major version) of the installed mcp SDK."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        return MCPServer, ToolError, 2
    except ImportError:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError
        return FastMCP, ToolError, 1


def build(service, scope: str, host: str = "127.0.0.1", port: int = 8765, confined: bool = False):
    """The MCP server object with the whole catalogue registered; `confined` (--scope given)
    keeps the memser tools, which name their scope, to `scope` as well."""
    server_cls, tool_error, major = sdk()
    options = {"version": __version__} if major >= 2 else {"host": host, "port": port}
    server = server_cls("hermes-cmms", instructions=INSTRUCTIONS, log_level="WARNING", **options)
    if major < 2:  # FastMCP takes no version: its low-level server would say the SDK's own
        server._mcp_server.version = __version__
    def audit(tool: str, args: dict, ok: bool, error: str) -> None:
        actor = args.get("actor") if isinstance(args.get("actor"), str) and args["actor"].strip() else "client"
        service.upkeep.record_call(f"mcp:{actor}", tool, args.get("scope") or scope, ok, error)

    for fn in catalogue(service, scope):
        tool = guarded(fn, tool_error, audit, service.upkeep, scope if confined else None)
        server.add_tool(tool, name=fn.__name__, description=summary(fn))
        schema = server._tool_manager.get_tool(fn.__name__).parameters  # same in both SDKs
        schema["required"] = tool.required
        for name in tool.required:
            schema["properties"][name].pop("default", None)
    _admit_arguments(server, tool_error, audit)
    return server


def served(service, home: Optional[str], scope: Optional[str] = None, host: str = "127.0.0.1", port: int = 8765):
    """The server `hermes-cmms mcp` serves for `home`: in the home's local scope, or in `scope`
    (--scope), to which the memser tools are then confined too."""
    return build(service, scope or local_scope(hermes_home(home)), host, port, confined=scope is not None)


def lowlevel(server):
    """The SDK's low-level server inside the server object (2.x, 1.x)."""
    return getattr(server, "_lowlevel_server", None) or server._mcp_server


def _admit_arguments(server, tool_error, audit) -> None:
    """Every call passes `checks.admitted` before the SDK sees it: the SDK's argument model drops
    an argument it does not know (and an earlier name) without a word. Both SDK lines route each
    call through `ToolManager.call_tool(name, arguments, ...)`."""
    manager = server._tool_manager
    call_tool = manager.call_tool

    async def admitting(name, arguments, *args, **kwargs):
        tool = manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            try:
                arguments = admitted(name, arguments, list(tool.parameters.get("properties", {})), aliases(name))
            except InvalidInput as exc:
                audit(name, arguments, False, str(exc))
                raise tool_error(f"Error executing tool {name}: {exc}") from None
        return await call_tool(name, arguments, *args, **kwargs)

    manager.call_tool = admitting


def summary(fn) -> str:
    """A tool's description for MCP clients: the first paragraph of its docstring, one line."""
    return " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerToken:
    """ASGI middleware: every request must carry `Authorization: Bearer <token>`; the scheme's
    case does not matter (RFC 7235), the token is compared in constant time."""

    def __init__(self, app, token: str):
        self.app, self.expected = app, token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not self.admits(dict(scope.get("headers") or []).get(b"authorization", b"")):
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body",
                        "body": b'{"error": "A valid bearer token (CMMS_MCP_TOKEN) is required."}'})
            return
        await self.app(scope, receive, send)

    def admits(self, header: bytes) -> bool:
        scheme, _, given = header.partition(b" ")
        return hmac.compare_digest(given.strip(b" "), self.expected) and scheme.lower() == b"bearer"


def http_app(server, host: str):
    """The streamable-HTTP ASGI app of either SDK version, each request measured first."""
    try:
        return BoundedRequests(server.streamable_http_app(host=host))  # mcp 2.x
    except TypeError:
        return BoundedRequests(server.streamable_http_app())  # mcp 1.x: host/port are server settings


def run_stdio(server) -> None:
    """What `server.run("stdio")` does in either SDK, but with stdin read through BoundedLines."""
    import anyio
    from mcp.server.stdio import stdio_server

    inner = lowlevel(server)

    async def main() -> None:
        with claimed_stdio() as (wire_in, wire_out):
            wire = Wire(wire_out)
            async with stdio_server(anyio.wrap_file(BoundedLines(wire_in, wire)), anyio.wrap_file(wire)) as streams:
                await inner.run(*streams, inner.create_initialization_options())

    anyio.run(main)


@contextmanager
def claimed_stdio() -> Iterator[tuple]:
    """The wire (fds 0 and 1) on private descriptors; meanwhile fd 0 reads /dev/null and fd 1
    writes to stderr, so stray output of a library or a child process never lands inside a
    frame (what mcp 2.x's stdio_server does when it opens the streams itself)."""
    private = [os.dup(0), os.dup(1)]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:  # closefd=False: a worker thread may still block reading when the server ends
        yield os.fdopen(private[0], "rb", closefd=False), os.fdopen(private[1], "wb", closefd=False)
    finally:
        os.dup2(private[0], 0)
        os.dup2(private[1], 1)


def check_bind(host: str, port: int) -> None:
    """Refuse, in one sentence, an address the HTTP server could not listen on (uvicorn would
    log it and exit, or wait on a port out of range)."""
    if not 1 <= port <= 65535:
        raise InvalidInput(f"The HTTP port must be from 1 to 65535, not {port}.")
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise InvalidInput(f"Cannot serve MCP over HTTP on {host}:{port}: {reason}.") from None


def serve(home: Optional[str] = None, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = 8765, scope: Optional[str] = None) -> None:
    """Run the bridge until the client disconnects (stdio) or the process is stopped (HTTP)."""
    from hermes_cmms.service import MemoryService

    if transport not in ("stdio", "http"):
        raise InvalidInput(f"Unknown transport {transport!r}; choose stdio or http.")
    token = os.environ.get("CMMS_MCP_TOKEN", "")
    if transport == "http" and not is_loopback(host) and not token:
        raise InvalidInput(f"Refusing to serve MCP over HTTP on {host} without a bearer token: "
                           "set CMMS_MCP_TOKEN, or use --host 127.0.0.1.")
    settings = Settings.load(home)
    service = MemoryService(settings)
    try:
        server = served(service, home, scope, host, port)
        if transport == "stdio":
            run_stdio(server)
            return
        import uvicorn

        check_bind(host, port)
        app = http_app(server, host)
        if token:
            app = BearerToken(app, token)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        service.close(drain_timeout=2.0)
