"""One message read sentence by sentence, each sentence clause by clause, into Items."""
from __future__ import annotations

import re
from typing import Optional

from ...common.errors import InvalidInput
from ...common.text import clean
from ._decisions import _decision
from ._facts import _facts
from ._opinions import _beliefs, _preferences, _third_person
from ._shapes import Item, _item, _unique
from ._skills import _inline_skill, _skill_blocks
from ._text import (_DOUBTED, _PAST, _PREAMBLE, _clauses, _plain_quotes, _sentences, _skipped, _without_code,
                    expand)

ROLES = ("user", "assistant")
MAX_TEXT_CHARS = 200_000  # extraction is best effort: the rest of a longer text is not read
MAX_SENTENCE_CHARS = 2_000  # a longer "sentence" (a run-on line, a log) is skipped, the others still read
_I = re.IGNORECASE


def extract(text: str, role: str = "user") -> list[Item]:
    """The knowledge stated in `text`, a message written by `role` ("user" or "assistant")."""
    if not isinstance(text, str):
        raise InvalidInput(f"Text to extract from must be a string, not {type(text).__name__}.")
    if role not in ROLES:
        raise InvalidInput(f"Unknown role {role!r}; choose user or assistant.")
    text = _without_code(_plain_quotes(clean(text[:MAX_TEXT_CHARS])))
    items, rest = _skill_blocks(text)
    for sentence in _sentences(rest):
        items.extend(_from_sentence(sentence, role))
    return _unique(items)


_HEDGED = re.compile(r"\b(?:think|believe|reckon|suspect|guess|feel\s+(?:that|like)|probably|likely|maybe"
                     r"|perhaps|might|possibly|may\s+be|could\s+be|seems?|apparently|convinced|opinion|imo|imho)\b", _I)


def _from_sentence(sentence: str, role: str) -> list[Optional[Item]]:
    """A sentence's items: none when it is skipped (or longer than MAX_SENTENCE_CHARS), a skill
    when it lists steps, else the items of its clauses that neither doubt nor report."""
    if len(sentence) > MAX_SENTENCE_CHARS:
        return []
    sentence = _PREAMBLE.sub("", expand(sentence.strip()))
    if not sentence or _skipped(sentence, role):
        return []
    skill = _inline_skill(sentence)
    if skill is not None:
        return [skill]
    return [item for clause in _clauses(sentence) if not _DOUBTED.search(clause)
            for item in (_ended(clause, role) if _PAST.search(clause) else _read(clause, role))]


def _read(clause: str, role: str) -> list[Optional[Item]]:
    return _facts(clause, role) if role == "assistant" else _from_clause(clause)


def _from_clause(clause: str) -> list[Optional[Item]]:
    """A user clause's items: beliefs when it hedges (and nothing else then), else a decision,
    else preferences and facts."""
    beliefs = _beliefs(clause)
    if beliefs or _HEDGED.search(clause):
        return beliefs
    decision = _decision(clause)
    if decision is not None:
        return [decision]
    return _preferences(clause) + _facts(clause, "user")


# "I used to live in Berlin", "I no longer eat meat", "I do not like tea anymore": what the clause
# says without its past marker is read as usual, and each fact or preference found is ended.
_BECOME_USED = re.compile(r"\b(?:am|is|are|was|were|be|been|being|get|gets|got|getting)\s+used\s+to\b", _I)
_NOT_ANYMORE = re.compile(r"\b(?:(?P<aux>am|is|are)\s+not|do\s+not|does\s+not\s+(?P<verb>[a-z]+))\b"
                          r"(?=.*\bany\s*more\b)", _I)


def _ended(clause: str, role: str) -> list[Optional[Item]]:
    """The facts and preferences a clause says are over, each marked `ended`; none when it
    hedges or can be read another way ("I am used to ...", a negation left over)."""
    present = _present(clause)
    if present is None or _HEDGED.search(clause):
        return []
    found = _facts(present, role) if role == "assistant" else _preferences(present) + _facts(present, "user")
    return [_item(item.kind, **item.parts, ended=True) for item in found if item is not None]


def _present(clause: str) -> Optional[str]:
    """The clause as it was true before: "used to", "no longer" and "(not) ... anymore" taken
    out; None when "used to" means accustomed or a negation is left."""
    if _BECOME_USED.search(clause):
        return None
    clause = _NOT_ANYMORE.sub(_affirmed, clause, count=1)
    clause = re.sub(r"\s*,?\s*\bany\s*more\b|\b(?:used\s+to|no\s+longer)\s+", "", clause, flags=_I)
    clause = " ".join(clause.split())
    return None if re.search(r"\b(?:not|never|no)\b", clause, _I) else clause


def _affirmed(found: re.Match) -> str:
    """ "am not" -> "am", "do not" -> "", "does not work" -> "works"."""
    return found.group("aux") or (_third_person(found.group("verb")) if found.group("verb") else "")
