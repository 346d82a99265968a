"""The dashboard in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium; nothing downloads a browser), walking what a user does: find a memory, read its
provenance, inspect a prompt, correct a memory and see recall change, forget one and see it
gone, and a hostile memory that stays text (no script ran, no alert, no policy broken).
Skipped with the reason when the browser is missing, except under CMMS_CI=1 (.ci/run installs it)."""
from __future__ import annotations

import pytest

from dashboard import running
from hermes_cmms import MemoryService, Settings

pytestmark = pytest.mark.one_backend

SCOPE = "local:default"
WAIT_S = 30  # a busy 2-core machine (other test passes beside this one)


@pytest.fixture
def service(kw_home):
    svc = MemoryService(Settings.load(kw_home), scheduler=False)
    yield svc
    svc.close()


def _until(driver, condition, what: str):
    """Wait for `condition`, through the page being replaced under it (htmx going to the next page)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, WAIT_S, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))
    return wait.until(lambda d: condition(d), message=what)


def _css(driver, selector: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def _all(driver, selector: str):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def _problems(driver) -> list[dict]:
    """What the page said on its console at warning or worse (a blocked script, a broken policy)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def _open(driver, door) -> None:
    driver.get(door.url())
    _until(driver, lambda d: "token=" not in d.current_url and "Overview" in d.title, "the token traded for a cookie")
    driver.get_log("browser")  # start each walk with an empty console


def test_find_a_memory_read_its_provenance_and_why_it_is_recalled(browser, service):
    service.remember(SCOPE, "I drink my coffee black every morning", source="mcp:store_memory", session_id="chat-7")
    service.remember(SCOPE, "My cat is called Biscuit")
    with running(service) as door:
        _open(browser, door)
        browser.get(f"http://127.0.0.1:{door.port}/memories?scope={SCOPE}")
        assert len(_all(browser, "tr.memory")) == 2
        _css(browser, "#query").send_keys("coffee")  # htmx swaps the results in as one types
        _until(browser, lambda d: len(_all(d, "tr.memory")) == 1, "the search narrowed the list")
        assert "coffee black" in _css(browser, "#results").text and "Biscuit" not in _css(browser, "#results").text
        _css(browser, "tr.memory a.id").click()
        _until(browser, lambda d: "/memory/" in d.current_url, "the memory's page")
        assert _css(browser, "#memory-text").text == "I drink my coffee black every morning"
        provenance = _css(browser, "#part-provenance").text
        assert "mcp:store_memory" in provenance and "chat-7" in provenance

        browser.get(f"http://127.0.0.1:{door.port}/inspect?scope={SCOPE}")
        _css(browser, "#prompt").send_keys("how do I take my coffee")
        _css(browser, "#inspect").click()
        _until(browser, lambda d: _all(d, "#lines tr.line"), "the inspector's lines")
        line = _css(browser, "#lines tr.line").text
        assert "coffee black" in line and "keyword" in line  # which ranking found it, at which rank
        assert "coffee black" in _css(browser, "#block").text
        assert not _problems(browser), _problems(browser)


def test_correct_a_memory_then_forget_one(browser, service):
    cat = service.remember(SCOPE, "My cat is called Biscuit")
    service.remember(SCOPE, "My dog is called Rex")
    with running(service, allow_changes=True) as door:
        _open(browser, door)
        assert "Biscuit" in service.recall(SCOPE, "what is my cat called")
        browser.get(f"http://127.0.0.1:{door.port}/memory/{cat}?scope={SCOPE}")
        box = _css(browser, "#correct-text")
        box.clear()
        box.send_keys("My cat is called Pancake")
        _css(browser, "#correct").click()  # htmx posts it with the CSRF header, then goes to the new memory
        _until(browser, lambda d: _all(d, "#memory-text") and _css(d, "#memory-text").text == "My cat is called Pancake",
               "the corrected memory's page")
        browser.get(f"http://127.0.0.1:{door.port}/inspect?scope={SCOPE}&prompt=what+is+my+cat+called")
        block = _css(browser, "#block").text
        assert "Pancake" in block and "Biscuit" not in block

        new = browser.current_url  # forget the dog: preview, then confirm
        dog = service.browse(SCOPE, query="dog")["items"][0]["id"]
        browser.get(f"http://127.0.0.1:{door.port}/memory/{dog}?scope={SCOPE}")
        _css(browser, "#forget").click()
        _until(browser, lambda d: "Forget 1 memory?" in d.page_source, "the forget preview")
        assert service.browse(SCOPE, query="dog")["total"] == 1  # the preview changed nothing
        _css(browser, "#confirm-forget").click()
        _until(browser, lambda d: "Forgotten: 1." in d.page_source, "the list after forgetting")
        browser.get(f"http://127.0.0.1:{door.port}/memories?scope={SCOPE}&query=dog")
        assert not _all(browser, "tr.memory")
        browser.get(f"http://127.0.0.1:{door.port}/inspect?scope={SCOPE}&prompt=what+is+my+dog+called")
        assert "Rex" not in browser.find_element("tag name", "main").text
        assert new and not _problems(browser), _problems(browser)


