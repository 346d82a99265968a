"""The dashboard over real HTTP: a real uvicorn on 127.0.0.1 (a thread of this process, or the
`hermes-cmms ui` process itself), a real SQLite store, httpx as the browser. First its gate (the
token, the cookie, Host, Origin, CSRF, read-only, the headers, scopes), then its pages."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from dashboard import base, post, running, signed_in
from hermes_cmms import MemoryService, Settings
from hermes_cmms.ui._guard import CSP
from hermes_cmms.ui.app import CHANGE, READ

pytestmark = pytest.mark.one_backend  # the door's own behaviour; the store tests cover both backends

SCOPE, OTHER = "local:default", "local:other"


@pytest.fixture
def service(kw_home):
    svc = MemoryService(Settings.load(kw_home), scheduler=False)
    yield svc
    svc.close()


@pytest.fixture
def seeded(service):
    """A store with a few memories in two scopes: {name: id}."""
    ids = {"coffee": service.remember(SCOPE, "I drink my coffee black every morning", tags=["food"]),
           "cat": service.remember(SCOPE, "My cat is called Biscuit", tags=["pets"]),
           "secret": service.remember(OTHER, "The other scope's private plan for the zebra launch")}
    return ids


# -- the gate -------------------------------------------------------------------------------

@pytest.mark.quick
def test_nothing_is_answered_without_the_token_or_its_cookie(service):
    with running(service) as door, httpx.Client(base_url=base(door)) as client:
        for path in ("/", "/memories", "/audit", "/static/app.css", "/static/htmx.min.js", "/nowhere"):
            answer = client.get(path)
            assert answer.status_code == 401, path
            assert "printed" in answer.text and "<" not in answer.text
        assert client.get("/?token=" + door.token[:-1] + "x").status_code == 401
        client.cookies.set(door.cookie, door.token)
        assert client.get("/").status_code == 401  # the token is not the cookie


def test_the_token_is_traded_for_a_strict_http_only_cookie_and_leaves_the_address(service):
    with running(service) as door, httpx.Client(base_url=base(door)) as client:
        answer = client.get(f"/audit?scope={SCOPE}&token={door.token}&action=remember")
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/audit?scope={SCOPE.replace(':', '%3A')}&action=remember"
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith(f"{door.cookie}={door.session};")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert door.token not in cookie
        assert client.get(answer.headers["location"]).status_code == 200


def test_a_foreign_host_is_refused_even_with_the_cookie(service):
    with running(service) as door:
        client = signed_in(door)
        assert client.get("/", headers={"host": f"localhost:{door.port}"}).status_code == 200
        for host in (f"evil.example:{door.port}", "evil.example", f"127.0.0.1:{door.port + 1}",
                     f"localhost.evil.example:{door.port}", f"127.0.0.2:{door.port}", ""):
            answer = client.get("/", headers={"host": host})
            assert answer.status_code == 403, host
        token_at_rebound_name = httpx.get(f"{base(door)}/?token={door.token}", headers={"host": "evil.example"})
        assert token_at_rebound_name.status_code == 403 and "set-cookie" not in token_at_rebound_name.headers


def test_every_answer_carries_the_strict_policy_and_no_inline_script_or_style(service, seeded):
    with running(service) as door:
        client = signed_in(door)
        answers = [client.get(path) for path in ("/", f"/memories?scope={SCOPE}", "/static/app.css")]
        answers += [httpx.get(base(door) + "/"), httpx.get(base(door) + "/", headers={"host": "evil.example"})]
        for answer in answers:
            assert answer.headers["content-security-policy"] == CSP
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["referrer-policy"] == "no-referrer"
            assert answer.headers["x-frame-options"] == "DENY"
        assert CSP == ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        assert client.get("/favicon.ico").status_code == 404
        for answer in answers[:2]:
            assert '<link rel="icon" href="data:,">' in answer.text  # so no browser asks for that 404
            assert not re.search(r"<script(?![^>]*\bsrc=\"/static/)", answer.text)  # no inline script
            assert not re.search(r"\sstyle=|<style|\son[a-z]+=", answer.text)  # no inline style or handler


def test_a_read_only_dashboard_refuses_every_change(service, seeded):
    with running(service) as door:
        client = signed_in(door)
        for path, _ in CHANGE:
            answer = post(client, door, path.replace("{memory_id}", seeded["cat"]),
                          {"scope": SCOPE, "text": "changed", "id": seeded["cat"], "typed": SCOPE})
            assert answer.status_code == 403 and "--allow-changes" in answer.text, path
        assert service.browse(SCOPE)["total"] == 2


def test_a_change_needs_this_dashboards_origin(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        path, form = f"/memory/{seeded['cat']}/tag", {"scope": SCOPE, "tags": "+kept"}
        for headers in ({"origin": "http://evil.example"}, {"origin": "null"},
                        {"origin": f"http://127.0.0.1:{door.port + 1}"}):
            assert client.post(path, data={"csrf": door.csrf, **form}, headers=headers).status_code == 403, headers
        no_origin = client.post(path, data={"csrf": door.csrf, **form})
        assert no_origin.status_code == 403
        foreign_referer = client.post(path, data={"csrf": door.csrf, **form}, headers={"referer": "http://evil.example/"})
        assert foreign_referer.status_code == 403
        assert service.memory_page(SCOPE, seeded["cat"])["memory"]["tags"] == ["pets"]
        own_referer = client.post(path, data={"csrf": door.csrf, **form}, headers={"referer": base(door) + "/memory/x"})
        assert own_referer.status_code == 303
        assert service.memory_page(SCOPE, seeded["cat"])["memory"]["tags"] == ["pets", "kept"]


def test_every_change_needs_the_csrf_token(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        for path, _ in CHANGE:
            form = {"scope": SCOPE, "text": "changed", "id": seeded["cat"], "typed": SCOPE, "tags": "+x"}
            url = path.replace("{memory_id}", seeded["cat"])
            for csrf in ({}, {"csrf": ""}, {"csrf": door.csrf[:-2]}, {"csrf": door.token}):
                answer = client.post(url, data={**form, **csrf}, headers={"origin": base(door)})
                assert answer.status_code == 403 and "CSRF" in answer.text, (path, csrf)
        assert service.browse(SCOPE)["total"] == 2
        assert service.memory_page(SCOPE, seeded["cat"])["memory"]["tags"] == ["pets"]
        by_header = client.post(f"/memory/{seeded['cat']}/tag", data={"scope": SCOPE, "tags": "+h"},
                                headers={"origin": base(door), "x-csrf-token": door.csrf, "hx-request": "true"})
        assert by_header.status_code == 200 and by_header.headers["hx-redirect"].startswith("/memory/")


def test_every_read_route_is_a_get_and_every_change_a_post(service):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        for path, _ in CHANGE:
            if path not in {p for p, _ in READ}:
                assert client.get(path.replace("{memory_id}", "x")).status_code == 405, path
        assert client.request("PUT", "/memories", headers={"origin": base(door)}).status_code == 405


def test_a_fixed_scope_shows_nothing_of_another(service, seeded):
    with running(service, scope=SCOPE) as door:
        client = signed_in(door)
        assert client.get("/memories").status_code == 200
        for path in (f"/memories?scope={OTHER}", f"/audit?scope={OTHER}", f"/beliefs?scope={OTHER}",
                     f"/memory/{seeded['secret']}?scope={OTHER}", f"/graph?scope={OTHER}&q=zebra"):
            answer = client.get(path)
            assert answer.status_code == 404 and "zebra" not in answer.text, path
        crafted = client.get(f"/memory/{seeded['secret']}")  # another scope's id, under this scope
        assert crafted.status_code == 404 and "zebra" not in crafted.text
        overview = client.get("/").text
        assert OTHER not in overview and SCOPE in overview
        assert "zebra launch" not in client.get("/memories?query=zebra").text


def test_an_id_of_another_scope_is_not_found_in_this_one(service, seeded):
    with running(service) as door:
        client = signed_in(door)
        answer = client.get(f"/memory/{seeded['secret']}?scope={SCOPE}")
        assert answer.status_code == 404 and "zebra" not in answer.text
        assert client.get(f"/memory/{seeded['secret']}?scope={OTHER}").status_code == 200


def test_bad_input_is_one_sentence_not_a_traceback(service, seeded):
    with running(service) as door:
        client = signed_in(door)
        for path in ("/memories?offset=-1", "/memories?since=yesterday", "/memories?sort=sideways",
                     "/audit?offset=x", "/graph?from=nobody&to=noone"):
            answer = client.get(path)
            assert answer.status_code in (400, 404), path
            assert "Traceback" not in answer.text and re.search(r'<p class="error">[^<]+</p>', answer.text), path


# -- `hermes-cmms ui`, the process ------------------------------------------------------------

def _start(home, *extra) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_cmms.cli", "ui", "--no-open", "--hermes-home", str(home),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    assert match, (line, proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
    return proc, match.group(1)


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* has them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            if state == "0A" and int(local.split(":")[1], 16) == port:
                found.add(local.split(":")[0])
    return found


@pytest.mark.slow
def test_the_command_listens_on_loopback_only_and_prints_its_token_url(service, seeded, kw_home):
    proc, url = _start(kw_home)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=[\w-]{40,}", url)
        port = int(url.split(":")[2].split("/")[0])
        assert _listening(port) == {"0100007F"}  # 127.0.0.1, not 0.0.0.0
        with httpx.Client(follow_redirects=True) as client:
            assert client.get(url.split("?")[0]).status_code == 401
            page = client.get(url)
            assert page.status_code == 200 and str(page.url) == url.split("?")[0] and "token=" not in str(page.url)
            assert "Biscuit" in client.get(url.split("?")[0] + "memories").text
            assert client.post(url.split("?")[0] + "forget", data={"id": seeded["cat"]}).status_code == 403
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.slow
def test_another_address_only_when_asked_and_then_with_a_warning(service, seeded, kw_home):
    proc, url = _start(kw_home, "--host", "0.0.0.0")
    try:
        port = int(url.split(":")[2].split("/")[0])
        assert _listening(port) == {"00000000"}
        time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning: the dashboard listens on 0.0.0.0" in err


# -- hostile text renders inert ----------------------------------------------------------------

from html.parser import HTMLParser  # noqa: E402

from test_fence import HOSTILE  # noqa: E402 - the fence tests' corpus: fake fence tags, look-alikes, bidi

XSS = ('<script>document.title="pwned"</script><img src=x onerror="document.title=1">'
       '"><svg onload=alert(1)><a href="javascript:alert(1)">x</a></textarea><style>*{}</style>')
BIDI = "pay \u202eBob\u202c now \u2066x\u2069 \u200fy\u200e z\u200b\ufeff\U000e0041"
OUR_TAGS = {"html", "head", "meta", "title", "link", "script", "body", "header", "strong", "nav", "a", "span", "code",
            "main", "h1", "h2", "h3", "small", "p", "div", "form", "input", "select", "option", "label", "button",
            "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd", "ul", "ol", "li", "section", "textarea",
            "pre", "br", "svg", "line", "text", "circle", "b", "time", "h4", "defs", "marker", "path"}


class Tags(HTMLParser):
    """Every element and attribute of a page, and every script's address."""

    def __init__(self, page: str):
        super().__init__()
        self.tags, self.attributes, self.scripts = set(), set(), []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}
        if tag == "script":
            self.scripts.append(dict(attrs).get("src"))
        for name, value in attrs:
            assert not (value or "").strip().lower().startswith("javascript:"), (tag, name, value)


