"""One message read sentence by sentence, each sentence clause by clause, into Items."""
from __future__ import annotations

import re
from typing import Optional

from ...common.errors import InvalidInput
from ...common.text import clean
from ._decisions import _decision
from ._facts import _facts
from ._opinions import _beliefs, _preferences
from ._shapes import Item, _unique
from ._skills import _inline_skill, _skill_blocks
from ._text import _DOUBTED, _PREAMBLE, _clauses, _plain_quotes, _sentences, _skipped, _without_code, expand

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
            for item in (_facts(clause, role) if role == "assistant" else _from_clause(clause))]


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
