"""What is true now: a changed fact or preference supersedes the older one, which is kept with
the chain, and the block marks the newer value `(now)` and the older `(earlier)`
(docs/lifecycle.md, "Duplicates reinforce, updates supersede")."""
from __future__ import annotations

import json

import pytest

from hermes_cmms import hookimpl
from hermes_cmms.common.text import UNDECODABLE
from hermes_cmms.extract import make_item

pytestmark = pytest.mark.store

SCOPE = "test:changed"


def _learned(svc, text: str) -> dict[str, str]:
    """{rendered text: id} of what learning `text` stored."""
    return {item["text"]: item["id"] for item in svc.learn(SCOPE, text)["learned"]}


def _superseded_by(svc, memory_id: str):
    return svc.store.get([memory_id], SCOPE)[memory_id].superseded_by


def _lines(svc, query: str, *words: str) -> list[str]:
    return [line for line in svc.recall(SCOPE, query).splitlines()
            if line.startswith("- ") and any(word in line for word in words)]


@pytest.mark.quick
def test_a_move_supersedes_where_the_user_lived_and_the_block_says_which_is_now(keyword_service):
    [berlin] = _learned(keyword_service, "I live in Berlin.").values()
    [lisbon] = _learned(keyword_service, "I moved from Berlin to Lisbon last month.").values()
    assert _superseded_by(keyword_service, berlin) == lisbon and _superseded_by(keyword_service, lisbon) is None
    [event] = keyword_service.store.audit_events(SCOPE, memory_id=berlin, action="supersede")
    assert json.loads(event.detail) == {"superseded_by": lisbon, "reason": "conflict"}
    assert _lines(keyword_service, "Where do I live now?", "lives in") == [
        "- fact (earlier) (via learn:learn): user lives in Berlin",
        "- fact (now) (via learn:learn): user lives in Lisbon"]


def test_a_preference_over_another_supersedes_liking_the_other(keyword_service):
    [tea] = _learned(keyword_service, "I like tea.").values()
    [coffee] = _learned(keyword_service, "I prefer coffee over tea now.").values()
    assert _superseded_by(keyword_service, tea) == coffee and _superseded_by(keyword_service, coffee) is None
    assert _lines(keyword_service, "Do I prefer tea or coffee?", "likes") == [
        "- preference (earlier) (via learn:learn): user likes tea",
        "- preference (now) (via learn:learn): user likes coffee"]


def test_what_is_over_supersedes_it(keyword_service):
    learned = {**_learned(keyword_service, "I like tea."), **_learned(keyword_service, "I live in Berlin.")}
    over = {**_learned(keyword_service, "I don't like tea anymore."),
            **_learned(keyword_service, "I used to live in Berlin, now I live in Lisbon.")}
    assert _superseded_by(keyword_service, learned["user likes tea"]) == over["user no longer likes tea"]
    assert _superseded_by(keyword_service, learned["user lives in Berlin"]) == over["user no longer lives in Berlin"]
    assert all(_superseded_by(keyword_service, new) is None for new in over.values())
    assert keyword_service.store.facts([over["user lives in Lisbon"], over["user no longer lives in Berlin"]]) == {
        over["user lives in Lisbon"]: ("user", "lives in", "Lisbon")}  # what is over holds no value now


def test_a_return_supersedes_what_said_it_was_over(keyword_service):
    [over] = _learned(keyword_service, "I no longer work at Initech.").values()
    [back] = _learned(keyword_service, "I work at Initech.").values()
    assert _superseded_by(keyword_service, over) == back


@pytest.mark.parametrize("text", [
    "I moved the meeting from Monday to Friday.", "My sister moved to Lisbon.", "Ana moved to Porto.",
    "I love walking over bridges.", "I like coffee too.", "I'm used to living in Lisbon.",
])
def test_near_misses_supersede_nothing(keyword_service, text):
    ids = {**_learned(keyword_service, "I live in Berlin."), **_learned(keyword_service, "I like tea.")}
    _learned(keyword_service, text)
    assert [_superseded_by(keyword_service, old) for old in ids.values()] == [None, None]


def test_a_change_replaces_only_in_its_own_scope(keyword_service):
    [tea] = _learned(keyword_service, "I like tea.").values()
    keyword_service.learn("test:someone-else", "I prefer coffee over tea now.")
    assert _superseded_by(keyword_service, tea) is None


class Undecodable:
    """An extractor (a plugin, or the model) whose items hold text that could not be decoded."""

    @hookimpl
    def extract(self, text):
        if text.startswith("plugin:"):
            instead = text.removeprefix("plugin: ").strip()
            return [make_item("preference", {"object": "coffee", "instead": instead} if instead != "K" else
                              {"object": f"K{UNDECODABLE}lsch"})]
        return None


def test_an_undecodable_preference_is_replaced_by_nothing_and_replaces_nothing(keyword_service):
    keyword_service.pm.register(Undecodable())
    [koelsch] = _learned(keyword_service, "plugin: K").values()
    [coffee] = _learned(keyword_service, f"plugin: K{UNDECODABLE}lsch").values()
    assert coffee != koelsch and _superseded_by(keyword_service, koelsch) is None