def _inert(page: str) -> None:
    found = Tags(page)
    assert found.tags <= OUR_TAGS, found.tags - OUR_TAGS
    assert not {a for a in found.attributes if a.startswith("on")} and "style" not in found.attributes
    assert found.scripts == ["/static/htmx.min.js"]
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u200b\ufeff\U000e0000-\U000e007f]", page)
    assert "pwned" not in re.sub(r"&lt;script&gt;document\.title=&#34;pwned&#34;", "", page)


@pytest.fixture
def hostile(service):
    ids = {"content": service.remember(SCOPE, XSS + HOSTILE, tags=["<b>tag</b>", "t\u202eag"],
                                       source="cli:<script>x</script>\u202e"),
           "bidi": service.remember(SCOPE, BIDI),
           "fact": service.remember_fact(SCOPE, "<script>alert(1)</script>", "lives in", "Berlin\u202e<img src=x>")}
    service.set_belief(SCOPE, "<script>alert('belief')</script> coffee is good\u202e", confidence=0.9)
    return ids


def test_hostile_text_renders_inert_on_every_page(service, hostile):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        pages = ["/", f"/memories?scope={SCOPE}", f"/memories?scope={SCOPE}&query=script",
                 f"/memory/{hostile['content']}?scope={SCOPE}", f"/memory/{hostile['bidi']}?scope={SCOPE}",
                 f"/memory/{hostile['fact']}?scope={SCOPE}", f"/beliefs?scope={SCOPE}", f"/audit?scope={SCOPE}",
                 f"/graph?scope={SCOPE}&q=script", f"/graph?scope={SCOPE}&q=Berlin",
                 f"/forget?scope={SCOPE}&id={hostile['content']}",
                 f"/memories?scope={SCOPE}&query=<script>\u202e&tags=<b>"]
        for path in pages:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.text[-400:])
            _inert(answer.text)
        page = client.get(f"/memory/{hostile['content']}?scope={SCOPE}").text
        assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in page
        assert "&lt;/memory-context&gt;" in page and "&lt;/mеmоry-cоntехt&gt;" in page  # look-alike kept, as text
        bidi = client.get(f"/memory/{hostile['bidi']}?scope={SCOPE}").text
        assert "pay \u27e6U+202E\u27e7Bob\u27e6U+202C\u27e7 now \u27e6U+2066\u27e7x\u27e6U+2069\u27e7" in bidi
        assert "\u27e6U+E0041\u27e7" in bidi and "\u27e6U+200B\u27e7" in bidi
        graph = client.get(f"/graph?scope={SCOPE}&q=Berlin").text
        assert "<svg" in graph and re.search(r'class="node-label">[^<]*&lt;img src=x&gt;', graph)


