"""What every page handler shares: the door and service of the request, its scope (never another
one under --scope), the facade verb it calls, and the page an engine error becomes."""
from __future__ import annotations

from typing import Any, Optional

from starlette.requests import Request
from starlette.responses import Response

from ..common.errors import CmmsError, InvalidInput, UnknownEntity, UnknownMemory
from ..common.ids import public_ids, stored_id

DEFAULT_SCOPE = "local:default"  # the CLI's, shown when no scope is asked for
PAGE = 50  # memories, sessions, audit events per page


class NotHere(CmmsError):
    """A scope this dashboard does not show (it was started with --scope)."""


class Missing(CmmsError):
    """A facade verb this engine does not have yet."""


def door(request: Request):
    return request.app.state.door


def service(request: Request):
    return request.app.state.service


def scope_of(request: Request, asked: Optional[str] = None) -> str:
    """The scope a request names (`scope` in its query or form), or the one --scope fixed."""
    asked = asked if asked is not None else request.query_params.get("scope")
    fixed = door(request).scope
    if fixed is not None and asked not in (None, "", fixed):
        raise NotHere(f"No scope {asked[:80]!r} here: this dashboard shows {fixed!r} only.")
    return fixed or asked or DEFAULT_SCOPE


def call(request: Request, verb: str, *args, **kwargs) -> Any:
    """A facade verb's answer, with its ids shown dashed as at every door."""
    method = getattr(service(request), verb, None)
    if method is None:
        raise Missing(f"This engine has no MemoryService.{verb} yet, which this page needs.")
    return public_ids(method(*args, **kwargs))


def memory_id(text: str) -> str:
    """An id as a door takes it (dashed or stored) in its stored form."""
    return stored_id(text.strip()) if isinstance(text, str) else text


def number(text: Optional[str], name: str, default: int, most: int = 10**9) -> int:
    """A whole number from the query, or a one-sentence error."""
    if text in (None, ""):
        return default
    digits = text.lstrip("0") or "0"  # ASCII digits only: `²` is a digit to isdigit, not to int
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(most)) or int(digits) > most:
        raise InvalidInput(f"{name} must be a whole number from 0 to {most:,}, not {text[:40]!r}.")
    return int(text)


def error_page(request: Request, exc: Exception) -> Response:
    """An engine error as a page: 404 for what is not in this scope, 501 for a verb this engine
    lacks, 400 for anything else the caller asked wrongly."""
    status = 404 if isinstance(exc, (UnknownMemory, UnknownEntity, NotHere)) else 501 if isinstance(exc, Missing) else 400
    page = "error_fragment.html" if request.headers.get("hx-request") else "error.html"  # htmx swaps it in
    return request.app.state.pages(page, status=status, message=str(exc), scope=None)
