"""Time words of a question read as spans of time, and recall ranking what was said then higher."""
from datetime import datetime, timezone

import pytest

from hermes_cmms.recall import when
from hermes_cmms.store.models import Memory
from hermes_cmms.recall.rank import rank
from hermes_cmms.common.text import content_hash

NOW = datetime(2023, 10, 23, 15, 0, tzinfo=timezone.utc).timestamp()


def days(question: str) -> list[tuple[str, str]]:
    day = lambda t: datetime.fromtimestamp(t, timezone.utc).date().isoformat()  # noqa: E731
    return [(day(a), day(b)) for a, b in when.spans(question, NOW)]


@pytest.mark.parametrize("question, expected", [
    ("What painting did Mel show me on October 13, 2023?", [("2023-10-13", "2023-10-15")]),
    ("What did Gina find on 1 February, 2023?", [("2023-02-01", "2023-02-03")]),
    ("notes from 2023-05-08 please", [("2023-05-08", "2023-05-10")]),
    ("what did I say on the 3rd of March", [("2023-03-03", "2023-03-05")]),  # the latest 3 March
    ("what happened on Dec 24", [("2022-12-24", "2022-12-26")]),  # not one still to come
    ("When did we go camping in June?", [("2023-06-01", "2023-07-08")]),  # told up to a week after
    ("plans made in December", [("2022-12-01", "2023-01-08")]),
    ("How often did I swim in 2022?", [("2022-01-01", "2023-01-15")]),
    ("what did I say yesterday", [("2023-10-22", "2023-10-24")]),
    ("the film from three weeks ago", [("2023-09-27", "2023-10-09")]),
    ("What did we decide last month?", [("2023-08-23", "2023-09-25")]),
])
@pytest.mark.quick
def test_time_words_become_spans(question, expected):
    assert days(question) == expected


@pytest.mark.parametrize("question", [
    "What is the May Day parade?", "Who is April?", "I may go", "Call 2023 people", "on 31 February 2023",
    "What did Caroline paint?"])
def test_words_that_are_not_times_give_no_span(question):
    assert when.spans(question, NOW) == []


@pytest.mark.parametrize("question", [
    "99999999999 days ago", "800000 years ago", "9" * 5000 + " days ago", "on 5 \u017fept", "la\u017ft week",
    "\u017fix days ago", "thi\u017f year", "th\u0131s week", "f\u0131ve days ago", "th\u0130s year"])
def test_hostile_time_words_never_raise(question):
    """(Each raised before: OverflowError, ValueError or KeyError; re.I matches "\u017f" as "s".)"""
    assert isinstance(when.spans(question, NOW), list)


def test_unicode_digits_and_the_long_s_read_as_their_ascii_forms():
    assert days("\u0661\u0662 days ago") == days("12 days ago") != []
    assert days("what happened on 5 \u017fept") == [("2023-09-05", "2023-09-07")]
    assert days("f\u0131ve days ago") == days("five days ago") != []


def test_a_query_whose_dates_cannot_be_read_still_recalls(keyword_service):
    keyword_service.retain_turn("s", "t", "The lighthouse keeper is called Ada.", "ok")
    hits = keyword_service.search("s", "lighthouse keeper 800000 days ago, la\u017ft week")
    assert hits and hits[0].content.startswith("The lighthouse")


def test_a_date_read_once_is_not_read_again_as_a_month():
    assert days("in May 2023, on 8 May 2023") == [("2023-05-08", "2023-05-10"), ("2023-05-01", "2023-06-08")]


def _memory(content: str, at: float) -> Memory:
    return Memory(id=content, scope="s", tier="episodic", kind="message", role="user", content=content,
                  content_hash=content_hash(content), session_id=content, turn=1, context=None, source="",
                  tags="[]", confidence=1.0, state="active", superseded_by=None, created_at=at, updated_at=at)


def test_a_memory_said_in_the_named_span_ranks_first():
    said_then = _memory("We painted the fence", datetime(2023, 10, 13, tzinfo=timezone.utc).timestamp())
    said_later = _memory("We painted the shed", datetime(2023, 10, 20, tzinfo=timezone.utc).timestamp())
    memories = {m.id: m for m in (said_then, said_later)}
    rankings = {"keyword": [said_later.id, said_then.id]}
    assert [h.memory.id for h in rank(memories, rankings, now=NOW)][0] == said_later.id
    during = when.spans("What did we paint on October 13?", NOW)
    assert [h.memory.id for h in rank(memories, rankings, now=NOW, during=during)][0] == said_then.id