def test_the_visible_markers_keep_text_a_reader_can_copy():
    from hermes_cmms.ui._render import visible

    assert visible("plain text, no change\nsecond line\ttab") == "plain text, no change\nsecond line\ttab"
    assert visible("a\u202eb") == "a\u27e6U+202E\u27e7b" and visible("x\x07") == "x\u27e6U+0007\u27e7"
    assert visible("Grüße, 東京, 🙂") == "Grüße, 東京, 🙂"


# -- the pages ----------------------------------------------------------------------------------

def _text(page: str) -> str:
    """A page's words without its markup (entities decoded), for reading what it says."""
    import html

    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_memories_are_found_filtered_sorted_and_paged(service, seeded):
    for n in range(55):
        service.remember(SCOPE, f"Numbered note {n:02d} about gardening", tags=["garden"], judge=False)
    with running(service) as door:
        client = signed_in(door)
        first = client.get(f"/memories?scope={SCOPE}").text
        assert first.count('class="memory"') == 50 and "1–50 of 57" in _text(first)
        second = client.get(f"/memories?scope={SCOPE}&offset=50").text
        assert second.count('class="memory"') == 7 and "51–57 of 57" in _text(second)
        found = client.get(f"/memories?scope={SCOPE}&query=coffee").text
        assert "I drink my coffee black" in found and "Biscuit" not in found
        tagged = client.get(f"/memories?scope={SCOPE}&tags=pets").text
        assert "Biscuit" in tagged and tagged.count('class="memory"') == 1
        oldest = client.get(f"/memories?scope={SCOPE}&sort=oldest").text
        assert oldest.index("coffee black") < oldest.index("Biscuit")
        assert "zebra" not in client.get(f"/memories?scope={SCOPE}&query=zebra").text.split('id="results"')[1]
        assert client.get(f"/memories?scope={SCOPE}&since=2999-01-01").text.count('class="memory"') == 0
        by_meaning = client.get(f"/memories?scope={SCOPE}&query=coffee&mode=meaning").text  # a keyword-only store
        assert re.search(r'<p class="note" id="notice">[^<]+</p>', by_meaning) and "coffee black" in by_meaning


