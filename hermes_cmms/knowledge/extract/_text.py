"""Text preparation: plain quotes, code removed, contractions written out, sentences and
clauses split; and the guards for what is never knowledge."""
from __future__ import annotations

import re

from ...common.text import UNDECODABLE

_I = re.IGNORECASE


SECRETISH = re.compile(r"@|\[REDACTED|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,}\b"
                       r"|\d[\d\s\-]{7,}\d")
_FENCE = re.compile(r"^\s*(```|~~~).*?(?:^\s*\1\s*$|\Z)", re.M | re.S)
_CONTRACTIONS = {
    "i'm": "I am", "i've": "I have", "i'd": "I would", "i'll": "I will", "we're": "we are",
    "we've": "we have", "we'll": "we will", "we'd": "we would", "let's": "let us",
    "don't": "do not", "doesn't": "does not", "didn't": "did not", "can't": "cannot",
    "won't": "will not", "isn't": "is not", "aren't": "are not", "wasn't": "was not",
    "weren't": "were not", "haven't": "have not", "hasn't": "has not", "shouldn't": "should not",
    "wouldn't": "would not", "couldn't": "could not", "it's": "it is", "that's": "that is",
    "there's": "there is", "he's": "he is", "she's": "she is", "what's": "what is",
    "you're": "you are", "they're": "they are", "i'ma": "I am going to", "ain't": "is not"}
_CONTRACTION = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in _CONTRACTIONS) + r")\b", _I)


def _plain_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def _without_code(text: str) -> str:
    """Fenced code blocks removed (each leaves a blank line, so sentences do not join)."""
    return _FENCE.sub("\n", text)


_NOUN_IS = re.compile(r"\b((?:my|our)\s+[\w-]+)'s\s+(?=(?-i:[A-Z0-9])|an?\b|the\b|from\b|in\b)", _I)


def expand(sentence: str) -> str:
    """Contractions written out ("I'm" -> "I am", "don't" -> "do not", "my name's" -> "my name
    is"), keeping initial capitals."""
    def full(match: re.Match) -> str:
        word = _CONTRACTIONS[match.group(0).lower()]
        return word[:1].upper() + word[1:] if match.group(0)[:1].isupper() else word
    return _NOUN_IS.sub(r"\1 is ", _CONTRACTION.sub(full, sentence))


_ABBREVIATIONS = {"e.g", "i.e", "mr", "mrs", "ms", "dr", "st", "vs", "etc", "approx", "jr", "sr",
                  "inc", "ltd", "no", "fig", "prof"}
_CONTINUES = re.compile(r"^(?:then|next|finally|lastly|after\s+that|afterwards)\b", _I)
_STARTS_STEPS = re.compile(r"^(?:here\s+is\s+|here's\s+)?(?:how\s+to|(?:the\s+)?steps\s+to|to|first)\b", _I)


def _sentences(text: str) -> list[str]:
    """Lines split at sentence ends, not after an abbreviation or a list number ("2."); a
    "Then ..." sentence after "To X, first ..." is kept with it."""
    out: list[str] = []
    for line in text.splitlines():
        merged: list[str] = []
        for piece in re.split(r"(?<=[.!?])\s+", line.strip()):
            if merged and (_no_break(merged[-1]) or (_CONTINUES.match(piece) and _STARTS_STEPS.match(merged[-1]))):
                merged[-1] += " " + piece
            elif piece:
                merged.append(piece)
        out.extend(merged)
    return out


def _no_break(previous: str) -> bool:
    if previous.endswith(("!", "?")):
        return False
    last = previous.rsplit(None, 1)[-1].rstrip(".").lower()
    return last in _ABBREVIATIONS or last.isdigit() or (len(last) == 1 and last.isalpha())


# -- what is never knowledge --------------------------------------------------------------------

_QUESTION = re.compile(r"^(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|"
                       r"had|what|where|when|why|who|whom|whose|which|how(?!\s+to\b)|may|must|any\s+idea)\b", _I)
