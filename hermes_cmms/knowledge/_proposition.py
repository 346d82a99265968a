"""Reading a belief's proposition: the key two statements of the same belief share, its topic,
and its polarity (docs/beliefs.md)."""
from __future__ import annotations

import re

from ..common.text import bounded_key, clean

__all__ = ["read_proposition", "worded"]

_TOKEN = re.compile(r"\w+(?:['.\-]\w+)*")
_LEAD_DENIAL = re.compile(r"^\s*it(?: is|['’]s) not the case that\b", re.I)
DENIAL = "it is not the case that"
_LEAD_HEDGE = re.compile(r"^\s*(?:i (?:think|believe|guess|suppose|feel)|it (?:seems|appears))(?: that)?\b")
HEDGES = frozenset("probably maybe perhaps likely possibly apparently definitely certainly surely "
                   "really actually clearly".split())
ARTICLES = frozenset({"a", "an", "the"})
AUXILIARIES = frozenset("am is are was were be been has have had can could will would shall should "
                        "may might must".split())
_IRREGULAR_NOT = {"can't": "can", "cannot": "can", "won't": "will", "shan't": "shall", "ain't": "is"}
_DO = frozenset({"do", "does", "did"})
_NOT = "\0not"


def read_proposition(text: str) -> tuple[str, str, int]:
    """(proposition key, topic, polarity) of a belief's text.

    Case-folded; a leading hedge ("I think that"), hedge words ("probably", "maybe", ...) and
    articles dropped; negations ("not", "never", "no longer", "n't", "cannot") removed and
    counted (a leading "it is not the case that" too): an odd count gives polarity -1. A
    negated do re-inflects its verb ("doesn't like" reads "likes", "didn't move" reads
    "moved"). The topic is the words before the first auxiliary or verb-looking word
    ("-s"/"-ed"), else the first word."""
    text, denials = clean(text).casefold().replace("’", "'"), 0
    while _LEAD_DENIAL.match(text):
        text, denials = _LEAD_DENIAL.sub(" ", text, count=1), denials + 1
    text = _LEAD_HEDGE.sub(" ", text)
    tokens = [t for t in _TOKEN.findall(text) if t not in HEDGES and t not in ARTICLES]
    words, flips = _denegated(_expanded(tokens))
    return (bounded_key(" ".join(words)), bounded_key(" ".join(words[:_verb_at(words)])),
            -1 if (flips + denials) % 2 else 1)


def worded(text: str, polarity: int) -> str:
    """The text as a belief with this polarity reads: as written when it reads so, else denied,
    keeping its proposition ("the API is stable", -1 -> "the API is not stable"; "Alice likes
    tea", -1 -> "it is not the case that Alice likes tea")."""
    key, _, own = read_proposition(text)
    if own == polarity:
        return text
    from .extract import negate  # (its rules compile in a third of a second: a listing of beliefs needs none)

    lead = _LEAD_DENIAL.match(text)  # undo a leading denial, else "not" after the first auxiliary
    for candidate in ([text[lead.end():].strip()] if lead else []) + [negate(text)]:
        if candidate and read_proposition(candidate)[::2] == (key, polarity):
            return candidate
    return f"{DENIAL} {text}"


def _expanded(tokens: list[str]) -> list[str]:
    """Tokens with every negation split off as a _NOT marker ("isn't" -> "is", _NOT)."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        if token == "no" and tokens[i + 1:i + 2] == ["longer"]:
            out.append(_NOT)
        elif token == "longer" and i and tokens[i - 1] == "no":
            continue
        elif token in ("not", "never"):
            out.append(_NOT)
        elif token in _IRREGULAR_NOT:
            out += [_IRREGULAR_NOT[token], _NOT]
        elif token.endswith("n't") and len(token) > 3:
            out += [token[:-3], _NOT]
        else:
            out.append(token)
    return out


def _denegated(words: list[str]) -> tuple[list[str], int]:
    """The words without negations, and how many there were; a negated do is dropped and
    its verb re-inflected."""
    kept, flips, do = [], 0, None
    for i, word in enumerate(words):
        if word == _NOT:
            flips += 1
        elif word in _DO and words[i + 1:i + 2] == [_NOT]:
            do = word
        else:
            kept.append(_inflected(word, do) if do else word)
            do = None
    return kept, flips


def _inflected(verb: str, do: str) -> str:
    """The verb as it reads without do-support: does+like -> likes, did+move -> moved."""
    if do == "do":
        return verb
    if verb == "have":
        return "has" if do == "does" else "had"
    ending_y = len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou"
    if do == "does":
        return verb[:-1] + "ies" if ending_y else verb + ("es" if verb.endswith(("s", "sh", "ch", "x", "z", "o"))
                                                         else "s")
    return verb[:-1] + "ied" if ending_y else verb + ("d" if verb.endswith("e") else "ed")


def _verb_at(words: list[str]) -> int:
    """Index of the first auxiliary or verb-looking word after the first word (else 1)."""
    for i, word in enumerate(words[1:], 1):
        verbish = len(word) > 3 and (word.endswith("ed") or (
            word.endswith("s") and not word.endswith(("ss", "us", "is", "'s"))))
        if word in AUXILIARIES or verbish:
            return i
    return 1
