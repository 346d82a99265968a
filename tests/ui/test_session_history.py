"""A session's history tells what its turns got: a one-turn `hermes -z` session shows one turn,
with the block its model was given then (Hermes' queue_prefetch after the turn, for a next turn
that never comes, recalls nothing and is never shown as a turn); a block given to a compaction's
summary is no turn's; and "run it again now" is labelled as today's answer and leaves out the
turn's own messages, which did not exist when it was recalled."""
from __future__ import annotations

import pytest

from dashboard import base, running, signed_in
from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.common.ids import shown_id
from hermes_cmms.recall.block import settled
from test_hermes_e2e import CAT, QUESTION, hermes_bin, hermes_home, llm, run  # noqa: F401 - fixtures

SCOPE = "local:default"


@pytest.mark.quick
def test_a_summary_recall_is_no_turn_and_each_turn_shows_what_it_got(keyword_service):
    svc = keyword_service
    svc.retain_turn(SCOPE, "s1", "My sister Ilse lives in Tromso.", "Noted.", source="hermes:cli")
    svc.recall(SCOPE, "where does my sister live", session_id="s1")  # turn 2's block
    svc.retain_turn(SCOPE, "s1", "where does my sister live", "In Tromso.", source="hermes:cli")
    svc.recall(SCOPE, "where does my sister live", session_id="s1", kind="summary")  # a compaction's
    settled()
    timeline = svc.session_timeline(SCOPE, "s1")
    assert [t["turn"] for t in timeline["turns"]] == [1, 2]  # no turn 3 from the summary's block
    given = timeline["turns"][1]["recalled"]
    assert given and "Ilse" in given[0]["text"] and timeline["turns"][1]["recalled_at"]
    assert svc.sessions(SCOPE)[0]["recalls"] == 1
    with pytest.raises(Exception, match="kind is one of turn, summary"):
        svc.recall(SCOPE, "sister", kind="ahead")


@pytest.mark.quick
def test_run_again_now_leaves_out_the_turns_own_messages(keyword_service):
    svc = keyword_service
    fact = svc.remember(SCOPE, "My cat is called Biscuit.")
    asked = svc.remember(SCOPE, "What is my cat called? Biscuit or not?", session_id="s1")
    plain = svc.inspect_recall(SCOPE, "What is my cat called?")
    assert asked in [line["memory_id"] for line in plain["lines"]]  # the prompt's own message ranks
    again = svc.inspect_recall(SCOPE, "What is my cat called?", leave_out=[shown_id(asked)], why_not=asked)
    assert [line["memory_id"] for line in again["lines"]] == [fact] and again["left_out"] == [asked]
    assert "left out on purpose" in again["why_not"]["verdict"]
    other = svc.remember("user:telegram:9", "What is my cat called? Another scope's.")
    counted = svc.inspect_recall(SCOPE, "What is my cat called?", leave_out=[asked, other, "f" * 32])
    assert counted["left_out"] == [asked] and counted["not_left_out"] == 2  # said, not silently dropped
    for wrong in (["garbage"], [7], ["ab"] * 51, "not a list"):
        with pytest.raises(InvalidInput):
            svc.inspect_recall(SCOPE, "What is my cat called?", leave_out=wrong)


@pytest.mark.slow
@pytest.mark.one_backend
def test_a_one_turn_hermes_session_shows_one_turn_and_a_labelled_rerun(browser, hermes_home, llm):
    from selenium.webdriver.common.by import By

    for text in (CAT, QUESTION):  # two one-turn sessions of a real Hermes CLI
        run(hermes_home, [hermes_bin(), "-z", text])
    svc = MemoryService(Settings.load(hermes_home, embedder="none"), scheduler=False)
    try:
        scope = next(s["scope"] for s in svc.scopes())
        asked = svc.sessions(scope)[0]  # the newest: the question's
        assert asked["turns"] == 1 and asked["recalls"] == 1
        with running(svc) as door:
            client = signed_in(door)
            page = client.get(f"/session/{asked['session_id']}", params={"scope": scope}).text
            assert page.count('class="turn"') == 1 and "Turn 2" not in page
            browser.get(f"{base(door)}/?token={door.token}")
            browser.get(f"{base(door)}/session/{asked['session_id']}?scope={scope}")
            turns = browser.find_elements(By.CSS_SELECTOR, "li.turn")
            assert len(turns) == 1
            given = turns[0].find_element(By.CSS_SELECTOR, ".recalled").text
            assert "what it got then" in given.lower() and "Biscuit" in given
            turns[0].find_element(By.CSS_SELECTOR, "a.rerun").click()
            label = browser.find_element(By.ID, "rerun").text
            assert "Run again now" in label and "today's store" in label and "leaving out" in label
            block = browser.find_element(By.ID, "block").text
            assert "Biscuit" in block and QUESTION not in block  # the prompt's own message is left out
    finally:
        svc.close()


@pytest.mark.quick
def test_of_two_recalls_for_a_turn_the_later_asked_is_what_it_got(keyword_service):
    """A turn's early recall (on_turn_start) that ends after the one its prompt made again (Hermes'
    prefetch, once the early one was late) is written last; the turn got the one asked last."""
    import time

    from hermes_cmms.recall import _rows as recall_events

    svc = keyword_service
    svc.retain_turn(SCOPE, "s1", "My sister lives in Tromso.", "Noted.", source="hermes:cli")
    late, given = svc.retain_turn(SCOPE, "s0", "I like tea.", "OK.")[0], svc.remember(SCOPE, "Tromso is far north.")
    now = time.time()
    recall_events.record(svc.store, SCOPE, "s1", [given], keep=100, at=now + 1.0)  # asked last, written first
    recall_events.record(svc.store, SCOPE, "s1", [late], keep=100, at=now + 0.5)  # asked first, ended late
    turns = svc.session_timeline(SCOPE, "s1")["turns"]
    assert [r["memory_id"] for r in turns[-1]["recalled"]] == [given]
