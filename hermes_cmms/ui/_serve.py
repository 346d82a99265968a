"""`hermes-cmms ui`: start the dashboard on a loopback port and say (and open) its address."""
from __future__ import annotations

import socket
import sys
import webbrowser
from typing import Optional

from ._guard import LOOPBACK, Door

WILDCARDS = ("0.0.0.0", "::", "")


def serve(service, *, host: Optional[str] = None, port: int = 0, scope: Optional[str] = None,
          allow_changes: bool = False, open_browser: bool = True) -> None:
    """Serve the dashboard over `service` until interrupted. `host` None binds 127.0.0.1; any
    other address only when given (a warning says who can then reach it); `port` 0: a free one."""
    import uvicorn

    from .app import make_app

    sock = bind(host or "127.0.0.1", port)
    door = Door(port=sock.getsockname()[1], host=host or "127.0.0.1", scope=scope, allow_changes=allow_changes)
    if door.host not in LOOPBACK:
        print(f"warning: the dashboard listens on {door.host}: other machines can reach it (the token still "
              "guards it, over plain HTTP)", file=sys.stderr)
    print(f"hermes-cmms dashboard ({'changes allowed' if allow_changes else 'read-only'}"
          f"{', scope ' + scope if scope else ''}): {door.url()}", flush=True)
    if open_browser:
        webbrowser.open(door.url())
    config = uvicorn.Config(make_app(service, door), log_level="warning", proxy_headers=False,
                            server_header=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (IPv6 when the address is one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock
