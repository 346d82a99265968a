"""The two web doors, `hermes-cmms ui` and the Hermes Dashboard's Memory tab (its router, in
hermes_cmms/hermes_plugin/dashboard_api.py), call the facade's verbs as methods of the service:
every verb they call is one MemoryService has (a renamed verb fails here, not at a user's click),
none is called by a name string, and both answer an engine error through the one map of
hermes_cmms/ui/web.py. Then the tab's routes, each walked once over a real store."""
from __future__ import annotations

import ast
import re
import inspect
import uuid
from pathlib import Path

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.errors import (CmmsError, InvalidInput, LlmUnavailable, NoVectorIndex, StoreUnavailable,
                                       UnknownEntity, UnknownMemory, VectorsUnavailable)
from hermes_cmms.common.ids import shown_id
from hermes_cmms.ui import web
from hermes_cmms.ui.app import CHANGE, READ

pytestmark = pytest.mark.one_backend  # the doors' own behaviour; the store tests cover both backends

PACKAGE = Path(web.__file__).resolve().parents[1]
SOURCES = [*sorted((PACKAGE / "ui").glob("*.py")), PACKAGE / "hermes_plugin" / "dashboard_api.py"]
ACCESSORS = ("service", "_service")  # ui/_pages.service(ask), dashboard_api._service()
RENDERERS = ("fragment",)  # the tab's page route hands the service to ui/_fragment.fragment: the views of ui/_pages


def verbs_called(source: str) -> set[str]:
    """The verbs a module calls as `service(request).verb(...)` or `_service().verb(...)`; an
    AssertionError where it reaches the service any other way (kept in a name, handed on, given
    to getattr), which this check could not see through."""
    tree = ast.parse(source)
    above = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    verbs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ACCESSORS:
            attribute = above[node]
            if isinstance(attribute, ast.Call) and isinstance(attribute.func, ast.Name) and attribute.func.id in RENDERERS:
                verbs.add(f"<{attribute.func.id}>")  # the views' verbs, seen in ui/_pages.py
                continue
            assert isinstance(attribute, ast.Attribute) and isinstance(above[attribute], ast.Call) \
                and above[attribute].func is attribute, f"line {node.lineno}: the service is used but to call a verb"
            verbs.add(attribute.attr)
    return verbs


def _lacking(verbs: set[str]) -> list[str]:
    return sorted(v for v in verbs if v.startswith("_") or v.startswith("<") or not callable(inspect.getattr_static(MemoryService, v, None)))


@pytest.mark.quick
def test_every_verb_the_web_doors_call_is_a_method_of_the_service():
    called = {path.name: verbs_called(path.read_text()) for path in SOURCES}
    called["dashboard_api.py"].discard("<fragment>")  # the tab's pages: the views of ui/_pages, checked there
    assert not _lacking(set().union(*called.values())), "renamed or removed verbs a web door still calls"
    assert called["dashboard_api.py"] == {"scopes", "overview", "browse", "memory_page", "inspect_recall", "why_not"}
    assert called["_pages.py"] >= {"overview", "browse", "memory_page", "inspect_recall", "sessions", "session_timeline",
                                   "get_belief", "graph_search", "audit_log", "forget_preview"}


def test_every_route_of_both_doors_calls_a_verb_the_check_sees():
    """So the check above misses no handler: each route's own code calls a verb the way it reads."""
    from hermes_cmms.hermes_plugin.dashboard_api import router

    from hermes_cmms.ui._fragment import ROUTES

    handlers = [endpoint for _path, endpoint in READ + CHANGE] + [route.endpoint for route in router.routes
                                                                   if route.path != "/style"]  # a file, no verb
    for handler in handlers:
        assert verbs_called(inspect.getsource(inspect.unwrap(handler))), handler.__qualname__
    assert [view for _pattern, view in ROUTES] == [inspect.unwrap(endpoint) for _path, endpoint in READ], \
        "the tab's page route serves the views this dashboard's routes serve, and no other"