_NOT_KNOWLEDGE = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|hypothetically|assuming|in\s+case|whether"  # hypotheticals
    r"|wonder|wondering|wish|hope|hoping|would\s+(?:love|like|prefer|rather)|want\s+to|wanna"  # wishes
    r"|can\s+you|could\s+you|would\s+you|will\s+you|please|remind\s+me|tell\s+me|let\s+me\s+know"
    r"|help\s+me|show\s+me|give\s+me|I\s+need\s+you|I\s+want\s+you|make\s+sure)\b", _I)  # requests
_DOUBTED = re.compile(
    r"\b(?:do\s+not\s+know|did\s+not\s+know|no\s+idea|no\s+clue|not\s+sure|unsure|not\s+certain"
    r"|do\s+not\s+remember|cannot\s+remember|can\s+not\s+remember|forgot|forget"  # doubts
    r"|said|says|told|tells|asked|claims?|claimed|according\s+to|heard|reportedly"  # someone else's words
    r"|formerly|previously|pretend|joking|kidding|sarcasm)\b", _I)
_PAST = re.compile(r"\b(?:used\s+to|no\s+longer|any\s*more)\b", _I)  # what was true and is no longer
_CODE = re.compile(r"[`{}]|=>|==|!=|\w\(\)|\s=\s|\w=\w|;\s*$|^\s*(?:\$|>>>|#include|def\s|class\s|import\s)")
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours|ourselves)\b", _I)
_PREAMBLE = re.compile(r"^(?:(?:please\s+)?(?:remember|note|keep\s+in\s+mind|bear\s+in\s+mind)\s+(?:that\s+)?"
                       r"|(?:fyi|btw|by\s+the\s+way|just\s+so\s+you\s+know|for\s+the\s+record|for\s+context)"
                       r"\s*[,:-]?\s+)", _I)


def _skipped(sentence: str, role: str) -> bool:
    """Questions, hypotheticals, wishes, requests, code, text that could not be decoded (a
    cut-off name or place is no fact); for the assistant, anything in the first person.
    (Doubts, reported words and the past are ruled out clause by clause.)"""
    return (sentence.endswith("?") or bool(_QUESTION.match(sentence)) or bool(_NOT_KNOWLEDGE.search(sentence))
            or bool(_CODE.search(sentence)) or UNDECODABLE in sentence
            or (role == "assistant" and bool(_FIRST_PERSON.search(sentence))))


# -- clauses -----------------------------------------------------------------------------------

_VERB_WORDS = ("lives?|works?|stud(?:y|ies)|teach(?:es)?|grew|was|moved|is|am|comes?|graduated|owns?|drives?"
               "|speaks?|uses?|plays?|has|have|loves?|likes?|hates?|enjoys?|prefers?")
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+but\s+|,\s+and\s+(?=I\b|my\b)|\s+and\s+(?=I\b)|,\s+so\s+|\s+so\s+(?=I\b)"
                           r"|,\s+(?:and\s+)?(?=now\s)|\s+and\s+(?=now\s+I\b)"
                           r"|,\s+(?:though|although)\s+"
                           r"|\s+-\s+|\s+—\s+", _I)
_FILLER = re.compile(r"^(?:and|but|so|also|well|oh|yeah|yes|ok|okay|actually|honestly|anyway|now|currently"
                     r"|nowadays|these\s+days|plus|still|at\s+the\s+moment|right\s+now|personally)\b\s*,?\s*", _I)


_CARRIED = re.compile(rf"^(?-i:(?:{_VERB_WORDS}|hate|dislike|enjoy|adore|prefer|cannot\s+stand)\b)")


def _clauses(sentence: str) -> list[str]:
    """The sentence's main clauses, each without leading fillers ("Honestly, ...", "but now ...");
    a clause without a subject after one starting with "I" gets it ("I love tea but hate coffee")."""
    clauses: list[str] = []
    for clause in _CLAUSE_BREAK.split(sentence.rstrip(" .!")):
        while (stripped := _FILLER.sub("", clause, count=1)) != clause:
            clause = stripped
        if clauses and re.match(r"^I\s", clauses[0], _I) and _CARRIED.match(clause):
            clause = f"I {clause}"
        if clause:
            clauses.append(clause)
    return clauses
