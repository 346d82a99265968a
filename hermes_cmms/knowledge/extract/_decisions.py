"""Decisions: "we went with Postgres because ...", "let's use uv", "decision: ship on Friday"."""
from __future__ import annotations

import re
from typing import Optional

from ._objects import _BAD_START, _YOU
from ._shapes import Item, _item
from ._text import _FILLER

_I = re.IGNORECASE


_WHO = r"(?:I|we|the\s+team|our\s+team)\s+(?:(?:have|had|finally|just|eventually|ultimately|all|both|already)\s+)*"
_DECISIONS = (  # (pattern, whether the verb belongs to the choice)
    (re.compile(rf"^{_WHO}decided\s+(?:to\s+|on\s+|that\s+(?:we|I)\s+(?:will|would|should|are\s+going\s+to"
                r"|am\s+going\s+to|must)\s+)(?P<choice>.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:decided\s+against|chose\s+not\s+to|decided\s+not\s+to)\s+(?P<choice>.+)$", _I), "not"),
    (re.compile(rf"^{_WHO}(?:(?:went|are\s+going|am\s+going|will\s+go|have\s+gone|decided\s+to\s+go)\s+with"
                r"|settled\s+on|chose|chosen|picked(?!\s+up\b)|selected|opted\s+for|agreed\s+(?:on|to)"
                r"|(?:are|am)\s+sticking\s+with|will\s+stick\s+with)\s+(?P<choice>.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:will|are\s+going\s+to|am\s+going\s+to)\s+(?P<choice>(?:use|adopt|switch\s+to"
                r"|migrate\s+to)\s+.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:are|am)\s+(?P<choice>(?:switching|migrating|moving)\s+to\s+.+)$", _I), "switching"),
    (re.compile(r"^(?:going|decided\s+to\s+go)\s+with\s+(?P<choice>.+)$", _I), False),
    (re.compile(r"^let\s+us\s+(?:go\s+with|stick\s+with|settle\s+on|pick|choose|opt\s+for)\s+(?P<choice>.+)$", _I),
     False),
    (re.compile(r"^let\s+us\s+(?P<choice>(?:use|switch\s+to|migrate\s+to|adopt)\s+.+)$", _I), False),
    (re.compile(r"^(?:the|our|my)\s+(?:final\s+)?decision\s+(?:is|was)\s*:?\s+(?:to\s+)?(?P<choice>.+)$", _I), False),
    (re.compile(r"^(?:final\s+)?(?:decision|decided)\s*:\s*(?:to\s+)?(?P<choice>.+)$", _I), False),
)
_REASON = re.compile(r"\s*,?\s+(?:because|since|due\s+to|given\s+that|so(?:\s+that)?)\s+|\s*,\s*as\s+|\s+[-—]\s+", _I)
_VAGUE_CHOICE = re.compile(r"^(?:not\s+)?(?:\w+(?:\s+(?:to|with|on|for))?\s+)?(?:it|that|this|them|one|so)$", _I)
_ALTERNATIVE = re.compile(r"\s+(?:over|instead\s+of|rather\s+than)\s+.*$", _I)


_LEAD_PHRASE = re.compile(r"^(?:[\w'-]+\s+){0,4}[\w'-]+,\s+")


def _decision(sentence: str) -> Optional[Item]:
    """A decision stated by the sentence, possibly after a short lead-in ("After a long debate, ...")."""
    sentence = sentence.rstrip(" .!")
    for clause in (sentence, _FILLER.sub("", sentence, count=1), _LEAD_PHRASE.sub("", sentence, count=1)):
        for pattern, prefix in _DECISIONS:
            found = pattern.match(clause)
            if found:
                return _decided(found.group("choice"), prefix)
    return None


_LIGHT_VERB = re.compile(r"^(?:to\s+)?(?:go\s+with|stick\s+with|settle\s+on|opt\s+for|pick|choose)\s+", _I)
_GERUNDS = {"switching": "switch", "migrating": "migrate", "moving": "move"}


def _decided(text: str, prefix) -> Optional[Item]:
    choice, _, reason = (part.strip(" ,.") for part in _split_once(_REASON, text))
    choice = _ALTERNATIVE.sub("", _LIGHT_VERB.sub("", re.sub(r"^to\s+", "", choice, flags=_I))).strip(" ,.")
    if _BAD_START.match(choice):
        return None
    if prefix == "switching":
        verb, _, rest = choice.partition(" ")
        choice = f"{_GERUNDS[verb.lower()]} {rest}"
    elif prefix:
        choice = f"{prefix} {choice}"
    if (not choice or len(choice.split()) > 14 or _VAGUE_CHOICE.match(choice)
            or _YOU.search(choice) or len(reason.split()) > 25):
        return None
    return _item("decision", choice=choice, reason=reason or None)


def _split_once(pattern: re.Pattern, text: str) -> tuple[str, str, str]:
    found = pattern.search(text)
    return (text[:found.start()], found.group(0), text[found.end():]) if found else (text, "", "")
