"""The dashboard as an ASGI app: its routes, its gate, its static files, its error pages."""
from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..common.errors import CmmsError
from ..common.scopes import local_scope
from . import _pages, _steer
from ._guard import Door, Guard
from ._render import HERE, Pages
from ._request import error_page
from .web import ScopeList

READ = [(path, _pages.served(view)) for path, view in _pages.VIEWS]
CHANGE = [("/memory/{memory_id}/correct", _steer.correct), ("/memory/{memory_id}/pin", _steer.pin),
          ("/memory/{memory_id}/tag", _steer.tag), ("/forget", _steer.forget),
          ("/scope/forget", _steer.forget_scope), ("/beliefs/resolve", _steer.resolve)]


def make_app(service, door: Door) -> Starlette:
    """The dashboard over `service` (a MemoryService), answering as `door` says."""
    routes = [*(Route(path, endpoint, methods=["GET", "HEAD"]) for path, endpoint in READ),
              *(Route(path, endpoint, methods=["POST"]) for path, endpoint in CHANGE),
              Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    app = Starlette(routes=routes, exception_handlers={CmmsError: error_page})
    app.state.service, app.state.door, app.state.pages = service, door, Pages(door)
    app.state.owner = local_scope(service.settings.home)  # the provider's rule: every page's default
    app.state.scope_list = ScopeList()
    app.add_middleware(Guard, door=door)
    return app
