"""The dashboard's gate: who may ask (the start's token, then its cookie), at which address
(the Host header: no DNS rebinding), which changes (Origin, the CSRF token, --allow-changes),
and the headers every answer carries (a strict Content-Security-Policy among them)."""
from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ._peer import same_user

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
           (b"cache-control", b"no-store"), (b"cross-origin-opener-policy", b"same-origin"),
           (b"cross-origin-resource-policy", b"same-origin")]
LOOPBACK = ("127.0.0.1", "localhost")
READS = ("GET", "HEAD")


@dataclass
class Door:
    """One start of the dashboard: its secrets, its address, what it may do."""

    port: int
    host: str = "127.0.0.1"
    scope: Optional[str] = None  # --scope: the only scope shown
    allow_changes: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # in the printed URL, once
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # the cookie it becomes
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))  # in every form of a change

    @property
    def hosts(self) -> frozenset[str]:
        """The Host headers answered: the loopback names, and an explicit --host's own."""
        names = set(LOOPBACK) | ({self.host} if self.host not in ("0.0.0.0", "::", "") else set())
        return frozenset(f"{_bracketed(name)}:{self.port}" for name in names)

    @property
    def cookie(self) -> str:
        return f"cmms_ui_{self.port}"  # cookies ignore ports: two dashboards keep theirs apart

    def url(self) -> str:
        """The address to open: with the token, which the first visit trades for the cookie."""
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://{_bracketed(host)}:{self.port}/?token={self.token}"


def _bracketed(host: str) -> str:
    """An IPv6 address as a URL and a Host header write it: in brackets."""
    return f"[{host}]" if ":" in host else host


class Guard:
    """ASGI middleware: refuses what the door does not answer, adds HEADERS to every answer."""

    def __init__(self, app, door: Door):
        self.app, self.door = app, door

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        refusal = refused(Request(scope), self.door)
        await (refusal or self.app)(scope, receive, send_with_headers)


def refused(request: Request, door: Door) -> Optional[Response]:
    """The answer that refuses `request`, or None when it may go on."""
    host = request.headers.get("host", "")
    if host not in door.hosts:
        return _no(403, f"This dashboard answers at {sorted(door.hosts)[0]} only, not at Host {host[:80]!r}.")
    if not same_user(request.scope.get("client"), request.scope.get("server")):
        return _no(403, "This dashboard answers the user who started it, not another user of this machine.")
    given = request.query_params.get("token")
    if given is not None:
        return _trade(request, door) if _same(given, door.token) else _no(401, "That token is not this start's.")
    if not _same(request.cookies.get(door.cookie, ""), door.session):
        return _no(401, "Open the address `hermes-cmms ui` printed: it holds this start's token.")
    if request.method not in READS:
        return _change_refused(request, door)
    return None


def _change_refused(request: Request, door: Door) -> Optional[Response]:
    if not door.allow_changes:
        return _no(403, "This dashboard is read-only: start it with --allow-changes to change memories.")
    origins = {f"http://{host}" for host in door.hosts}
    origin, referer = request.headers.get("origin"), request.headers.get("referer")
    if origin is not None:
        return None if origin in origins else _no(403, f"A change from another origin ({origin[:80]!r}) is refused.")
    if referer and any(referer.startswith(o + "/") for o in origins):
        return None
    return _no(403, "A change must come from this dashboard's own pages (no Origin or Referer said so).")


def csrf_ok(door: Door, form_value: Optional[str], header_value: Optional[str]) -> bool:
    """Whether a change carries the start's CSRF token (a hidden field, or htmx's header)."""
    return _same(form_value or header_value or "", door.csrf)


def _trade(request: Request, door: Door) -> Response:
    """The token for the cookie, then the same page without the token in its address."""
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    path = "/" + request.url.path.lstrip("/\\")  # never `//host`: the redirect stays on this dashboard
    response = RedirectResponse(path + (f"?{urlencode(rest)}" if rest else ""), status_code=303)
    response.set_cookie(door.cookie, door.session, httponly=True, samesite="strict", path="/")
    return response


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


def _no(status: int, sentence: str) -> Response:
    return PlainTextResponse(sentence + "\n", status_code=status)
