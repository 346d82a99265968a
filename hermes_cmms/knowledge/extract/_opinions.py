"""Opinions: preferences ("I love tea", "my favourite band is ...") and beliefs ("I think the
API is flaky"), a belief's hedge and negation folded into its confidence and polarity."""
from __future__ import annotations

import re
from typing import Optional

from ._objects import _YOU, _object
from ._shapes import Item, _item
from ._text import _FILLER, SECRETISH

_I = re.IGNORECASE


# -- preferences -------------------------------------------------------------------------------

_ADV = (r"(?:really|also|just|absolutely|totally|genuinely|actually|still|kind\s+of|kinda|sort\s+of|do|truly"
        r"|especially|particularly|usually|generally|definitely|honestly|quite|always|much|simply|personally"
        r"|secretly|mostly|very\s+much|so|seriously|now)")
_LIKE = re.compile(rf"^I\s+(?:{_ADV}\s+)*(?:like|love|enjoy|adore|prefer|am\s+(?:{_ADV}\s+)*into"
                   r"|am\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+)?fan\s+of"
                   r"|am\s+(?:very\s+|really\s+)?fond\s+of"
                   r"|am\s+(?:obsessed\s+with|crazy\s+about|passionate\s+about))\s+(?P<object>.+)$", _I)
_FAN = re.compile(r"^I\s+am\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+)?"
                  r"(?P<object>[\w'-]+(?:\s+[\w'-]+){0,2}?)\s+fan$", _I)
_DISLIKE = re.compile(rf"^I\s+(?:{_ADV}\s+)*(?:hate|dislike|detest|loathe|despise|cannot\s+stand|can\s+not\s+stand"
                      rf"|do\s+not\s+(?:{_ADV}\s+)*(?:like|enjoy|love|care\s+for)|never\s+(?:like|enjoy)"
                      r"|am\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|am\s+not\s+(?:really\s+)?(?:into|fond\s+of))"
                      r"\s+(?P<object>.+)$", _I)
_FAVOURITE = re.compile(r"^my\s+(?:all[-\s]time\s+|absolute\s+|very\s+)?(?P<least>least\s+)?favou?rite\s+"
                        r"(?P<what>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:is|are)\s+(?P<object>.+)$", _I)
_IS_FAVOURITE = re.compile(r"^(?P<object>[^\s,;][^,;]{0,40}?)\s+(?:is|are)\s+my\s+(?:all[-\s]time\s+|absolute\s+)?"
                           r"(?P<least>least\s+)?favou?rite\b(?:\s+(?P<what>[\w-]+(?:\s+[\w-]+){0,2}))?$", _I)
_COMPARED = re.compile(r"\s+(?P<how>over|to|rather\s+than|instead\s+of|more\s+than|better\s+than)\s+(?P<other>.*)$", _I)
_PREFER = re.compile(rf"^I\s+(?:{_ADV}\s+)*prefer\b", _I)
# "I switched from tea to coffee": the new one is liked instead of the old
_SWITCHED = re.compile(r"^I\s+(?:have\s+)?(?:just\s+|recently\s+|finally\s+|now\s+)?switched\s+"
                       r"from\s+(?P<other>.+?)\s+to\s+(?P<object>.+)$", _I)


def _preferences(clause: str) -> list[Optional[Item]]:
    for pattern, polarity in ((_DISLIKE, -1), (_LIKE, 1), (_FAN, 1), (_SWITCHED, 1)):
        found = pattern.match(clause)
        if found:
            return _preference(clause, found, polarity)
    return _favourite(clause)


def _preference(clause: str, found: re.Match, polarity: int) -> list[Optional[Item]]:
    """A liked or disliked object, and what it is liked `instead` of ("prefer coffee over tea")."""
    text = re.sub(r"^to\s+", "", found.group("object"), flags=_I)
    compared = _COMPARED.search(text)
    obj = _object(text[:compared.start()] if compared else text)
    if obj is None:
        return []
    other = found.groupdict().get("other") or (compared and _instead(clause, compared, polarity))
    instead = _object(other) if other else None
    return [_item("preference", subject="user", object=obj, polarity=polarity,
                  **({"instead": instead} if instead and instead.lower() != obj.lower() else {}))]


def _instead(clause: str, compared: re.Match, polarity: int) -> Optional[str]:
    """What a liking is compared against, when the comparison says it is liked less: anything after
    "prefer X", and "rather than / instead of / more than / better than" after any liking."""
    if polarity != 1 or (compared.group("how").lower() in ("over", "to") and not _PREFER.match(clause)):
        return None
    return compared.group("other")


def _favourite(clause: str) -> list[Optional[Item]]:
    found = _FAVOURITE.match(clause) or _IS_FAVOURITE.match(clause.rstrip(" .!"))
    if not found:
        return []
    obj = _object(found.group("object"))
    if obj is None or (found.re is _IS_FAVOURITE and _FILLER.match(obj)):
        return []
    return [_item("preference", subject="user", object=obj, polarity=-1 if found.group("least") else 1)]


# -- beliefs -----------------------------------------------------------------------------------

_DEGREE = r"(?:absolutely\s+|quite\s+|pretty\s+|fairly\s+|very\s+|completely\s+|totally\s+|100%\s+|really\s+)?"
_BELIEFS = (  # (pattern, polarity, confidence)
    (re.compile(r"^I\s+(?:do|really\s+do|did)\s+not\s+(?:really\s+)?(?:think|believe|reckon)\s+(?:that\s+)?"
                r"(?P<p>.+)$", _I), -1, 0.7),
    (re.compile(r"^I\s+am\s+not\s+(?:at\s+all\s+)?convinced\s+(?:that\s+)?(?P<p>.+)$", _I), -1, 0.6),
    (re.compile(rf"^I\s+am\s+(?P<deg>{_DEGREE})(?:sure|certain|convinced|confident|positive)\s+(?:that\s+)?"
                r"(?P<p>.+)$", _I), 1, 0.9),
    (re.compile(r"^I\s+(?:really\s+|honestly\s+|strongly\s+|genuinely\s+|do\s+|still\s+|also\s+|firmly\s+)*"
                r"(?:think|believe|feel\s+(?:that|like))\s+(?:that\s+)?(?P<p>.+)$", _I), 1, 0.7),
    (re.compile(r"^I\s+(?:reckon|suspect|guess|would\s+say|have\s+a\s+feeling)\s+(?:that\s+)?(?P<p>.+)$", _I), 1, 0.6),
    (re.compile(r"^I\s+(?:really\s+|seriously\s+|strongly\s+)?doubt\s+(?:that\s+)?(?P<p>.+)$", _I), -1, 0.6),
    (re.compile(r"^it\s+is\s+(?:very\s+|quite\s+|highly\s+)?(?P<how>likely|probable|possible|unlikely|certain)"
                r"\s+that\s+(?P<p>.+)$", _I), 1, None),
    (re.compile(r"^(?:as\s+far\s+as|from\s+what)\s+I\s+(?:know|can\s+tell)\s*,?\s+(?P<p>.+)$", _I), 1, 0.6),
    (re.compile(r"^(?:in\s+my\s+(?:honest\s+)?(?:opinion|view|experience)|imo|imho)\s*,?\s+(?P<p>.+)$", _I), 1, 0.7),
    (re.compile(r"^(?P<p>.+?),?\s+I\s+(?:think|believe)$", _I), 1, 0.7),
    (re.compile(r"^(?:maybe|perhaps|possibly)\s*,?\s+(?P<p>.+)$", _I), 1, 0.4),
    (re.compile(r"^probably\s*,?\s+(?P<p>.+)$", _I), 1, 0.6),
)
_LIKELIHOOD = {"likely": (1, 0.6), "probable": (1, 0.6), "possible": (1, 0.4), "unlikely": (-1, 0.6),
               "certain": (1, 0.9)}