def test_a_memory_page_shows_its_provenance_and_its_chain(service):
    old = service.remember(SCOPE, "My favourite colour is green", source="mcp:store_memory", session_id="s-1")
    new = service.correct(SCOPE, old, "My favourite colour is blue", actor="cli")
    with running(service) as door:
        client = signed_in(door)
        page = client.get(f"/memory/{new}?scope={SCOPE}")
        assert page.status_code == 200
        words = _text(page.text)
        assert "My favourite colour is blue" in words and "Provenance" in words and "Supersedes" in words
        assert "My favourite colour is green" in words  # the chain, with its text
        old_page = _text(client.get(f"/memory/{old}?scope={SCOPE}").text)
        assert "mcp:store_memory" in old_page and "s-1" in old_page and "Superseded by" in old_page


@pytest.mark.quick
def test_the_inspector_shows_the_block_why_each_line_and_why_not(service, seeded):
    for n in range(30):
        service.remember(SCOPE, f"Gardening log {n}: watered the tomatoes and basil", judge=False)
    with running(service) as door:
        client = signed_in(door)
        page = client.get(f"/inspect?scope={SCOPE}&prompt=how do I drink my coffee")
        assert page.status_code == 200
        answer = service.inspect_recall(SCOPE, "how do I drink my coffee")
        assert answer["block"] and answer["block"].splitlines()[1] in _text(page.text) or \
            _text(answer["block"]).split()[0] in _text(page.text)
        assert page.text.count('class="line"') == len(answer["lines"]) >= 1
        assert "coffee black" in page.text and "keyword" in _text(page.text)
        why = client.get(f"/inspect?scope={SCOPE}&prompt=how do I drink my coffee&why_not={seeded['cat']}")
        verdict = service.why_not(SCOPE, "how do I drink my coffee", seeded["cat"])["verdict"]
        assert why.status_code == 200 and verdict in _text(why.text)
        other = client.get(f"/inspect?scope={SCOPE}&prompt=zebra launch&why_not={seeded['secret']}")
        assert other.status_code == 404 and "zebra launch" not in other.text.split("</header>")[1].replace(
            'value="zebra launch"', "")


