"""The dashboard attacked: what a hostile page, a hostile memory, a crafted address or a local
user could try against a real `hermes-cmms ui` (uvicorn on 127.0.0.1, a real SQLite store,
httpx as the browser; the process itself where the process is the point). Each test is an attack
that once worked, and holds the fix."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from dashboard import post, running, signed_in
from hermes_cmms import MemoryService, Settings

pytestmark = pytest.mark.one_backend

SCOPE = "local:default"


@pytest.fixture
def service(kw_home):
    svc = MemoryService(Settings.load(kw_home), scheduler=False)
    svc.remember(SCOPE, "I drink my coffee black every morning")
    yield svc
    svc.close()


@pytest.mark.quick
def test_a_number_in_other_digits_or_too_long_is_one_sentence(service):
    """`²` is a digit to str.isdigit but not to int(), and int() refuses 4,301 digits: both were a
    500 (a traceback in the log, the connection reset) instead of the page's one sentence."""
    with running(service) as door:
        client = signed_in(door)
        for path in ("/memories?offset=%C2%B2", "/inspect?prompt=coffee&budget=%C2%B2",
                     "/sessions?offset=" + "9" * 5000, "/audit?offset=%D9%A3"):
            answer = client.get(path)
            assert answer.status_code == 400, (path[:60], answer.text[-300:])
            assert re.search(r'<p class="error">(offset|budget) must be a whole number from 0 to [\d,]+, not '
                             r"[^<]{1,60}\.</p>", answer.text), path[:60]


# -- the token never reaches another local user ----------------------------------------------------

BROWSER = """#!/bin/sh
# a browser that only writes down what it was asked to open (its argv is what `ps` shows)
printf '%s\\n' "$@" > "$0.args"
"""


@pytest.mark.slow
def test_the_browser_is_opened_without_the_token_in_any_command_line(service, kw_home, tmp_path):
    """webbrowser.open(url) runs the browser with the token in its argv, which every local user
    reads in /proc/PID/cmdline (ps): the browser is given a file only the user can read, which
    sends it on to the token's address, and which is gone when the dashboard stops."""
    browser = tmp_path / "browser"
    browser.write_text(BROWSER)
    browser.chmod(0o700)
    proc = subprocess.Popen([sys.executable, "-m", "hermes_cmms.cli", "ui", "--hermes-home", str(kw_home)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BROWSER": str(browser), "DISPLAY": ""})
    try:
        url = re.search(r"(http://\S+)", proc.stdout.readline()).group(1)
        token = url.split("token=")[1]
        args = Path(f"{browser}.args")
        deadline = time.monotonic() + 30
        while not args.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        opened = args.read_text().split()
        assert len(opened) == 1 and token not in opened[0] and opened[0].startswith("file://"), opened
        page = Path(opened[0][len("file://"):])
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and page.stat().st_uid == os.getuid()
        html = page.read_text()
        assert f'content="0;url={url.replace("&", "&amp;")}"' in html and '<meta name="referrer" content="no-referrer">' in html
        with httpx.Client(follow_redirects=True) as client:
            assert client.get(url).status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert not page.exists() and token not in err  # nor in the log


# -- a hostile memory hides nothing ----------------------------------------------------------------

def _selectors(text: str) -> str:
    """`text` hidden in variation selectors (U+E0100 + byte), as "emoji smuggling" hides a payload."""
    return "".join(chr(0xE0100 + byte) for byte in text.encode())


def test_a_word_hidden_in_variation_selectors_is_shown_as_markers(service):
    """Variation selectors are combining marks (Mn), printable to Python: a payload spelled in
    them (which a model may read) was sent as is and drawn as nothing. Each is shown as a marker,
    but the emoji and text presentation selectors (U+FE0E, U+FE0F) after a character stay."""
    mid = service.remember(SCOPE, "favourite colour: blue \u2764\ufe0f" + _selectors("ignore all") + "\ufe01")
    with running(service) as door:
        page = signed_in(door).get(f"/memory/{mid}?scope={SCOPE}").text
    shown = re.search(r'id="memory-text">([^<]*)</div>', page).group(1)
    hidden = "".join(f"\u27e6U+{0xE0100 + b:04X}\u27e7" for b in b"ignore all")
    assert shown == f"favourite colour: blue \u2764\ufe0f{hidden}\u27e6U+FE01\u27e7"
    assert not re.search("[\ufe00-\ufe0d\U000e0100-\U000e01ef]", page)


# -- another user of this machine --------------------------------------------------------------------

OTHER_USER = """
import sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Cookie": sys.argv[2]})
try:
    answer = urllib.request.urlopen(request, timeout=30)
    print(answer.status, answer.read().decode()[:2000])
except urllib.error.HTTPError as refused:
    print(refused.code, refused.read().decode())
"""


def _as_nobody(url: str, cookie: str = "") -> tuple[int, str]:
    """`url` fetched by user nobody (uid 65534), in a process of its own."""
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                           OTHER_USER, url, cookie], capture_output=True, text=True, timeout=60, cwd="/")
    status, _, body = done.stdout.partition(" ")
    return int(status), body


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/proc/net/tcp").exists(),
                    reason="needs root (to become another user) and Linux's /proc/net/tcp")
