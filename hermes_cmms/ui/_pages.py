"""The pages that read, one view each for both web doors (`hermes-cmms ui` and the Hermes
Dashboard's Memory tab): a view parses what was asked, calls one facade verb as a method and
names its template and values; `served` makes one a page handler of this dashboard, and
`ui/_fragment.py` renders one for the tab (its ids shown dashed, as at every door)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional
from urllib.parse import urlencode

from starlette.requests import Request

from ..common.answers import Event
from ..common.errors import InvalidInput
from ..common.ids import shown_id
from . import _graph
from ._request import PAGE, chosen, door, number, owner, scope_names
from ._request import service as service_of
from .web import answer, memory_id

if TYPE_CHECKING:  # the verbs a view calls, checked by a type checker (and by tests/ui/test_web_doors.py)
    from ..service import MemoryService


@dataclass(frozen=True)
class Asked:
    """A page as a door asks it: its query (a Starlette QueryParams), its path's parts, the
    service, the home owner's scope, the one scope the door shows (--scope) if any, and the
    scope picker's list (a callable: counting the scopes costs a scan)."""

    query: Any
    params: Mapping[str, str]
    service: MemoryService
    owner: str
    fixed: Optional[str] = None
    names: Callable[[], list[str]] = field(default=list)


@dataclass(frozen=True)
class View:
    """What a view answers: the template, the scope shown (None: every scope) and its values."""

    template: str
    scope: Optional[str]
    values: dict


def service(ask: Asked) -> MemoryService:
    """The service a page is asked of: a view calls its verbs as methods."""
    return ask.service


def scope_of(ask: Asked) -> str:
    """The scope the query names, the one --scope fixed, or else the home owner's."""
    return chosen(ask.fixed, ask.owner, ask.query.get("scope"))


def shown(view: View, ask: Asked) -> dict:
    """What a view's template is given at both doors: its values with ids dashed, the scope and
    the owner's, the picker's scopes and `here`, the query without its paging and notices."""
    here = urlencode([(k, v) for k, v in ask.query.multi_items() if k not in ("offset", "forgotten", "done")])
    values = {name: answer(value) for name, value in view.values.items()}
    return dict(values, scope=view.scope, here=here, owner=ask.owner, scopes=ask.names())


def asked(request: Request) -> Asked:
    """A request to this dashboard as a view takes it."""
    return Asked(request.query_params, request.path_params, service_of(request), owner(request),
                 door(request).scope, lambda: scope_names(request))


def served(view: Callable[[Asked], View]) -> Callable[[Request], Any]:
    """`view` as a page handler of this dashboard: the request asked, the template rendered."""
    @wraps(view)
    def handler(request: Request):
        ask = asked(request)
        page = view(ask)
        return request.app.state.pages(page.template, request=request, **shown(page, ask))
    return handler


def overview(ask: Asked) -> View:
    scope = scope_of(ask) if ask.query.get("scope") or ask.fixed else None
    return View("overview.html", scope, dict(overview=service(ask).overview(scope)))


def memories(ask: Asked) -> View:
    scope, q = scope_of(ask), ask.query
    filters = {name: q.get(name) or None for name in ("tier", "kind", "source", "query")}
    filters.update(state=q.get("state") or "active", mode=q.get("mode") or "keyword",
                   sort=q.get("sort") or ("relevance" if q.get("query") else "newest"),
                   tags=tuple(t.strip() for t in q.get("tags", "").split(",") if t.strip()),
                   since=_day(q.get("since"), "since"), until=_day(q.get("until"), "until", end=True))
    offset = number(q.get("offset"), "offset", 0)
    found = service(ask).browse(scope, **filters, offset=offset, limit=PAGE)
    return View("memories.html", scope, dict(found=found, q=q, sort=filters["sort"], offset=offset, limit=PAGE))


def memory(ask: Asked) -> View:
    scope = scope_of(ask)
    page = service(ask).memory_page(scope, memory_id(ask.params["memory_id"]))
    return View("memory.html", scope, dict(page=page))


def inspect(ask: Asked) -> View:
    scope, q = scope_of(ask), ask.query
    prompt, budget = q.get("prompt", ""), number(q.get("budget"), "budget", 0, 100_000) or None
    rerun = None
    if not prompt.strip() and q.get("from_memory", "").strip():  # a past turn run again now: what its user said
        page = service(ask).memory_page(scope, memory_id(q["from_memory"]))
        prompt, rerun = page["memory"].get("content") or "", page["provenance"]
    leave_out = [memory_id(i) for i in q.getlist("leave_out") if i.strip()]  # the turn's own messages
    picked = memory_id(q["why_not"]) if q.get("why_not", "").strip() else None
    answer = (service(ask).inspect_recall(scope, prompt, budget_tokens=budget, why_not=picked, leave_out=leave_out)
              if prompt.strip() else None)
    why = answer.pop("why_not", None) if answer else None
    return View("inspect.html", scope, dict(prompt=prompt, budget=budget, answer=answer, why=why,
                                            rerun=rerun, leave_out=leave_out))


