"""The Hermes Dashboard's cmms tab, its backend: read-only JSON routes over MemoryService verbs.

Hermes' web server imports `dashboard/plugin_api.py` of a plugin (the shim `install-hermes-plugin`
writes, which imports `router` from here) and mounts `router` at /api/plugins/cmms/. Every route
calls one facade verb, a method of the service, with the scope the request names (the profile
owner's, `local:<profile>`, when it names none), so a memory id of another scope answers 404 like
a missing one. Nothing here changes a memory: steering stays in `hermes-cmms ui --allow-changes`.
Answers and errors are that dashboard's (hermes_cmms.ui.web, the door below this one): ids shown
dashed, and the one map of an engine error to its status and sentence.

Importing this module loads FastAPI and the dashboard's web module only; the engine is opened at
the first request, once per Hermes home (the active profile's, as Hermes resolves it for it).
"""
from __future__ import annotations

import threading
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..common.errors import CmmsError, InvalidInput
from ..ui.web import ScopeList, answer, error_json, memory_id, status

if TYPE_CHECKING:  # the verbs a route calls, checked by a type checker (and by tests/ui/test_web_doors.py)
    from ..service import MemoryService

router = APIRouter()

LIMIT = 50  # memories a page, at most
TEXT_MOST = 4000  # characters of a prompt or query
_homes: dict[str, tuple[MemoryService, str]] = {}  # each Hermes home's service and owner's scope, once opened
_lock = threading.Lock()
_picker: dict[str, ScopeList] = {}  # each home's scope picker list


def _home() -> Path:
    """The active profile's Hermes home, as Hermes' own code resolves it for this request."""
    try:
        from hermes_constants import get_hermes_home
    except ImportError:  # outside Hermes (a test, a bare check): $HERMES_HOME or ~/.hermes
        from ..common.config import Settings

        return Settings.load().home
    return Path(get_hermes_home())


def _opened() -> tuple[MemoryService, str]:
    """The active home's service (no scheduler, no indexer thread: it only reads) and its profile
    owner's scope (what the provider gives the CLI user), made once per home: local_scope sets
    $HERMES_HOME for a moment, which a server's concurrent requests should not see more than once."""
    home = _home()
    key = str(home.expanduser().resolve())
    with _lock:
        if key not in _homes:
            from ..common.scopes import local_scope
            from ..service import MemoryService, door_settings

            owner = local_scope(home)
            _homes[key] = MemoryService(door_settings(home, None), scheduler=False, start_indexer=False), owner
        return _homes[key]


def _service() -> MemoryService:
    """The active home's service: a route calls its verbs as methods."""
    return _opened()[0]


def close_all() -> None:
    """Close every service opened here (for tests and a clean shutdown)."""
    with _lock:
        opened = [service for service, _owner in _homes.values()]
        _homes.clear()
        _picker.clear()
    for service in opened:
        service.close(drain_timeout=5.0)


def answered(route: Callable[..., Any]) -> Callable[..., Any]:
    """A route whose answer has its ids shown dashed (as at every door), and whose engine error
    is one JSON sentence with the status the web doors' one map gives it."""
    @wraps(route)
    def answer_of(*args, **kwargs) -> Any:
        try:
            return answer(route(*args, **kwargs))
        except CmmsError as exc:
            return error_json(exc)
    return answer_of


def _scope(scope: Optional[str]) -> str:
    """The scope a request names, or the profile owner's."""
    return scope[:TEXT_MOST] if scope else _opened()[1]


def _names() -> list[str]:
    """The scope picker's list of the active home (web.ScopeList, as `hermes-cmms ui` offers it)."""
    owner, key = _opened()[1], str(_home().expanduser().resolve())
    return _picker.setdefault(key, ScopeList())(owner, lambda: _service().scopes())


def _prompt(prompt: str) -> str:
    """The prompt to inspect, asked before the store is opened."""
    if not prompt.strip():
        raise InvalidInput("Give a prompt to inspect.")
    return prompt[:TEXT_MOST]


@router.get("/scopes")
@answered
def scopes() -> Any:
    """The store's scopes with their counts, and the one shown first (the profile owner's)."""
    listed = _service().scopes()
    return {"default": _scope(None), "scopes": listed}


@router.get("/overview")
@answered
def overview(scope: Optional[str] = None) -> Any:
    return _service().overview(_scope(scope))


@router.get("/memories")
@answered
def memories(scope: Optional[str] = None, q: Optional[str] = None, mode: str = "keyword",
             state: str = "active", tier: Optional[str] = None, kind: Optional[str] = None,
             tag: Optional[str] = None, sort: Optional[str] = None, offset: int = 0, limit: int = LIMIT) -> Any:
    query = q[:TEXT_MOST] if q and q.strip() else None
    return _service().browse(_scope(scope), query=query, mode=mode, state=state, tier=tier or None,
                             kind=kind or None, tags=[tag] if tag else (),
                             sort=sort or ("relevance" if query else "newest"),
                             offset=max(offset, 0), limit=min(max(limit, 1), LIMIT))


@router.get("/memory")
@answered
def memory(id: str = "", scope: Optional[str] = None) -> Any:  # the query's name
    return _service().memory_page(_scope(scope), memory_id(id))


@router.get("/inspect")
@answered
def inspect(prompt: str = "", scope: Optional[str] = None, budget: Optional[int] = None,
            session_id: Optional[str] = None) -> Any:
    prompt = _prompt(prompt)
    return _service().inspect_recall(_scope(scope), prompt, budget_tokens=budget, session_id=session_id or None)


@router.get("/why_not")
@answered
def why_not(prompt: str = "", id: str = "", scope: Optional[str] = None,
            budget: Optional[int] = None) -> Any:
    prompt = _prompt(prompt)
    return _service().why_not(_scope(scope), prompt, memory_id(id), budget_tokens=budget)


@router.get("/page")
def page(path: str = "/") -> Any:
    """A page of `hermes-cmms ui` as the tab shows it: {"title", "html"}, the same view and template
    rendered read-only without its head (`path` is its address, as its own links write it); an
    error is the dashboard's error page with {"detail": sentence} and the one map's status."""
    from ..ui._fragment import failed, fragment

    try:
        return fragment(path, _service(), _scope(None), _names)
    except CmmsError as exc:
        return JSONResponse(failed(path, exc), status_code=status(exc))


STYLE = Path(__file__).resolve().parents[1] / "ui" / "static" / "app.css"


@router.get("/style")
def style() -> Any:
    """The dashboard's stylesheet, each rule scoped to class `cmms`, for the tab to put in a <style>
    (an answer behind the session token, as a <link> could not send it)."""
    return {"css": STYLE.read_text(encoding="utf-8")}