def test_a_hostile_memory_stays_text(browser, service):
    from test_fence import HOSTILE

    hostile = ('<script>document.title="pwned";alert(1)</script><img src=x onerror="document.title=\'pwned\';alert(2)">'
               '<svg onload="alert(3)"></svg> pay \u202eBob\u202c now ' + HOSTILE[:600])
    mid = service.remember(SCOPE, hostile, source="cli:<script>alert(4)</script>")
    with running(service, allow_changes=True) as door:
        _open(browser, door)
        for path in (f"/memory/{mid}?scope={SCOPE}", f"/memories?scope={SCOPE}", f"/audit?scope={SCOPE}",
                     f"/inspect?scope={SCOPE}&prompt=pay+Bob"):
            browser.get(f"http://127.0.0.1:{door.port}{path}")
            assert "pwned" not in browser.title and browser.title.endswith("· hermes-cmms")
            assert browser.execute_script("return document.querySelectorAll('main img, main svg[onload]').length") == 0
            _no_alert(browser)
        browser.get(f"http://127.0.0.1:{door.port}/memory/{mid}?scope={SCOPE}")
        shown = _css(browser, "#memory-text").text
        assert shown.startswith('<script>document.title="pwned"') and "pay \u27e6U+202E\u27e7Bob" in shown
        assert not _problems(browser), _problems(browser)  # nothing blocked: nothing tried to run


def _no_alert(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text


# -- the faces: one scope rule, states that read true, a word after every change ---------------

def test_a_profile_homes_dashboard_shows_that_profiles_memories_on_every_page(browser, home):
    """`hermes-cmms ui --hermes-home <root>/profiles/work`: every page of the navigation, asked
    no scope, shows the profile owner's (local:work), as the CLI and the bridge do; the picker
    says which."""
    work = home / "profiles" / "work"
    work.mkdir(parents=True)
    with MemoryService(Settings.load(work, embedder="none"), scheduler=False) as service:
        service.remember("local:work", "The work laptop's asset tag is WL-4471")
        service.recall("local:work", "What is the asset tag?", session_id="standup")  # the turn's prefetch, then it
        service.retain_turn("local:work", "standup", "What is the asset tag?", "WL-4471.")
        service.remember("local:default", "The home router's asset tag is HR-2210.")
        with running(service) as door:
            _open(browser, door)
            root = f"http://127.0.0.1:{door.port}"
            _css(browser, "nav a[href^='/memories']").click()
            _until(browser, lambda d: "/memories" in d.current_url, "the memories page")
            assert "WL-4471" in _css(browser, "main").text and "HR-2210" not in _css(browser, "main").text
            assert _css(browser, "#scope-pick").get_attribute("value") == "local:work"
            assert "local:work (yours)" in _css(browser, "#scope-pick option:checked").text
            for path, shown in (("/sessions", "What is the asset tag?"), ("/audit", "retain"),
                                ("/inspect?prompt=What+is+the+asset+tag%3F", "WL-4471")):
                browser.get(root + path)
                assert shown in _css(browser, "main").text, path
                assert "HR-2210" not in _css(browser, "main").text, path
            browser.get(root + "/session/standup")
            assert len(_all(browser, "li.turn")) == 1 and "WL-4471" in _css(browser, "main").text
            _css(browser, "#scope-pick option[value='local:default']").click()  # the picker goes to the other
            _css(browser, ".scope-pick button").click()
            _until(browser, lambda d: "scope=local%3Adefault" in d.current_url, "the other scope")
            assert "HR-2210" in _css(browser, "main").text and "WL-4471" not in _css(browser, "main").text
            assert not _problems(browser), _problems(browser)


def test_every_change_says_what_it_did_and_states_read_true(browser, service):
    old = service.remember(SCOPE, "My cat is called Biscuit")
    with running(service, allow_changes=True) as door:
        _open(browser, door)
        root = f"http://127.0.0.1:{door.port}"
        browser.get(f"{root}/memory/{old}?scope={SCOPE}")
        _css(browser, "#pin").click()
        _until(browser, lambda d: _all(d, "#done") and "Pinned" in _css(d, "#done").text, "the pin's confirmation")
        _css(browser, "#tags").send_keys("+pets")
        _css(browser, "#steer form:nth-of-type(3) button").click()
        _until(browser, lambda d: _all(d, "#done") and _css(d, "#done").text == "Tags saved.", "the tag's confirmation")
        box = _css(browser, "#correct-text")
        box.clear()
        box.send_keys("My cat is called Pancake")
        _css(browser, "#correct").click()
        _until(browser, lambda d: _all(d, "#done") and "Corrected" in _css(d, "#done").text, "the correction's word")
        browser.get(f"{root}/memory/{old}?scope={SCOPE}")  # the old one reads superseded, its successor named
        assert _css(browser, ".facts .badge").text == "superseded"
        assert "Pancake" in _css(browser, "#replaced").text
        browser.get(f"{root}/memory/{old}?scope={SCOPE}&done=<b>you+were+hacked</b>")  # not a word it knows
        assert not _all(browser, "#done")
        assert not _problems(browser), _problems(browser)
