"""A page of this dashboard for a host page to show (the Hermes Dashboard's Memory tab): the same
view and the same template as `hermes-cmms ui`, rendered read-only (no change form, no CSRF
token) without its head, for an address as this dashboard writes its links (`/memory/…?scope=…`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional
from urllib.parse import unquote, urlsplit

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.routing import compile_path

from ..common.errors import CmmsError, InvalidInput
from . import _pages
from ._render import Pages
from .web import NotHere, sentence

if TYPE_CHECKING:
    from ..service import MemoryService

ADDRESS_MOST = 8000  # characters of an address (a prompt of 4,000 characters, percent-encoded, fits)


@dataclass(frozen=True)
class ReadOnly:
    """The door the templates are given for a host page: no change allowed, so no form of one."""

    allow_changes: bool = False
    csrf: str = ""
    scope: Optional[str] = None


PAGES = Pages(ReadOnly())
ROUTES = [(compile_path(path), view) for path, view in _pages.VIEWS]


def fragment(address: str, service: MemoryService, owner: str, names: Callable[[], list[str]]) -> dict:
    """The page at `address` ({"title", "html"}), over `service`, the owner's scope by default."""
    path, query = _split(address)
    view, params = _view(path)
    ask = _pages.Asked(QueryParams(query), params, service, owner, None, names)
    page = view(ask)
    return PAGES.fragment(page.template, request=_request(path, query), **_pages.shown(page, ask))


def failed(address: str, exc: CmmsError) -> dict:
    """An error as the tab shows it: the dashboard's error page (its header, the one sentence)
    as {"title", "html"}, and the sentence alone as `detail`, as every web door answers it."""
    try:
        path, query = _split(address)
    except InvalidInput:
        path, query = "/", ""
    shown = PAGES.fragment("error.html", request=_request(path, query), message=sentence(exc), scope=None)
    return {"detail": sentence(exc), **shown}


def _request(path: str, query: str) -> Request:
    """The request a template reads its page's path and query from, as if this dashboard was asked."""
    return Request({"type": "http", "method": "GET", "path": path, "query_string": query.encode(), "headers": []})


def _split(address: str) -> tuple[str, str]:
    """An address's path and query; one sentence for what is not one of this dashboard's."""
    if not address.startswith("/") or address.startswith("//") or len(address) > ADDRESS_MOST:
        raise InvalidInput(f"A page's address starts with one '/' and is at most {ADDRESS_MOST:,} characters, "
                           f"not {address[:80]!r}.")
    parts = urlsplit(address)
    return unquote(parts.path), parts.query


def _view(path: str) -> tuple[Callable[[_pages.Asked], _pages.View], dict]:
    """The view of a path and its parts (a memory's id, a session's), or NotHere."""
    for (pattern, _format, convertors), view in ROUTES:
        found = pattern.match(path)
        if found:
            return view, {name: convertors[name].convert(value) for name, value in found.groupdict().items()}
    raise NotHere(f"No page {path[:80]!r} in the Memory tab.")
