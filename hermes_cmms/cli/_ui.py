"""`hermes-cmms ui`: the dashboard, started over this home's store."""
from __future__ import annotations

import argparse

from ._engine import _service


def cmd_ui(args) -> int:
    from ..ui import serve

    service = _service(args)  # the embedder and vector index load when a page first needs them
    try:
        serve(service, host=args.host, port=args.port, scope=args.scope, allow_changes=args.allow_changes,
              open_browser=not args.no_open)
    finally:
        service.close(drain_timeout=5.0)
    return 0


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 65535, not {text!r}")
    return int(text)


def register(add) -> None:
    p = add("ui", cmd_ui, "Open the dashboard: browse, inspect and (with --allow-changes) steer memories in a browser.")
    p.add_argument("--scope", help="Show this scope only (default: every scope, each page opening on the "
                   "owner's of this home, local:<profile>).")
    p.add_argument("--host", help="Address to listen on (default 127.0.0.1; any other is said with a warning).")
    p.add_argument("--port", type=_port, default=0, help="Port (default: a free one).")
    p.add_argument("--allow-changes", action="store_true",
                   help="Allow correcting, pinning, tagging and forgetting (read-only otherwise).")
    p.add_argument("--no-open", action="store_true", help="Print the address, do not open a browser.")