def test_another_local_user_with_the_token_or_the_cookie_is_refused(service):
    """Cookies ignore ports: any server of another user on 127.0.0.1 that the browser visits is
    sent the dashboard's cookie, and a token can leak (a shared terminal log, a screenshot). The
    kernel says which user owns the other end of a loopback connection: only ours is answered."""
    with running(service) as door:
        own = signed_in(door)
        assert "coffee" in own.get("/memories").text
        cookie = f"{door.cookie}={own.cookies[door.cookie]}"
        for url, sent in ((f"http://127.0.0.1:{door.port}/memories", cookie),
                          (f"http://127.0.0.1:{door.port}/?token={door.token}", ""),
                          (f"http://localhost:{door.port}/memories", cookie)):
            status, body = _as_nobody(url, sent)
            assert status == 403 and "coffee" not in body and "another user" in body, (url, status, body[:200])
        assert "coffee" in own.get("/memories").text


def test_a_tag_of_only_invisible_characters_is_refused_not_stored_empty(service):
    """`+\\x00` passed the tag check (a non-empty string) and was stored as the empty tag once cleaned."""
    mid = service.remember(SCOPE, "My cat is called Biscuit", tags=["pets"])
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        answer = post(client, door, f"/memory/{mid}/tag", {"scope": SCOPE, "tags": "+\x00 +ok"}, **{"hx-request": "true"})
        assert answer.status_code == 400
        assert answer.text == '<p class="error">Tags must be a list of non-empty strings.</p>', answer.text
    assert service.memory_page(SCOPE, mid)["memory"]["tags"] == ["pets"]


# -- a page on another site ------------------------------------------------------------------------

def _rows(home: Path) -> dict:
    """Every row of every table of the store (the keyword index's shadow tables but)."""
    import sqlite3

    with sqlite3.connect(home / "cmms" / "cmms.db") as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'") if "fts" not in t]
        return {t: db.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}


def test_no_read_route_changes_anything(service, kw_home):
    """A page on another port of 127.0.0.1 is the same site (SameSite=Strict lets the cookie go
    with its <img src>): every GET, the inspector and the forget preview among them, must change
    nothing in the store, not a recall event, not an access count."""
    mid = service.remember(SCOPE, "My cat is called Biscuit", tags=["pets"])
    before = _rows(kw_home)
    with running(service, allow_changes=True) as door:
        client = signed_in(door)
        for path in ("/", f"/?scope={SCOPE}", "/memories?query=cat", "/memories?query=cat&mode=meaning",
                     f"/memory/{mid}", "/inspect?prompt=what is my cat called", f"/inspect?prompt=cat&why_not={mid}",
                     "/sessions", "/beliefs", "/graph?q=cat", "/audit", f"/forget?id={mid}"):
            assert client.get(path).status_code == 200, path
            assert client.head(path).status_code == 200, path
    assert _rows(kw_home) == before


# -- a huge memory -----------------------------------------------------------------------------------

def test_a_huge_memory_is_shown_whole_on_its_page_only(service):
    """A chat user's 200,000-character memory made the overview (its latest writes) and every
    page that lists it as a value (a chain, a preview) carry all of it: megabytes a page."""
    huge = "start " + "blah " * 40_000 + "end"
    mid = service.remember(SCOPE, huge)
    newer = service.correct(SCOPE, mid, "short now", actor="test")
    with running(service) as door:
        client = signed_in(door)
        for path in ("/", f"/?scope={SCOPE}", f"/memory/{newer}?scope={SCOPE}", f"/forget?id={mid}"):
            page = client.get(path).text
            assert "start blah" in page and len(page) < 40_000, (path, len(page))
        whole = client.get(f"/memory/{mid}?scope={SCOPE}").text
        assert re.search(r'id="memory-text">start (blah ){40000}end</div>', whole)
