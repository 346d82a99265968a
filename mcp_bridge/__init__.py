"""MCP bridge: the memory Hermes has, for every MCP client (`hermes-cmms mcp`)."""
from .server import build, local_scope, serve

__all__ = ["build", "local_scope", "serve"]
