"""The pages that read: each parses its query, calls one facade verb as a method, renders one
template with the answer (its ids shown dashed, as at every door)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Optional
from urllib.parse import urlencode

from starlette.requests import Request

from ..common.answers import Event
from ..common.errors import InvalidInput
from ..common.ids import shown_id
from . import _graph
from ._request import PAGE, number, owner, scope_names, scope_of, service
from .web import answer, memory_id


def overview(request: Request):
    scope = scope_of(request) if request.query_params.get("scope") or _fixed(request) else None
    return _page(request, "overview.html", scope, overview=service(request).overview(scope))


def memories(request: Request):
    scope, q = scope_of(request), request.query_params
    filters = {name: q.get(name) or None for name in ("tier", "kind", "source", "query")}
    filters.update(state=q.get("state") or "active", mode=q.get("mode") or "keyword",
                   sort=q.get("sort") or ("relevance" if q.get("query") else "newest"),
                   tags=tuple(t.strip() for t in q.get("tags", "").split(",") if t.strip()),
                   since=_day(q.get("since"), "since"), until=_day(q.get("until"), "until", end=True))
    offset = number(q.get("offset"), "offset", 0)
    found = service(request).browse(scope, **filters, offset=offset, limit=PAGE)
    return _page(request, "memories.html", scope, found=found, q=q, sort=filters["sort"], offset=offset, limit=PAGE)


def memory(request: Request):
    scope = scope_of(request)
    page = service(request).memory_page(scope, memory_id(request.path_params["memory_id"]))
    return _page(request, "memory.html", scope, page=page)


def inspect(request: Request):
    scope, q = scope_of(request), request.query_params
    prompt, budget = q.get("prompt", ""), number(q.get("budget"), "budget", 0, 100_000) or None
    rerun = None
    if not prompt.strip() and q.get("from_memory", "").strip():  # a past turn run again now: what its user said
        page = service(request).memory_page(scope, memory_id(q["from_memory"]))
        prompt, rerun = page["memory"].get("content") or "", page["provenance"]
    leave_out = [memory_id(i) for i in q.getlist("leave_out") if i.strip()]  # the turn's own messages
    asked = memory_id(q["why_not"]) if q.get("why_not", "").strip() else None
    answer = (service(request).inspect_recall(scope, prompt, budget_tokens=budget, why_not=asked, leave_out=leave_out)
              if prompt.strip() else None)
    why = answer.pop("why_not", None) if answer else None
    return _page(request, "inspect.html", scope, prompt=prompt, budget=budget, answer=answer, why=why,
                 rerun=rerun, leave_out=leave_out)


def sessions(request: Request):
    scope = scope_of(request)
    offset = number(request.query_params.get("offset"), "offset", 0)
    listed = service(request).sessions(scope, offset=offset, limit=PAGE)
    return _page(request, "sessions.html", scope, sessions=listed, offset=offset, limit=PAGE)


def session(request: Request):
    scope = scope_of(request)
    timeline = service(request).session_timeline(scope, request.path_params["session_id"])
    return _page(request, "session.html", scope, timeline=timeline)


def beliefs(request: Request):
    scope, q = scope_of(request), request.query_params
    filters = {"text": q.get("text") or None, "state": q.get("state") or None}
    offset = number(q.get("offset"), "offset", 0)
    found = service(request).get_belief(scope, **filters, limit=PAGE, offset=offset)
    return _page(request, "beliefs.html", scope, found=found, q=q, offset=offset, limit=PAGE)


def graph(request: Request):
    scope, q = scope_of(request), request.query_params
    modes = {"query": q.get("q") or None, "entity_id": _entity(q.get("entity")),
             "source_id": _entity(q.get("from")), "target_id": _entity(q.get("to"))}
    if not any(modes.values()):  # nowhere asked yet: start from what the latest facts name
        facts = service(request).browse(scope, kind="fact", limit=START_FACTS)["items"]
        return _page(request, "graph.html", scope, answer=None, drawing=None, q=q, starts=_named(facts))
    found = service(request).graph_search(scope, **modes)
    return _page(request, "graph.html", scope, answer=found, drawing=_graph.draw(found), q=q, starts=[])


START_FACTS = 30  # the latest facts whose subjects and objects the graph page offers as a start


def _named(facts: list[dict]) -> list[str]:
    """The names the facts' subjects and objects give, most often named first (at most 20)."""
    counts: dict[str, int] = {}
    for fact in facts:
        for name in (fact.get("subject"), fact.get("object")):
            if isinstance(name, str) and name.strip():
                counts[name.strip()] = counts.get(name.strip(), 0) + 1
    return sorted(counts, key=lambda name: -counts[name])[:20]


def audit(request: Request):
    scope, q = scope_of(request), request.query_params
    offset = number(q.get("offset"), "offset", 0)
    filters = {"action": q.get("action") or None, "memory_id": memory_id(q["memory"]) if q.get("memory") else None}
    extra = {"door": q.get("door") or None, "since": _day(q.get("since"), "since"),
             "until": _day(q.get("until"), "until", end=True)}
    events = service(request).audit_log(scope, **filters, **{k: v for k, v in extra.items() if v is not None},
                                        limit=PAGE, offset=offset)
    return _page(request, "audit.html", scope, events=[_event(e) for e in events], q=q, offset=offset, limit=PAGE)


def _page(request: Request, template: str, scope: Optional[str], **values):
    """`template` with the values a handler gives it (the verbs' answers and what it drew from
    them), their ids shown dashed as at every door."""
    here = urlencode([(k, v) for k, v in request.query_params.multi_items() if k not in ("offset", "forgotten", "done")])
    shown = {name: answer(value) for name, value in values.items()}
    return request.app.state.pages(template, scope=scope, request=request, here=here, owner=owner(request),
                                   scopes=scope_names(request), **shown)


def _fixed(request: Request) -> bool:
    return request.app.state.door.scope is not None


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


def forget_preview(request: Request):
    """What forgetting the memories `id` would take with it, changing nothing; the form to do it."""
    scope = scope_of(request)
    ids = [memory_id(i) for i in request.query_params.getlist("id") if i.strip()]
    if not ids:
        raise InvalidInput("Pick at least one memory to forget.")
    preview = service(request).forget_preview(scope, ids)
    return _page(request, "forget.html", scope, preview=preview, ids=[shown_id(i) for i in ids])
