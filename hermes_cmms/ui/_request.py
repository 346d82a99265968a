"""What every page handler shares: the door and service of the request, its scope (never another
one under --scope), a number from its query, and the page an engine error becomes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from starlette.requests import Request
from starlette.responses import Response

from ..common.errors import CmmsError, InvalidInput
from .web import NotHere, sentence, status

if TYPE_CHECKING:  # the verbs a handler calls, checked by a type checker (and by tests/ui/test_web_doors.py)
    from ..service import MemoryService

PAGE = 50  # memories, sessions, audit events per page


def door(request: Request):
    return request.app.state.door


def service(request: Request) -> MemoryService:
    """The service this dashboard was started over: a handler calls its verbs as methods."""
    return request.app.state.service


def owner(request: Request) -> str:
    """The scope the provider gives the owner of the dashboard's Hermes home (local:<profile>:
    local:default, or local:work in the profile `work`), the CLI's and the bridge's default too."""
    return request.app.state.owner


def scope_of(request: Request, asked: Optional[str] = None) -> str:
    """The scope a request names (`scope` in its query or form), the one --scope fixed, or else
    the home owner's (the provider's rule, as at every door)."""
    asked = asked if asked is not None else request.query_params.get("scope")
    return chosen(door(request).scope, owner(request), asked)


def chosen(fixed: Optional[str], home_owner: str, asked: Optional[str]) -> str:
    """The scope asked for, the one a door shows alone (`fixed`), or else the home owner's; a
    NotHere error for another scope than the fixed one."""
    if fixed is not None and asked not in (None, "", fixed):
        raise NotHere(f"No scope {asked[:80]!r} here: this dashboard shows {fixed!r} only.")
    return fixed or asked or home_owner


def scope_names(request: Request) -> list[str]:
    """The scopes the picker offers (web.ScopeList: the owner's first, even while it holds nothing
    yet), or the one --scope fixed."""
    if door(request).scope is not None:
        return [door(request).scope]
    return request.app.state.scope_list(owner(request), lambda: service(request).scopes())


def number(text: Optional[str], name: str, default: int, most: int = 10**9) -> int:
    """A whole number from the query, or a one-sentence error."""
    if text in (None, ""):
        return default
    digits = text.lstrip("0") or "0"  # ASCII digits only: `²` is a digit to isdigit, not to int
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(most)) or int(digits) > most:
        raise InvalidInput(f"{name} must be a whole number from 0 to {most:,}, not {text[:40]!r}.")
    return int(text)


def error_page(request: Request, exc: CmmsError) -> Response:
    """An engine error as a page, with the status and sentence of the web doors' one map (web.ERRORS)."""
    page = "error_fragment.html" if request.headers.get("hx-request") else "error.html"  # htmx swaps it in
    return request.app.state.pages(page, status=status(exc), message=sentence(exc), scope=None)
