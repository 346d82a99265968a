"""Packing recalled memories: one heading a day, a paragraph a session, within the budget."""
import pytest

from hermes_cmms.common import tokens
from hermes_cmms.store.models import Memory
from hermes_cmms.recall.rank import Hit
from hermes_cmms.common.units import units
from hermes_cmms.recall.render import HEADER, ITEM_SHARE, MIN_ITEM_TOKENS, render
from hermes_cmms.common.text import content_hash

DAY = 86400.0


def _hit(content, session, at, turn=1, role="user"):
    memory = Memory(
        id=content, scope="s", tier="episodic", kind="message", role=role, content=content,
        content_hash=content_hash(content), session_id=session, turn=turn, context=None, source="",
        tags="[]", confidence=1.0, state="active", superseded_by=None, created_at=at, updated_at=at)
    return Hit(memory, 1.0)


@pytest.mark.quick
def test_one_heading_a_day_and_a_paragraph_a_session():
    hits = [_hit("Lunch was pasta", "b", 10 * DAY + 50), _hit("Breakfast was toast", "a", 10 * DAY),
            _hit("Dinner was soup", "c", 12 * DAY), _hit("The toast was burnt", "a", 10 * DAY + 1, 2)]
    block = render(hits, 200)
    assert block == "\n".join([
        HEADER, "## 1970-01-11", "- user: Breakfast was toast", "- user: The toast was burnt", "",
        "- user: Lunch was pasta", "## 1970-01-13", "- user: Dinner was soup"])
    assert tokens.count(block) <= 200


def test_the_budget_holds_for_every_size():
    hits = [_hit(f"Fact number {i} is about topic {i * 7}", f"s{i % 5}", (i % 3) * DAY + i, i)
            for i in range(40)]
    for budget in range(20, 400, 7):
        assert tokens.count(render(hits, budget)) <= budget


def test_a_neighbour_lifts_a_weak_match_above_a_lone_one(monkeypatch):
    from hermes_cmms.recall import rank as ranking
    from hermes_cmms.recall.rank import rank

    monkeypatch.setattr(ranking, "LOW_INFO_TERMS", 0)  # (these lines are all short: the lift alone)

    def memory(content, session, turn, role):
        return _hit(content, session, 0.0, turn, role).memory

    memories = {m.id: m for m in [
        memory("What did you paint?", "a", 1, "user"), memory("A sunrise over the lake", "a", 1, "assistant"),
        memory("Paint is on sale", "b", 5, "user"), memory("Unrelated", "c", 9, "user")]}
    lone_first = {"keyword": ["What did you paint?", "Paint is on sale", "A sunrise over the lake"]}
    order = [h.memory.id for h in rank(memories, lone_first, now=1.0)]
    assert order[:2] == ["What did you paint?", "A sunrise over the lake"]  # the answer beside its question


def _sentences(n, word="filler"):
    return " ".join(f"This is {word} sentence number {i} of many." for i in range(n))


def test_a_memory_that_fits_is_shown_whole():
    text = _sentences(5)  # about 55 tokens: more than the old 45-token snippet, less than the cap (75 at 600)
    block = render([_hit(text, "a", 0.0)], 600, "what about sentence number eight")
    assert block.endswith("- user: " + text)


def test_the_sentences_that_match_are_kept_when_a_memory_is_cut():
    text = f"{_sentences(30)} The locksmith said the spare key is under the blue flowerpot. {_sentences(30, 'more')}"
    block = render([_hit(text, "a", 0.0)], 600, "Where is the spare key?")
    line = block.splitlines()[-1]
    assert "The locksmith said the spare key is under the blue flowerpot." in line
    assert line.startswith("- user: This is filler sentence number 0 of many. … This is filler sentence number 29")
    assert line.endswith("This is more sentence number 0 of many. …")  # the opening, the match, around it
    assert tokens.count(line) <= 600 // ITEM_SHARE + 4  # one memory takes at most an eighth of the block