def test_sessions_show_what_each_turn_stored_and_recalled(service):
    service.retain_turn(SCOPE, "chat-1", "I adopted a dog named Rex", "Congratulations on Rex!")
    service.recall(SCOPE, "what is my dog called", session_id="chat-1")
    service.retain_turn(SCOPE, "chat-1", "what is my dog called", "Rex")
    with running(service) as door:
        client = signed_in(door)
        listed = client.get(f"/sessions?scope={SCOPE}")
        assert listed.status_code == 200 and "chat-1" in listed.text
        timeline = client.get(f"/session/chat-1?scope={SCOPE}")
        assert timeline.status_code == 200
        words = _text(timeline.text)
        assert "I adopted a dog named Rex" in words and "What it got then" in words
        assert timeline.text.count('class="turn"') == len(service.session_timeline(SCOPE, "chat-1")["turns"])


def test_a_past_turn_of_a_session_is_inspected_from_its_timeline(service):
    """Pick a past turn: its user message is the prompt, whole (the timeline shows only its start)."""
    long_tail = " and then " + "the rest of what I said " * 10 + "ends here"
    service.retain_turn(SCOPE, "chat-2", "I adopted a dog named Rex", "Congratulations on Rex!")
    ids = service.retain_turn(SCOPE, "chat-2", "what is my dog called" + long_tail, "Rex")
    with running(service) as door:
        client = signed_in(door)
        timeline = client.get(f"/session/chat-2?scope={SCOPE}")
        links = re.findall(r'href="(/inspect\?[^"]*from_memory=[^"]*)"', timeline.text)
        assert len(links) == 2  # one per user message, none for the assistant's
        page = client.get(links[-1].replace("&amp;", "&"))
        assert page.status_code == 200
        answer = service.inspect_recall(SCOPE, "what is my dog called" + long_tail, leave_out=ids)
        assert re.search(r'id="prompt"[^>]*value="[^"]*ends here"', page.text)  # the whole message, not its start
        assert page.text.count('class="line"') == len(answer["lines"]) >= 1  # without the turn's own messages
        assert "Rex" in _text(page.text)
        other = client.get(f"/inspect?scope=local:other&from_memory={ids[0]}")
        assert other.status_code == 404


def test_beliefs_are_listed_and_a_conflict_resolved(service):
    a = service.set_belief(SCOPE, "Coffee is good for me", confidence=0.9)["id"]
    b = service.set_belief(SCOPE, "Coffee is not good for me", confidence=0.6)["id"]
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        page = client.get(f"/beliefs?scope={SCOPE}")
        assert "Coffee is good for me" in page.text and "Coffee is not good for me" in page.text
        done = post(client, door, "/beliefs/resolve", {"scope": SCOPE, "belief_a": a, "belief_b": b, "strategy": "keep_a"})
        assert done.status_code == 303
        kept = {x["id"]: x for x in service.get_belief(SCOPE)["beliefs"]}
        assert kept[a]["state"] == "active" and (b not in kept or kept[b]["state"] == "archived")
        assert [e.action for e in service.audit_log(SCOPE, action="resolve_conflict")]


def test_the_graph_is_drawn_as_inline_svg_with_paths(service):
    service.learn(SCOPE, "Alice works at Acme. Bob works at Acme. Alice lives in Berlin.")
    with running(service) as door:
        client = signed_in(door)
        page = client.get(f"/graph?scope={SCOPE}&q=Alice").text
        assert "<svg" in page and re.search(r'class="node-label">Alice<', page) and "works at" in page
        paths = client.get(f"/graph?scope={SCOPE}&from=Alice&to=Bob").text
        assert "<svg" in paths and re.search(r'class="node-label">Bob<', paths) and "Acme" in paths


def test_the_audit_trail_filters_by_action_door_and_date(service, seeded):
    service.forget(SCOPE, seeded["cat"], actor="cli")
    with running(service) as door:
        client = signed_in(door)
        everything = client.get(f"/audit?scope={SCOPE}").text
        assert "remember" in everything and "forget" in everything
        forgets = client.get(f"/audit?scope={SCOPE}&action=forget").text
        assert forgets.count('<tr class="event">') == len(service.audit_log(SCOPE, action="forget"))
        assert ">remember<" not in forgets
        by_door = client.get(f"/audit?scope={SCOPE}&door=cli").text
        assert ">cli<" in by_door and by_door.count('<tr class="event">') == 1
        assert "No events." in client.get(f"/audit?scope={SCOPE}&since=2999-01-01").text


# -- steer ---------------------------------------------------------------------------------------

