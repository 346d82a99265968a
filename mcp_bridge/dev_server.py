"""A module-level server for the SDK's own loader (`mcp run`, `mcp dev`, the MCP Inspector):

    mcp run "$(python -c 'import importlib.util as u; print(u.find_spec("hermes_cmms.mcp_bridge.dev_server").origin)')"

It serves $HERMES_HOME (default ~/.hermes) in the Hermes CLI user's scope, like `hermes-cmms mcp`.
The SDK loads this file by its path, outside any package: its imports are absolute.
"""
from hermes_cmms.common.config import hermes_home
from hermes_cmms.common.errors import StoreUnavailable
from hermes_cmms.mcp_bridge.server import build, local_scope
from hermes_cmms.service import MemoryService, door_settings

_home = hermes_home()
try:  # like `hermes-cmms mcp`: a store is started only in a home Hermes has used
    _settings = door_settings(_home, create=False)
except StoreUnavailable as exc:
    raise SystemExit(f"error: {exc}") from None
server = build(MemoryService(_settings), local_scope(_home))