def test_a_match_far_into_a_long_memory_is_kept():
    """(The text was cut at 16 characters a token of the cap, 2,400 here, before looking.)"""
    text = f"{_sentences(100)} The locksmith said the spare key is under the blue flowerpot."
    line = render([_hit(text, "a", 0.0)], 600, "Where is the spare key?").splitlines()[-1]
    assert len(text) > 4000 and line.endswith(" The locksmith said the spare key is under the blue flowerpot.")
    assert " … " in line and tokens.count(line) <= 600 // ITEM_SHARE + 4


def test_a_memory_without_a_match_keeps_its_opening():
    text = _sentences(60)
    line = render([_hit(text, "a", 0.0)], 600, "zebra").splitlines()[-1]
    assert line.startswith("- user: This is filler sentence number 0 of many. This is filler sentence number 1")
    assert line.endswith(" …") and tokens.count(line) <= max(MIN_ITEM_TOKENS, 600 // ITEM_SHARE // 2) + 4  # the opening, in half the room


def test_a_small_budget_cuts_memories_shorter_but_keeps_the_match():
    text = f"{_sentences(12)} The spare key is under the blue flowerpot. {_sentences(12, 'more')}"
    small = render([_hit(text, "a", 0.0)], 200, "spare key")
    assert "spare key is under the blue flowerpot" in small and tokens.count(small) <= 200
    assert text not in render([_hit(text, "a", 0.0)], 200, "spare key")
    assert text in render([_hit(text, "a", 0.0)], 4000, "spare key")


def test_a_cut_memory_keeps_the_sentence_that_matched_by_meaning():
    """A sentence found by its vector (its run of sentences, units.py) shares no word with the
    question: it is kept first, before the opening."""
    text = f"{_sentences(20)} My sister marries Tom in June on the island. {_sentences(20, 'more')}"
    runs = units(text)
    matched = next(i for i, run in enumerate(runs) if "marries Tom" in run)
    hit = _hit(text, "a", 0.0)
    hit.units = (matched,)
    line = render([hit], 600, "When is the wedding?").splitlines()[-1]
    assert "My sister marries Tom in June on the island." in line and tokens.count(line) <= 600 // ITEM_SHARE + 4
    assert "marries Tom" not in render([_hit(text, "a", 0.0)], 600, "When is the wedding?")


def test_a_line_that_says_little_gives_its_place_to_one_that_says_something():
    """Found as high by every ranking, a greeting that matched by a name alone ranks below a
    line that says something (rank.LOW_INFO_TERMS); the nudge is in its explanation."""
    from hermes_cmms.recall import rank as ranking

    greeting = _hit("Kevin: Hello Kate, how are you today?", "a", 0.0, 1).memory
    saying = _hit("Kevin: I work weekends at the bakery on Mill Street near the station.", "b", 0.0, 1).memory
    memories = {m.id: m for m in (greeting, saying)}
    explain: dict = {}
    order = ranking.rank(memories, {"keyword": [greeting.id, saying.id], "vector": [saying.id, greeting.id]},
                         now=1.0, explain=explain)
    assert [h.memory.id for h in order] == [saying.id, greeting.id]
    assert explain[greeting.id]["nudges"]["few_words"] < 1.0 == explain[saying.id]["nudges"]["few_words"]


def test_few_words_counts_a_message_s_own_words_only():
    """A fact is short by nature (never scaled); the words of a speaker's name, one word or
    several, are not words the message says."""
    from hermes_cmms.recall.rank import LOW_INFO_TERMS, _few_words

    fact = _hit("Alice lives in Lisbon", "a", 0.0).memory
    fact.kind = "fact"
    assert _few_words(fact) == 1.0
    said = " ".join(f"word{i}" for i in range(LOW_INFO_TERMS - 1))
    one, two = _hit(f"Mary: {said}", "a", 0.0).memory, _hit(f"Mary Ann: {said}", "a", 0.0).memory
    assert _few_words(one) == _few_words(two) == LOW_INFO_TERMS / (LOW_INFO_TERMS + 1)
    assert _few_words(one, {"word1"}) == 1.0  # it holds a word of the query: it says what was asked