_SUBJECT = r"(?P<s>(?:(?:the|this|that|our|my|their|his|her|its|a|an|some|all|most)\s+)?[\w'-]+(?:\s+[\w'-]+){0,3}?)"
_IN_HEDGE = (  # a hedge inside the proposition: (pattern, replacement, confidence)
    (re.compile(rf"^{_SUBJECT}\s+(?:is|are)\s+(?:very\s+|quite\s+|highly\s+)?likely\s+to\s+(?P<r>.+)$", _I),
     r"\g<s> will \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:is|are)\s+(?:very\s+|quite\s+|highly\s+)?unlikely\s+to\s+(?P<r>.+)$", _I),
     r"\g<s> will not \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:seems|seem|appears|appear)\s+to\s+be\s+(?P<r>.+)$", _I),
     r"\g<s> is \g<r>", 0.5),
    (re.compile(rf"^{_SUBJECT}\s+(?P<aux>is|are|was|were|will|would|has|have|should|can)\s+"
                r"(?:probably|likely|most\s+likely)\s+(?P<r>.+)$", _I), r"\g<s> \g<aux> \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:probably|likely)\s+(?P<r>.+)$", _I), r"\g<s> \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?P<aux>is|are|was|were|will)\s+(?:definitely|certainly)\s+(?P<r>.+)$", _I),
     r"\g<s> \g<aux> \g<r>", 0.9),
    (re.compile(rf"^{_SUBJECT}\s+(?:might|may|could)\s+be\s+(?P<r>(?![\w-]+(?:ed|en)\b).+)$", _I),
     r"\g<s> is \g<r>", 0.4),
    (re.compile(rf"^{_SUBJECT}\s+(?:might|may)\s+(?P<r>.+)$", _I), r"\g<s> will \g<r>", 0.4),
)
_PRONOUN_SUBJECT = re.compile(r"^(?:(?:this|that|these|those|he|she|they|them|so|not|such)\b"
                              r"|(?:it|there)\b(?:\s+\S+){0,2}$)", _I)
_NOT = re.compile(r"\b(?P<aux>is|are|was|were|will|would|can|could|should|must|has|have|had)\s+not\b|\bcannot\b", _I)
_DO_NOT = re.compile(r"\b(?:do|does|did)\s+not\s+(?P<verb>[a-z]+)\b", _I)


def _beliefs(sentence: str) -> list[Optional[Item]]:
    clause = _FILLER.sub("", sentence.rstrip(" .!"), count=1)
    for pattern, polarity, confidence in _BELIEFS:
        found = pattern.match(clause)
        if found:
            if found.groupdict().get("deg", "").strip().lower() in ("pretty", "fairly", "quite"):
                confidence = 0.8
            if found.groupdict().get("how"):
                polarity, confidence = _LIKELIHOOD[found.group("how").lower()]
            return _belief(found.group("p"), polarity, confidence)
    return _belief(clause, 1, None)


def _belief(proposition: str, polarity: int, confidence: Optional[float]) -> list[Optional[Item]]:
    """A belief from a proposition, its own hedge ("is probably") and negation folded into the
    confidence and polarity; None-confidence means a hedge inside it is required."""
    proposition = _STOP_BELIEF.split(proposition, maxsplit=1)[0].strip(" ,.!")
    for pattern, replacement, hedge in _IN_HEDGE:
        if pattern.match(proposition):
            proposition = pattern.sub(replacement, proposition)
            confidence = hedge if confidence is None else min(confidence, hedge)
            break
    if confidence is None or not _believable(proposition):
        return []
    proposition, flipped = _affirmed(proposition)
    proposition = re.sub(r"\bmy\b", "user's", proposition, flags=_I)
    return [_item("belief", proposition=proposition, polarity=-polarity if flipped else polarity,
                  confidence=confidence)]


_STOP_BELIEF = re.compile(r",\s+(?:but|though|although|so)\b|\s+but\s+|;", _I)


def _believable(proposition: str) -> bool:
    words = proposition.split()
    return (3 <= len(words) <= 25 and not _PRONOUN_SUBJECT.match(proposition)
            and not re.search(r"\b(?:I|me)\b", proposition) and not _YOU.search(proposition)
            and not re.match(r"^(?:about|of|so|too|that)\b", proposition, _I) and not SECRETISH.search(proposition))


def _affirmed(proposition: str) -> tuple[str, bool]:
    """The proposition without its one simple negation, and whether it had one."""
    found = _NOT.search(proposition)
    if found:
        kept = found.group("aux") or "can"
        return proposition[:found.start()] + kept + proposition[found.end():], True
    found = _DO_NOT.search(proposition)
    if found:
        verb = found.group("verb")
        verb = _third_person(verb) if found.group(0).lower().startswith("does") else verb
        return proposition[:found.start()] + verb + proposition[found.end():], True
    return proposition, False


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
