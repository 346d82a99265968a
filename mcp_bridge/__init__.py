"""MCP bridge (arrives with issue order 3)."""
