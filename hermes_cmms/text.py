"""Text helpers shared by indexing and recall: terms, hashing, cleaning."""
from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+", re.UNICODE)
_SPEAKER = re.compile(r"\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
_SPACE = re.compile(r"\s+")

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves s t don didn doesn isn wasn ll ve re
d m o y also ever much many let lets tell know get got like did does
hi hello hey ok okay thanks thank yes yeah yep sure please lol haha hmm
""".split())  # the last line: small talk, which should recall nothing by itself


def clean(text: str) -> str:
    """Make text storable anywhere: drop NUL bytes and unpaired surrogates."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def clean_key(text: str) -> str:
    """Make an identifier (scope, session id, memory id) storable; distinct inputs stay distinct.
    NUL (which PostgreSQL refuses in text) is escaped as `\\x00`, unpaired surrogates as `\\udXXX`."""
    if not isinstance(text, str):
        return text
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return bounded_key(escape_surrogates(text))


MAX_KEY_CHARS = 200  # PostgreSQL's btree indexes hold ~2,700 bytes per entry, scope included


def bounded_key(key: str) -> str:
    """An indexed key kept short enough for any index: a longer one becomes its first 128
    characters, '#' and the SHA-256 of the whole, so distinct keys stay distinct."""
    if len(key) <= MAX_KEY_CHARS:
        return key
    return f"{key[:128]}#{hashlib.sha256(key.encode('utf-8')).hexdigest()}"


def escape_surrogates(text: str) -> str:
    """`text` with each unpaired surrogate written out (`\\ud800`), so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def map_strings(value, change):
    """A JSON-like value (dicts, lists, tuples as lists) with `change` applied to every string."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [map_strings(item, change) for item in value]
    return value


def brief(message: str, limit: int = 500) -> str:
    """An error message at most about `limit` characters long: an echoed argument can be huge."""
    if len(message) <= limit:
        return message
    return f"{message[:limit - 60]}...{message[-50:]}"


def terms(text: str, limit: int = 32) -> list[str]:
    """Distinct lower-cased content words of `text`, in order, stopwords removed."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in seen:
            seen[word] = None
            if len(seen) >= limit:
                break
    return list(seen)


def content_hash(text: str) -> str:
    """Hash of the normalised text: same words, same hash."""
    normal = _SPACE.sub(" ", text.strip().lower())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def speaker_of(text: str) -> str | None:
    """Who speaks in a transcript-style line ("Alice: ..."), lower-cased; None otherwise."""
    found = _SPEAKER.match(text)
    return found.group(1).lower() if found else None
