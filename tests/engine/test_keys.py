"""Scope and session keys are injective: no two distinct ids share a key, and no literal id
reaches another id's made (escaped or shortened) key. Ordinary ids are their own key."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from db import sql
from hermes_cmms.common.text import KEY_MARK, MAX_KEY_CHARS, clean_key

# Characters the old key function treated specially, plus ordinary ones.
ODD = st.text(alphabet=st.sampled_from(["\x00", "\ud800", "\udfff", KEY_MARK, "\\", "x", "0", "u", "d", "8", "a", ":"]),
              max_size=12)
LONG = st.builds(lambda piece, n: piece * n, st.sampled_from(["a", "\\x00", KEY_MARK, "é"]),
                 st.integers(1, 400))
IDS = st.one_of(ODD, LONG, st.text(max_size=30))

# The three reported collisions: (real id, crafted literal id).
TEN_KB = "user:telegram:" + "9" * 10_000
REPORTED = [("1\x00", "1\\x00"), ("u\ud800", "u\\ud800")]


@settings(max_examples=600, deadline=None, database=None)
@given(IDS, IDS)
@example("1\x00", "1\\x00")
@example("\ud800", "\\ud800")
@example(TEN_KB, str(clean_key(TEN_KB)))
def test_distinct_ids_get_distinct_keys(a, b):
    if a != b:
        assert clean_key(a) != clean_key(b)


@pytest.mark.quick
@settings(max_examples=300, deadline=None, database=None)
@given(IDS)
def test_a_made_key_typed_in_literally_is_another_key(text):
    made = clean_key(text)
    literal = str(made)  # what an attacker would send: the key's exact characters, as an id
    if literal != text:
        assert clean_key(literal) != made
    assert len(made) <= MAX_KEY_CHARS and "\x00" not in made
    made.encode("utf-8")  # storable on both backends


def test_ordinary_keys_are_byte_identical():
    for text in ("local:default", "user:telegram:123456", "api:api_server:api-3f2c", "a\\b", "x" * MAX_KEY_CHARS,
                 "user:matrix:@ana:example.org", "é ü 日本"):
        assert clean_key(text) == text and type(clean_key(text).encode()) is bytes


def test_the_reported_shortened_key_is_not_reachable():
    short = str(clean_key(TEN_KB))
    assert len(short) < 200 and KEY_MARK in short
    assert clean_key(short) != clean_key(TEN_KB)
    assert clean_key(TEN_KB[:128] + "#" + short[-64:]) != clean_key(TEN_KB)  # the old shortened form too


def test_ids_that_used_to_collide_see_none_of_each_others_memories(keyword_service):
    pairs = [*REPORTED, (TEN_KB, str(clean_key(TEN_KB)))]
    for number, (real, crafted) in enumerate(pairs):
        keyword_service.remember(real, f"The real user's locker code is {number}0{number}.")
        keyword_service.remember(crafted, f"The crafted user's locker code is {number}9{number}.")
    for number, (real, crafted) in enumerate(pairs):
        assert [h.content for h in keyword_service.search(real, "locker code")] == [
            f"The real user's locker code is {number}0{number}."]
        assert [h.content for h in keyword_service.search(crafted, "locker code")] == [
            f"The crafted user's locker code is {number}9{number}."]
    assert len({s for (s,) in sql(keyword_service, "SELECT DISTINCT scope FROM memories")}) == 2 * len(pairs)


def test_an_odd_scope_is_flushed_and_consolidated_by_the_key_it_was_stored_under(service):
    scope, session = "user:odd:\x00\ud800", "s\x00" + "9" * 300
    service.retain_turn(scope, session, "I keep bees on the roof.", "Nice.")
    assert service.upkeep.flush_open_sessions() == 1
    assert service.store.unflushed_sessions() == []
    service.retain_turn(scope, "later\x00", "The bees swarmed in May.", "Oh no.")
    service.upkeep.drain(30.0)
    service.upkeep.consolidate_all()
    assert service.store.unconsolidated_scopes() == []
