"""The Hermes Dashboard's cmms tab, its backend: read-only JSON routes over MemoryService verbs.

Hermes' web server imports `dashboard/plugin_api.py` of a plugin (the shim `install-hermes-plugin`
writes, which imports `router` from here) and mounts `router` at /api/plugins/cmms/. Every route
calls one facade verb with the scope the request names (the profile owner's, `local:<profile>`,
when it names none), so a memory id of another scope answers 404 like a missing one. Nothing
here changes a memory: steering stays in `hermes-cmms ui --allow-changes`.

Importing this module loads FastAPI only; the engine is opened at the first request, once per
Hermes home (the active profile's, as Hermes resolves it for the request).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Optional

from fastapi import APIRouter
from fastapi.responses import JSONResponse

router = APIRouter()

LIMIT = 50  # memories a page, at most
TEXT_MOST = 4000  # characters of a prompt or query
_services: dict[str, Any] = {}  # the MemoryService of each Hermes home, opened at its first request
_owners: dict[str, str] = {}  # the profile owner's scope in each home
_lock = threading.Lock()


def _home() -> Path:
    """The active profile's Hermes home, as Hermes' own code resolves it for this request."""
    try:
        from hermes_constants import get_hermes_home
    except ImportError:  # outside Hermes (a test, a bare check): $HERMES_HOME or ~/.hermes
        from ..common.config import Settings

        return Settings.load().home
    return Path(get_hermes_home())


def _service(home: Path):
    """The home's MemoryService, opened once (no scheduler, no indexer thread: it only reads)."""
    key = str(home.expanduser().resolve())
    with _lock:
        if key not in _services:
            from ..service import MemoryService, door_settings

            _services[key] = MemoryService(door_settings(home, None), scheduler=False, start_indexer=False)
        return _services[key]


def close_all() -> None:
    """Close every service opened here (for tests and a clean shutdown)."""
    with _lock:
        services = list(_services.values())
        _services.clear()
    for service in services:
        service.close(drain_timeout=5.0)


def _answer(verb: str, *args, **kwargs) -> Any:
    """A verb's answer (ids shown dashed, as at every door), or its error as one JSON sentence."""
    from ..common.errors import CmmsError, StoreUnavailable, UnknownMemory
    from ..common.ids import public_ids

    try:
        return public_ids(getattr(_service(_home()), verb)(*args, **kwargs))
    except UnknownMemory as exc:
        return JSONResponse({"detail": _sentence(exc)}, status_code=404)
    except StoreUnavailable as exc:
        return JSONResponse({"detail": _sentence(exc)}, status_code=503)
    except CmmsError as exc:
        return JSONResponse({"detail": _sentence(exc)}, status_code=400)


def _sentence(exc: Exception) -> str:
    return str(exc.args[0]) if exc.args else type(exc).__name__


def _scope(scope: Optional[str]) -> str:
    """The scope a request names, or the profile owner's (what the provider gives the CLI user),
    worked out once per home: local_scope sets $HERMES_HOME for a moment, which a server's
    concurrent requests should not see more than once."""
    if scope:
        return scope[:TEXT_MOST]
    from ..common.scopes import local_scope

    home = _home()
    with _lock:
        key = str(home.expanduser().resolve())
        if key not in _owners:
            _owners[key] = local_scope(home)
        return _owners[key]


def _no_prompt() -> JSONResponse:
    return JSONResponse({"detail": "Give a prompt to inspect."}, status_code=400)


def _id(value: Optional[str]) -> str:
    from ..common.ids import stored_id

    return stored_id((value or "").strip())


@router.get("/scopes")
def scopes() -> Any:
    """The store's scopes with their counts, and the one shown first (the profile owner's)."""
    listed = _answer("scopes")
    return listed if isinstance(listed, JSONResponse) else {"default": _scope(None), "scopes": listed}


@router.get("/overview")
def overview(scope: Optional[str] = None) -> Any:
    return _answer("overview", _scope(scope))


@router.get("/memories")
def memories(scope: Optional[str] = None, q: Optional[str] = None, mode: str = "keyword",
             state: str = "active", tier: Optional[str] = None, kind: Optional[str] = None,
             tag: Optional[str] = None, sort: Optional[str] = None, offset: int = 0, limit: int = LIMIT) -> Any:
    query = q[:TEXT_MOST] if q and q.strip() else None
    return _answer("browse", _scope(scope), query=query, mode=mode, state=state, tier=tier or None,
                   kind=kind or None, tags=[tag] if tag else (), sort=sort or ("relevance" if query else "newest"),
                   offset=max(offset, 0), limit=min(max(limit, 1), LIMIT))


@router.get("/memory")
def memory(id: str = "", scope: Optional[str] = None) -> Any:  # the query's name
    return _answer("memory_page", _scope(scope), _id(id))


@router.get("/inspect")
def inspect(prompt: str = "", scope: Optional[str] = None, budget: Optional[int] = None,
            session_id: Optional[str] = None) -> Any:
    if not prompt.strip():
        return _no_prompt()
    return _answer("inspect_recall", _scope(scope), prompt[:TEXT_MOST], budget_tokens=budget, session_id=session_id or None)


@router.get("/why_not")
def why_not(prompt: str = "", id: str = "", scope: Optional[str] = None,
            budget: Optional[int] = None) -> Any:
    if not prompt.strip():
        return _no_prompt()
    return _answer("why_not", _scope(scope), prompt[:TEXT_MOST], _id(id), budget_tokens=budget)
