"""The changes (Steer), answered only by a dashboard started with --allow-changes (the gate
refuses them otherwise): each checks the start's CSRF token, calls one facade verb (a method of
the service) as actor "ui", then goes to the page that shows the result."""
from __future__ import annotations

from functools import wraps
from typing import Callable
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..common.errors import InvalidInput
from ..common.ids import shown_id
from ._guard import csrf_ok
from ._request import door, scope_of, service
from .web import memory_id

ACTOR = "ui"


async def changed(request: Request):
    """The form of a change, once its CSRF token is the start's; else None."""
    form = await request.form()
    if not csrf_ok(door(request), form.get("csrf"), request.headers.get("x-csrf-token")):
        return None
    return form


def refused_csrf() -> Response:
    return PlainTextResponse("This change lacks the page's CSRF token: reload the page and try again.\n",
                             status_code=403)


def a_change(handler: Callable[[Request, FormData], Response]):
    """The route of a change: `handler(request, form)` once the form's CSRF token is the start's."""
    @wraps(handler)
    async def answer(request: Request) -> Response:
        form = await changed(request)
        return refused_csrf() if form is None else handler(request, form)
    return answer


def go(request: Request, url: str) -> Response:
    """To `url`: htmx is told to go there (HX-Redirect), a plain form is redirected."""
    if request.headers.get("hx-request"):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def _memory_url(scope: str, mid: str, done: str) -> str:
    """A memory's page, saying what was just `done` to it (a word the page knows: macros.DONE)."""
    return f"/memory/{shown_id(mid)}?scope={quote(scope, safe='')}&done={done}"


def _memory_of(request: Request, form: FormData) -> tuple[str, str]:
    """The scope the form names and the memory the path names."""
    return scope_of(request, form.get("scope")), memory_id(request.path_params["memory_id"])


@a_change
def correct(request: Request, form: FormData) -> Response:
    scope, mid = _memory_of(request, form)
    new_id = service(request).correct(scope, mid, form.get("text", ""), actor=ACTOR)
    return go(request, _memory_url(scope, new_id, "corrected"))


@a_change
def pin(request: Request, form: FormData) -> Response:
    scope, mid = _memory_of(request, form)
    pinned = form.get("pinned", "1") == "1"
    service(request).pin(scope, mid, pinned, actor=ACTOR)
    return go(request, _memory_url(scope, mid, "pinned" if pinned else "unpinned"))


@a_change
def tag(request: Request, form: FormData) -> Response:
    scope, mid = _memory_of(request, form)
    words = form.get("tags", "").split()
    add = [w[1:] if w.startswith("+") else w for w in words if not w.startswith("-")]
    remove = [w[1:] for w in words if w.startswith("-")]
    service(request).tag(scope, mid, add=add, remove=remove, actor=ACTOR)
    return go(request, _memory_url(scope, mid, "tagged"))


@a_change
def forget(request: Request, form: FormData) -> Response:
    """Forget the memories the preview listed (form fields `id`), after the preview was seen."""
    scope = scope_of(request, form.get("scope"))
    ids = [memory_id(i) for i in form.getlist("id") if i.strip()]
    if not ids:
        raise InvalidInput("Pick at least one memory to forget.")
    service(request).forget_many(scope, ids, actor=ACTOR)
    return go(request, f"/memories?scope={quote(scope, safe='')}&done=forgotten&forgotten={len(ids)}")


@a_change
def forget_scope(request: Request, form: FormData) -> Response:
    """Forget a whole scope, once the scope's name was typed in full."""
    scope = scope_of(request, form.get("scope"))
    if form.get("typed", "") != scope:
        raise InvalidInput(f"Type the scope's name, {scope!r}, exactly to forget all of it.")
    service(request).forget_all(scope, actor=ACTOR)
    return go(request, "/?done=scope-forgotten")


@a_change
def resolve(request: Request, form: FormData) -> Response:
    scope = scope_of(request, form.get("scope"))
    extra = {"merged_text": form["merged_text"]} if form.get("merged_text") else {}
    pair = memory_id(form.get("belief_a", "")), memory_id(form.get("belief_b", ""))
    service(request).resolve_conflict(scope, *pair, form.get("strategy", ""), actor=ACTOR, **extra)
    return go(request, f"/beliefs?scope={quote(scope, safe='')}&done=resolved")
