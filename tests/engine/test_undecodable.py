"""Text that could not be decoded (a lone surrogate, as Python's surrogateescape keeps a byte that
is not UTF-8, or U+FFFD, as errors="replace" leaves it) is kept, as U+FFFD, and never cuts a
fact short nor replaces one (docs/extraction.md, "Text that could not be decoded")."""
from __future__ import annotations

import pytest

from hermes_cmms.common.text import UNDECODABLE, clean
from hermes_cmms.extract import extract

KOELN = "I live in K\udcf6ln."  # "I live in Köln." in Latin-1, read as UTF-8 with surrogateescape


@pytest.mark.quick
def test_an_undecodable_character_is_kept_as_the_replacement_character():
    assert clean(KOELN) == f"I live in K{UNDECODABLE}ln."  # never "K?ln.", which reads as a question
    assert clean("a \ud83d\ude00 b \ud800 c\x00") == f"a \U0001f600 b {UNDECODABLE} c"  # a pair is its character


@pytest.mark.parametrize("text", [KOELN, clean(KOELN), "I moved to M\udcfcnchen in May.", "My name is Ren\ufffd."])
def test_a_sentence_that_could_not_be_decoded_gives_no_fact(text):
    assert extract(text) == []


def test_the_other_sentences_of_the_message_still_give_theirs():
    items = extract("I live in K\udcf6ln. I work at Google. I love green tea.")
    assert sorted(item.text for item in items) == ["user likes green tea", "user works at Google"]


def test_a_list_of_steps_that_could_not_be_decoded_gives_no_skill():
    assert [item.kind for item in extract("How to deploy:\n1. run the tests\n2. push the image")] == ["skill"]
    assert extract("How to deploy:\n1. run the t\ufffdsts\n2. push the image") == []


@pytest.mark.store
def test_an_undecodable_fact_supersedes_none_and_a_clean_one_supersedes_both(keyword_service):
    lisbon = keyword_service.remember_fact("s", "user", "lives in", "Lisbon")
    koeln = keyword_service.remember_fact("s", "user", "lives in", "K\udcf6ln")
    rows = keyword_service.store.get([lisbon, koeln], "s")
    assert (rows[koeln].content, rows[lisbon].superseded_by) == (f"user lives in K{UNDECODABLE}ln", None)
    porto = keyword_service.remember_fact("s", "user", "lives in", "Porto")
    rows = keyword_service.store.get([lisbon, koeln], "s")
    assert [rows[lisbon].superseded_by, rows[koeln].superseded_by] == [porto, porto]


@pytest.mark.store
def test_an_undecodable_note_replaces_no_close_note(service):
    lisbon = service.remember("s", "Grandma's garden in Lisbon has three lemon trees.")
    service.upkeep.drain(30.0)
    munich = service.remember("s", "Grandma's garden in M\udcfcnchen has three lemon trees.")
    rows = service.store.get([lisbon, munich], "s")
    assert rows[munich].content == f"Grandma's garden in M{UNDECODABLE}nchen has three lemon trees."
    assert rows[lisbon].superseded_by is None  # as close as a clean edit, which would replace it
