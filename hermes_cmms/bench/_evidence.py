"""Is an evidence turn really in the injected context? The checks of ../shared/bench/locomo_recall.py.

A context is read line by line (each line as its set of normalised words). For one evidence turn:
  lenient  its opening (first 60 normalised characters) is somewhere in the context;
  cover    the largest share of its content words that one line holds;
  words    cover >= 0.8 (a turn cut down to its opening does not count);
  key      >= 80% of the content words of its answer-bearing sentence (the sentence sharing most
           content words with the gold answer, else with the question) are on one line.
Content words: normalised words longer than two letters that are not on the stop list below.
"""
from __future__ import annotations

import re

from ._drive import evidence_in, norm

STRICT = 0.8  # share of the content words one line must hold
_STOP = frozenset(
    "a an the and or but if of to in on at for with by from as is are was were be been being it its "
    "this that these those i you he she we they me him her us them my your his our their what which who "
    "whom when where why how do does did have has had not no so just very too also can could would should "
    "will shall may might must there here then than about into over after before up down out off again".split())
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def content_words(text: str) -> set[str]:
    return {w for w in norm(text).split() if len(w) > 2 and w not in _STOP}


def key_sentence(turn: str, answer: str, question: str) -> set[str]:
    """Content words of the turn's sentence sharing most content words with the answer, then
    with the question (the first such sentence on a tie); the whole turn's if none shares any."""
    sentences = [words for words in map(content_words, _SENTENCE_END.split(turn)) if words]
    for probe in (content_words(answer), content_words(question)):
        best = max(sentences, key=lambda words: len(words & probe), default=set())
        if best & probe:
            return best
    return content_words(turn)


def context_lines(context: str) -> list[set[str]]:
    """Each non-blank line of the context as its set of normalised words."""
    return [set(norm(line).split()) for line in context.splitlines() if line.strip()]


def most_on_one_line(want: set[str], lines: list[set[str]]) -> int:
    return max((len(want & words) for words in lines), default=0)


def check(turn: str, answer: str, question: str, context: str) -> dict:
    """The lenient, cover and key checks of one evidence turn against one context."""
    lines = context_lines(context)
    lenient = evidence_in(norm(context), turn)
    want, key = content_words(turn), key_sentence(turn, answer, question)
    cover = most_on_one_line(want, lines) / len(want) if want else float(lenient)
    return {"lenient": lenient, "cover": cover,
            "key": most_on_one_line(key, lines) >= STRICT * len(key) if key else lenient}