def sessions(ask: Asked) -> View:
    scope = scope_of(ask)
    offset = number(ask.query.get("offset"), "offset", 0)
    listed = service(ask).sessions(scope, offset=offset, limit=PAGE)
    return View("sessions.html", scope, dict(sessions=listed, offset=offset, limit=PAGE))


def session(ask: Asked) -> View:
    scope = scope_of(ask)
    timeline = service(ask).session_timeline(scope, ask.params["session_id"])
    return View("session.html", scope, dict(timeline=timeline))


def beliefs(ask: Asked) -> View:
    scope, q = scope_of(ask), ask.query
    filters = {"text": q.get("text") or None, "state": q.get("state") or None}
    offset = number(q.get("offset"), "offset", 0)
    found = service(ask).get_belief(scope, **filters, limit=PAGE, offset=offset)
    return View("beliefs.html", scope, dict(found=found, q=q, offset=offset, limit=PAGE))


def graph(ask: Asked) -> View:
    scope, q = scope_of(ask), ask.query
    modes = {"query": q.get("q") or None, "entity_id": _entity(q.get("entity")),
             "source_id": _entity(q.get("from")), "target_id": _entity(q.get("to"))}
    if not any(modes.values()):  # nowhere asked yet: start from what the latest facts name
        facts = service(ask).browse(scope, kind="fact", limit=START_FACTS)["items"]
        return View("graph.html", scope, dict(answer=None, drawing=None, q=q, starts=_named(facts)))
    found = service(ask).graph_search(scope, **modes)
    return View("graph.html", scope, dict(answer=found, drawing=_graph.draw(found), q=q, starts=[]))


START_FACTS = 30  # the latest facts whose subjects and objects the graph page offers as a start


def _named(facts: list[dict]) -> list[str]:
    """The names the facts' subjects and objects give, most often named first (at most 20)."""
    counts: dict[str, int] = {}
    for fact in facts:
        for name in (fact.get("subject"), fact.get("object")):
            if isinstance(name, str) and name.strip():
                counts[name.strip()] = counts.get(name.strip(), 0) + 1
    return sorted(counts, key=lambda name: -counts[name])[:20]


def audit(ask: Asked) -> View:
    scope, q = scope_of(ask), ask.query
    offset = number(q.get("offset"), "offset", 0)
    filters = {"action": q.get("action") or None, "memory_id": memory_id(q["memory"]) if q.get("memory") else None}
    extra = {"door": q.get("door") or None, "since": _day(q.get("since"), "since"),
             "until": _day(q.get("until"), "until", end=True)}
    events = service(ask).audit_log(scope, **filters, **{k: v for k, v in extra.items() if v is not None},
                                        limit=PAGE, offset=offset)
    return View("audit.html", scope, dict(events=[_event(e) for e in events], q=q, offset=offset, limit=PAGE))


def _entity(text: Optional[str]) -> Optional[str]:
    return memory_id(text) if text and text.strip() else None


def _day(text: Optional[str], name: str, end: bool = False) -> Optional[float]:
    """A date (YYYY-MM-DD, UTC) as a Unix time: its start, or with `end` its end."""
    if not text:
        return None
    try:
        day = datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise InvalidInput(f"{name} must be a date as YYYY-MM-DD, not {text[:40]!r}.") from None
    return day.timestamp() + (86400 - 0.001 if end else 0)


def _event(event: Event) -> dict:
    """An audit event as the page shows it: its detail a mapping (the page shows it as key value
    chips, its ids as links), or the text it was stored as."""
    detail = event.detail if isinstance(event.detail, dict) else {"detail": json.dumps(event.detail, ensure_ascii=False)}
    return {"at": event.at, "action": event.action, "actor": event.actor, "scope": event.scope,
            "memory_id": shown_id(event.memory_id), "detail": detail}


def forget_preview(ask: Asked) -> View:
    """What forgetting the memories `id` would take with it, changing nothing; the form to do it."""
    scope = scope_of(ask)
    ids = [memory_id(i) for i in ask.query.getlist("id") if i.strip()]
    if not ids:
        raise InvalidInput("Pick at least one memory to forget.")
    preview = service(ask).forget_preview(scope, ids)
    return View("forget.html", scope, dict(preview=preview, ids=[shown_id(i) for i in ids]))


# each page's address (Starlette's path syntax) and view: this dashboard's routes, the tab's pages
VIEWS: list[tuple[str, Callable[[Asked], View]]] = [
    ("/", overview), ("/memories", memories), ("/memory/{memory_id}", memory), ("/inspect", inspect),
    ("/sessions", sessions), ("/session/{session_id:path}", session), ("/beliefs", beliefs), ("/graph", graph),
    ("/audit", audit), ("/forget", forget_preview)]
