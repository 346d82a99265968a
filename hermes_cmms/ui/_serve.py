"""`hermes-cmms ui`: start the dashboard on a loopback port and say (and open) its address."""
from __future__ import annotations

import html
import os
import signal
import socket
import sys
import tempfile
import threading
import webbrowser
from pathlib import Path
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
    opener = _opener(door.url()) if open_browser else None
    if opener:
        webbrowser.open(opener.as_uri())
    config = uvicorn.Config(make_app(service, door), log_level="warning", proxy_headers=False,
                            server_header=False, lifespan="off")
    _exit_on_sigterm()
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if opener:
            opener.unlink(missing_ok=True)


def _exit_on_sigterm() -> None:
    """SIGTERM ends the process through its `finally` blocks (the opener removed, the store closed):
    uvicorn stops on it, then raises it again with the handler found before it started."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def _opener(url: str) -> Path:
    """A page only this user can read that sends the browser on to `url`: the browser is started
    with the page's name, so the token stays out of its command line, which every local user can
    read (ps, /proc/PID/cmdline). Removed when the dashboard stops."""
    handle, name = tempfile.mkstemp(prefix="hermes-cmms-ui-", suffix=".html")  # mode 0600
    shown = html.escape(url, quote=True)
    with os.fdopen(handle, "w", encoding="utf-8") as page:
        page.write(f'<!doctype html>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n'
                   f'<meta http-equiv="refresh" content="0;url={shown}">\n<title>hermes-cmms dashboard</title>\n'
                   f'<p><a href="{shown}">Open the hermes-cmms dashboard</a></p>\n')
    return Path(name)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (IPv6 when the address is one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock
