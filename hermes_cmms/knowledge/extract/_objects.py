"""The object of a verb: the phrase after it, up to where the phrase ends."""
from __future__ import annotations

import re
from typing import Optional

from ._text import SECRETISH, _VERB_WORDS

MAX_OBJECT_WORDS = 8
_I = re.IGNORECASE


_STOP = re.compile(
    rf"\s*(?:[,;:()]|\s-\s|\s—\s|\.(?:\s|$)|!|\?)|\s+(?:but|because|since|so|though|although|which|where|who|when"
    rf"|while|whereas|unless|until|that|and\s+(?:(?:now|also|still)\s+)?(?:I|we|my|she|he|they|it|you|{_VERB_WORDS})"
    r"|as\s+(?:a|an|the|well)|with\s+(?:my|his|her|their|our)|in\s+the\s+end|too|these\s+days"
    r"|at\s+the\s+moment|right\s+now|currently|nowadays|now\b|anyway|a\s+lot\b|so\s+much|very\s+much"
    r"|for\s+(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|many|several|the\s+past|over|almost"
    r"|nearly|about|years|months|weeks|ages)\b|in\s+\d{4}\b|since\b|last\s+(?:year|month|week|summer|winter"
    r"|spring|fall|autumn)|(?:this|next)\s+(?:year|month|week)|recently|lately|ago)\b", _I)
_BAD_START = re.compile(r"^(?:it|that|this|these|those|them|him|her|you|your|what|how|when|where|why|which|who"
                        r"|being|everything|nothing|something|anything|everyone|anyone|someone|the\s+idea|one"
                        r"|so|too|very|not|to\s+be)\b", _I)
_YOU = re.compile(r"\b(?:you|your|yours)\b", _I)


def _object(text: str, proper: bool = False) -> Optional[str]:
    """The object at the start of `text`, up to the end of its phrase; None when it is a
    pronoun, too long, secret-looking, or (for `proper`) without a name, number or determiner."""
    return _object_at(text, proper)[0]


def _object_at(text: str, proper: bool = False) -> tuple[Optional[str], int]:
    """_object, and where its phrase ends in `text`."""
    found = _STOP.search(text)
    end = found.start() if found else len(text)
    phrase = re.sub(r"^to\s+", "", text[:end].strip(" .!,;:\"'"), flags=_I)
    words = phrase.split()
    if (not words or len(words) > MAX_OBJECT_WORDS or all(w.lower() in ("a", "an", "the") for w in words)
            or _BAD_START.match(phrase) or _YOU.search(phrase) or SECRETISH.search(phrase)
            or (proper and not _proper(words))):
        return None, end
    return re.sub(r"\bmy\b", "user's", phrase, flags=_I), end


def _proper(words: list[str]) -> bool:
    """Whether a phrase names something: a capitalised word, a number, or a determiner first."""
    return (any(w[:1].isupper() or w[:1].isdigit() for w in words)
            or words[0].lower() in ("a", "an", "the", "my", "two", "three"))