def test_correct_pin_and_tag_change_the_memory(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        page = client.get(f"/memory/{seeded['cat']}?scope={SCOPE}").text
        assert 'name="csrf"' in page and door.csrf in page
        done = post(client, door, f"/memory/{seeded['cat']}/correct", {"scope": SCOPE, "text": "My cat is called Pancake"})
        assert done.status_code == 303
        new = done.headers["location"].split("/memory/")[1].split("?")[0].replace("-", "")
        assert service.memory_page(SCOPE, new)["memory"]["content"] == "My cat is called Pancake"
        assert service.memory_page(SCOPE, seeded["cat"])["memory"]["superseded_by"] == new
        assert "Pancake" in service.recall(SCOPE, "what is my cat called") and "Biscuit" not in service.recall(
            SCOPE, "what is my cat called")
        assert post(client, door, f"/memory/{new}/pin", {"scope": SCOPE, "pinned": "1"}).status_code == 303
        assert service.memory_page(SCOPE, new)["memory"]["pinned"] is True
        assert post(client, door, f"/memory/{new}/tag", {"scope": SCOPE, "tags": "+cats -nothing"}).status_code == 303
        assert "cats" in service.memory_page(SCOPE, new)["memory"]["tags"]
        assert [e.actor.split(":")[0] for e in service.audit_log(SCOPE, action="correct")] == ["ui"]  # the door
        old = seeded["cat"].replace("-", "")  # one correction, one event on its trail (no 'supersede' beside it)
        assert [e.action for e in service.audit_log(SCOPE, memory_id=old)][0] == "correct"
        assert not service.audit_log(SCOPE, memory_id=old, action="supersede")


def test_forget_shows_a_preview_then_forgets(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        preview = client.get(f"/forget?scope={SCOPE}&id={seeded['cat']}&id={seeded['coffee']}")
        assert preview.status_code == 200 and "Forget 2 memories?" in _text(preview.text)
        assert service.browse(SCOPE)["total"] == 2  # the preview changed nothing
        done = post(client, door, "/forget", {"scope": SCOPE, "id": [seeded["cat"]]})
        assert done.status_code == 303
        assert service.browse(SCOPE)["total"] == 1
        assert "Biscuit" not in service.recall(SCOPE, "what is my cat called")
        assert client.get(f"/memory/{seeded['cat']}?scope={SCOPE}").status_code == 404
        crafted = post(client, door, "/forget", {"scope": SCOPE, "id": [seeded["secret"]]})
        assert crafted.status_code == 404 and service.browse(OTHER)["total"] == 1


def test_forgetting_a_scope_needs_its_name_typed(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        assert "Forget the scope" in client.get(f"/?scope={SCOPE}").text
        wrong = post(client, door, "/scope/forget", {"scope": SCOPE, "typed": "local:defaul"})
        assert wrong.status_code == 400 and service.browse(SCOPE)["total"] == 2
        done = post(client, door, "/scope/forget", {"scope": SCOPE, "typed": SCOPE})
        assert done.status_code == 303
        assert service.browse(SCOPE)["total"] == 0 and service.browse(OTHER)["total"] == 1


def test_a_refused_change_says_why_in_a_fragment_htmx_swaps_in(service, seeded):
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        wrong = post(client, door, "/scope/forget", {"scope": SCOPE, "typed": "<b>nope</b>"}, **{"hx-request": "true"})
        assert wrong.status_code == 400
        assert re.fullmatch(r'<p class="error">Type the scope&#39;s name, [^<]+ exactly to forget all of it\.</p>\s*',
                            wrong.text)
        assert service.browse(SCOPE)["total"] == 2


def test_hermes_cmms_ui_inside_hermes_is_the_same_command():
    import argparse

    from hermes_cmms.cli._ui import cmd_ui
    from hermes_cmms.hermes_plugin.cli import register_cli

    parser = argparse.ArgumentParser(prog="hermes cmms")
    register_cli(parser)
    args = parser.parse_args(["ui", "--scope", "local:a", "--allow-changes", "--no-open", "--port", "0"])
    assert args.cmms_func is cmd_ui and args.scope == "local:a" and args.allow_changes and args.no_open
    assert args.host is None  # 127.0.0.1 unless named


def test_the_token_redirect_never_leaves_the_dashboard(service):
    with running(service) as door, httpx.Client(base_url=base(door)) as client:
        for path in ("//evil.example/x", "/\\evil.example/x", "///evil.example"):
            answer = client.get(f"{base(door)}{path}?token={door.token}")
            assert answer.status_code == 303 and answer.request.url.raw_path.startswith(path[:2].encode()), path
            location = answer.headers["location"]
            assert location.startswith("/") and not location.startswith(("//", "/\\")), (path, location)


def test_an_ipv6_address_is_answered_in_brackets():
    from hermes_cmms.ui import Door

    door = Door(port=8123, host="::1")
    assert "[::1]:8123" in door.hosts and door.url().startswith("http://[::1]:8123/?token=")


# -- the faces: a page tells the truth at a glance --------------------------------------------------

def test_the_overview_is_tables_and_badges_with_text_beside_each_id(service, seeded):
    service.recall(SCOPE, "what is my cat called", session_id="chat-9")
    with running(service) as door:
        client = signed_in(door)
        page = client.get("/").text
        overview = service.overview(None)
        assert page.count('<tr class="check">') == len(overview["health"])  # a row a check, not level/name/detail
        assert "<dt>level</dt>" not in page and "<dt>superseded_by</dt>" not in page
        assert not re.search(r"\d\.\d+e\+\d", page)  # no time as 1.796e+09
        recalls = page[page.index('id="latest-recalls"'):]
        assert "My cat is called Biscuit" in recalls and "/session/chat-9?" in recalls  # text beside the id, a link
        writes = page[page.index('id="latest-writes"'):page.index('id="latest-recalls"')]
        assert writes.count('<tr class="write">') == len(overview["latest_writes"]) and "coffee black" in writes


def test_states_read_true_and_every_id_is_a_link_with_its_text(service, seeded):
    new = service.correct(SCOPE, seeded["cat"], "My cat is called Pancake", actor="cli")
    a = service.set_belief(SCOPE, "Tea is good for me", confidence=0.9)["id"]
    service.set_belief(SCOPE, "Tea is not good for me", confidence=0.6)
    with running(service) as door:
        client = signed_in(door)
        old = client.get(f"/memory/{seeded['cat']}?scope={SCOPE}").text
        assert re.search(r'<p class="facts"><span class="badge state-superseded">superseded</span>', old)
        assert re.search(rf'id="replaced">Superseded by <a class="id" href="/memory/{_dashed(new)}[^>]*>[^<]+</a> '
                         r'<span class="text ref">My cat is called Pancake</span>', old)
        chain = client.get(f"/memory/{new}?scope={SCOPE}").text
        part = chain[chain.index('id="part-supersedes"'):]
        assert "My cat is called Biscuit" in part and "state-superseded" in part  # not "active"
        audit = client.get(f"/audit?scope={SCOPE}").text
        assert not re.search(r"(?<![/\w-])[0-9a-f]{32}(?![\w-])", audit)  # no id left undashed
        assert audit.count('class="id"') > len(service.audit_log(SCOPE, limit=50))  # ids in details are links too
        beliefs = client.get(f"/beliefs?scope={SCOPE}").text
        assert beliefs.count("state-contested") == 2
        row = beliefs[beliefs.index(f'<tr class="belief"><td><a class="id" href="/memory/{_dashed(a)}'):]
        assert "Tea is not good for me" in row[:row.index("</tr>")]  # who contests it, by its words


def test_a_ranking_says_its_sort_and_shows_its_scores(service, seeded):
    with running(service) as door:
        client = signed_in(door)
        page = client.get(f"/memories?scope={SCOPE}&query=coffee").text
        assert re.search(r'<select name="sort" id="sort">.*<option selected>relevance</option>', page)
        assert '<td class="score">' in page and ">match</th>" in page
        plain = client.get(f"/memories?scope={SCOPE}").text
        assert '<td class="score">' not in plain and re.search(r"<option selected>newest</option>", plain)
        assert re.search(r'<span class="tag text">food</span>', plain)  # tags in the list
        for label in ("Search", "state", "tier", "kind", "tags", "since", "until", "sort"):
            assert re.search(rf"<label[^>]*>{label} <", plain), label  # every filter says what it is


def test_the_graph_starts_from_named_things_and_draws_arrows_that_fit(service):
    service.learn(SCOPE, "Alice works at Acme. Bob works at Acme. Alice lives in Berlin.")
    with running(service) as door:
        client = signed_in(door)
        start = client.get(f"/graph?scope={SCOPE}").text
        assert re.search(r'id="graph-start">.*href="/graph\?scope=local%3Adefault&amp;q=Alice"', start)
        page = client.get(f"/graph?scope={SCOPE}&q=Alice").text
        lines = re.findall(r"<line [^>]*>", page)
        assert lines and all('marker-end="url(#arrow)"' in line for line in lines)
        assert '<marker id="arrow"' in page and not re.search(r'<svg[^>]* width="\d', page)  # the window's width
        assert "Berlin" in page[page.index('id="relations"'):]


def test_sessions_read_by_their_first_message_and_a_rerun_says_what_it_is(service):
    service.remember(SCOPE, "My dog is called Rex")
    service.recall(SCOPE, "what is my dog called", session_id="chat-3")
    ids = service.retain_turn(SCOPE, "chat-3", "what is my dog called", "Rex")
    with running(service) as door:
        client = signed_in(door)
        listed = client.get(f"/sessions?scope={SCOPE}").text
        assert re.search(r'<a href="/session/chat-3\?scope=local%3Adefault"><span class="text">what is my dog called'
                         r"</span></a>", listed)
        timeline = client.get(f"/session/chat-3?scope={SCOPE}").text
        recalled = timeline[timeline.index('class="recalled"'):]
        assert "My dog is called Rex" in recalled  # what it got then, with its text
        rerun = client.get(f"/inspect?scope={SCOPE}&from_memory={ids[0]}").text
        said = _text(rerun[rerun.index('id="rerun"'):rerun.index("</p>", rerun.index('id="rerun"'))])
        assert "Run again now" in said and "not what that turn got" in said and "chat-3" in said
        assert "Run again now" not in client.get(f"/inspect?scope={SCOPE}&prompt=what+is+my+dog+called").text


def _dashed(stored: str) -> str:
    from hermes_cmms.common.ids import shown_id

    return shown_id(stored)


@pytest.mark.quick
def test_the_graph_drawing_centres_what_was_asked_and_stops_arrows_at_the_circles():
    from hermes_cmms.ui import _graph

    near = [{"entity": {"id": f"e{n}", "name": f"N{n}"}, "predicate": "knows", "forward": n % 2 == 0, "current": n != 3}
            for n in range(1, 5)]
    drawn = _graph.draw({"mode": "entity", "entity": {"id": "c", "name": "Centre", "neighbours": near}})
    nodes = {n["id"]: n for n in drawn["nodes"]}
    assert (nodes["c"]["x"], nodes["c"]["y"]) == (drawn["width"] / 2, drawn["height"] / 2) and nodes["c"]["centre"]
    assert nodes["c"]["ty"] < nodes["c"]["y"]  # the centre's name above it, out of the arrows' way
    for edge in drawn["edges"]:  # each arrow starts and ends off the circles (its head is visible)
        ends = [(n["x"], n["y"]) for n in drawn["nodes"]]
        for x, y in ((edge["x1"], edge["y1"]), (edge["x2"], edge["y2"])):
            assert min(((x - a) ** 2 + (y - b) ** 2) ** 0.5 for a, b in ends) >= _graph.NODE - 0.1
    assert sorted(e["current"] for e in drawn["edges"]) == [False, True, True, True]
    assert all(0 <= n["x"] <= drawn["width"] and 0 <= n["y"] <= drawn["height"] for n in drawn["nodes"])


def test_the_picker_names_the_scope_shown_and_a_confirmation_only_its_page(service):
    """The scope picker selects the scope the page shows (every scope on an overview asked none, a
    scope not in its cached list too), its values go back exactly as stored (a name with a bidi
    mark is shown marked, not changed), a compaction's recall is no turn, and a `done` word shows
    only on the page its change goes to, its count only in ASCII digits."""
    odd = "user:x\u202eevil"
    mid = service.remember(SCOPE, "I keep the spare key under the blue pot")
    service.remember(odd, "a note of the odd scope")
    service.retain_turn(SCOPE, "cmp", "Where is the spare key?", "Under the blue pot.")
    service.recall(SCOPE, "spare key", session_id="cmp", kind="summary")
    with running(service) as door:
        client = signed_in(door)
        overview = client.get("/").text
        assert re.search(r'<option value="" selected>every scope</option>', overview)
        assert "a compaction's summary" in overview and "turn 2" not in overview
        page = client.get("/memories", params={"scope": odd}).text
        assert f'<option value="{odd}" selected>' in page and f'name="scope" value="{odd}"' in page
        assert "a note of the odd scope" in page and "user:x\u27e6U+202E\u27e7evil" in page  # shown marked
        typo = client.get("/inspect", params={"scope": "local:Default"}).text
        assert '<option value="local:Default" selected>' in typo
        assert 'id="done"' in client.get(f"/memory/{mid}", params={"scope": SCOPE, "done": "pinned"}).text
        assert 'id="done"' not in client.get("/memories", params={"scope": SCOPE, "done": "pinned"}).text
        told = client.get("/memories", params={"scope": SCOPE, "done": "forgotten", "forgotten": "\u0661\u0662"}).text
        assert "Forgotten." in told and "Forgotten: 12" not in told
        assert "Forgotten: 3." in client.get("/memories", params={"scope": SCOPE, "done": "forgotten",
                                                                   "forgotten": "3"}).text