def test_the_check_catches_a_verb_the_service_lacks_and_a_verb_by_name():
    renamed = "def page(request):\n    return service(request).memory_pages('local:default', 'x')\n"
    assert _lacking(verbs_called(renamed)) == ["memory_pages"]
    for hidden in ("def page(request):\n    return getattr(service(request), 'overview')(None)\n",
                   "def page(request):\n    s = service(request)\n    return s.overview(None)\n"):
        with pytest.raises(AssertionError, match="line 2: the service is used but to call a verb"):
            verbs_called(hidden)


def test_only_the_request_helper_reads_the_dashboards_service():
    readers = [path.name for path in SOURCES if "state.service" in path.read_text()]
    assert readers == ["_request.py", "app.py"]  # app.py sets it, _request.service reads it


@pytest.mark.parametrize("error, status", [
    (UnknownMemory("No memory 'x' in this scope."), 404), (UnknownEntity("No entity 'x'."), 404),
    (web.NotHere("No scope 'x' here."), 404), (StoreUnavailable("The store is locked."), 503),
    (NoVectorIndex("No vector index."), 503), (InvalidInput("limit must be 1 to 500."), 400),
    (LlmUnavailable("No LLM."), 400), (VectorsUnavailable("Chroma did not answer."), 400), (CmmsError(), 400)])
def test_one_error_map_for_both_doors(error, status):
    assert web.status(error) == status
    answer = web.error_json(error)
    assert answer.status_code == status
    assert answer.body == (b'{"detail":"%s"}' % (error.args[0].encode() if error.args else b"CmmsError"))


# -- the tab's routes over a real store, without Hermes ------------------------------------------


@pytest.fixture
def tab(kw_home):
    """A client of the tab's router mounted as Hermes mounts it, over the store of $HERMES_HOME,
    with a memory in the owner's scope and one in another: (client, {name: shown id})."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from hermes_cmms.hermes_plugin.dashboard_api import close_all, router

    service = MemoryService(Settings.load(kw_home), scheduler=False)
    try:
        ids = {"own": service.remember("local:default", "Alice drinks green tea every morning"),
               "other": service.remember("user:telegram:9", "the telegram user's kiwi password hint")}
    finally:
        service.close()
    app = FastAPI()
    app.include_router(router, prefix="/api/plugins/cmms")
    try:
        with TestClient(app) as client:
            yield client, {name: shown_id(value) for name, value in ids.items()}
    finally:
        close_all()


def test_each_route_of_the_tab_answers_over_a_real_store(tab):
    client, ids = tab

    def get(path, status=200, **params):
        answer = client.get(f"/api/plugins/cmms{path}", params=params)
        assert answer.status_code == status, (path, answer.text)
        return answer.json()

    assert get("/scopes")["default"] == "local:default"
    assert [w["id"] for w in get("/overview")["latest_writes"]] == [ids["own"]]
    assert [m["id"] for m in get("/memories", q="tea")["items"]] == [ids["own"]]  # dashed, as at every door
    assert get("/memory", id=ids["own"])["memory"]["id"] == ids["own"]
    assert [line["memory_id"] for line in get("/inspect", prompt="green tea")["lines"]] == [ids["own"]]
    assert get("/why_not", prompt="green tea", id=ids["own"])["position"] == 1
    assert get("/memory", 404, id=ids["other"])["detail"].endswith(" in this scope.")
    assert get("/memory", 404, id=str(uuid.uuid4()))["detail"].startswith("No memory ")
    assert get("/inspect", 400, prompt=" ")["detail"] == "Give a prompt to inspect."
    assert get("/why_not", 400, id=ids["own"])["detail"] == "Give a prompt to inspect."
    assert "<nope>" in get("/memories", 400, state="<nope>")["detail"]


HOSTILE = "Bob pays <script>alert(1)</script><img src=x onerror=alert(2)> \u202eevil\u202c now"


def test_the_tabs_page_route_renders_the_dashboards_own_page_read_only(tab, kw_home):
    """/page: the standalone dashboard's view and template (the same table, ids, badges), read-only
    (no change form, no CSRF token), the owner's scope by default, stored text escaped and marked."""
    client, ids = tab
    service = MemoryService(Settings.load(kw_home), scheduler=False)
    try:
        hostile = shown_id(service.remember("local:default", HOSTILE, source="cli:<b>x</b>"))
    finally:
        service.close()

    def page(path, status=200):
        answer = client.get("/api/plugins/cmms/page", params={"path": path})
        assert answer.status_code == status, (path, answer.text)
        return answer.json()

    listed = page("/memories")
    assert listed["title"] == "Memories" and listed["html"].startswith('<div class="cmms cmms-page">')
    html = listed["html"]
    assert f'href="/memory/{ids["own"]}?scope=local%3Adefault"' in html and ids["other"] not in html
    assert '<span class="badge state-active">active</span>' in html and '<table class="memories">' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; \u27e6U+202E\u27e7evil" in html
    assert "<script" not in html and "<img" not in html and "\u202e" not in html
    assert 'method="post"' not in html and "csrf" not in html.lower() and ">read-only<" in html
    assert "<!doctype" not in html.lower() and "<head>" not in html and "<html" not in html  # no head
    shown = page(f"/memory/{hostile}")
    assert shown["title"] == f"Memory {hostile[:8]}" and "cli:&lt;b&gt;x&lt;/b&gt;" in shown["html"]
    other = page("/memories?scope=user%3Atelegram%3A9&query=kiwi")["html"]
    assert ids["other"] in other and ids["own"] not in other
    assert page(f"/memory/{ids['other']}", 404)["detail"].endswith(" in this scope.")
    nowhere = page("/nowhere", 404)  # the dashboard's error page, with its header: a way on
    assert nowhere["detail"] == "No page '/nowhere' in the Memory tab." and nowhere["title"] == "Not shown"
    assert '<p class="error">No page &#39;/nowhere&#39; in the Memory tab.</p>' in nowhere["html"]
    assert '<a href="/memories">Memories</a>' in nowhere["html"]
    assert page("//evil.example/x", 400)["detail"].startswith("A page's address starts with one '/'")
    assert page("/memories?offset=-1", 400)["detail"] == "offset must be a whole number from 0 to 1,000,000,000, not '-1'."
    assert client.get("/api/plugins/cmms/style").json()["css"] == (PACKAGE / "ui" / "static" / "app.css").read_text()


