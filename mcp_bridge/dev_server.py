"""A module-level server for the SDK's dev tooling (`mcp dev`, the MCP Inspector):

    mcp dev "$(python -c 'import hermes_cmms.mcp_bridge.dev_server as m; print(m.__file__)')"

It serves $HERMES_HOME (default ~/.hermes) in the Hermes CLI user's scope, like `hermes-cmms mcp`.
"""
from hermes_cmms.common.config import Settings, hermes_home
from hermes_cmms.service import MemoryService

from .server import build, local_scope

_home = hermes_home()
server = build(MemoryService(Settings.load(_home)), local_scope(_home))