@pytest.mark.quick
def test_every_rule_of_the_stylesheet_is_scoped_to_the_cmms_class():
    """app.css styles the Hermes Dashboard's tab too: no rule may reach outside class cmms."""

    css = re.sub(r"/\*.*?\*/", "", (PACKAGE / "ui" / "static" / "app.css").read_text(), flags=re.S)
    css = re.sub(r"@media[^{]*\{", "", css)  # a media block's rules are checked as the others
    rules = re.findall(r"([^{}]+)\{[^{}]*\}", css)
    selectors = [s.strip() for rule in rules for s in re.split(r",(?![^()]*\))", rule)]  # not a comma in :not(…)
    assert len(selectors) > 100
    assert [s for s in selectors if not (s == ".cmms" or s.startswith(".cmms "))] == []


def test_the_tabs_scope_picker_is_read_again_after_its_interval(tab, kw_home, monkeypatch):
    """Counting the scopes scans the store: the tab's picker, like the dashboard's, keeps its list
    for SCOPES_SECONDS, then lists a scope written meanwhile."""
    from hermes_cmms.ui import web

    client, _ids = tab

    def offered() -> list[str]:
        html = client.get("/api/plugins/cmms/page", params={"path": "/memories"}).json()["html"]
        return re.findall(r'<option value="([^"]+)"', html.split('id="scope-pick"')[1].split("</select>")[0])

    assert offered() == ["local:default", "user:telegram:9"]  # the owner's first
    service = MemoryService(Settings.load(kw_home), scheduler=False)
    try:
        service.remember("user:discord:5", "a note of a third scope")
    finally:
        service.close()
    assert offered() == ["local:default", "user:telegram:9"]  # read within the interval: kept
    monkeypatch.setattr(web, "SCOPES_SECONDS", 0.0)
    assert offered() == ["local:default", "user:discord:5", "user:telegram:9"]
