"""Text helpers shared by indexing and recall: terms, hashing, cleaning."""
from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+", re.UNICODE)
SPEAKER = re.compile(r"\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
_SPACE = re.compile(r"\s+")
# A recalled-memory block as Hermes wraps it into a turn (left out of what is kept as the turn)
MEMORY_BLOCK = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)

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


UNDECODABLE = "\ufffd"  # Unicode's replacement character: here a character that could not be decoded


def clean(text: str) -> str:
    """Make text storable anywhere: NUL bytes dropped, a surrogate pair joined into its
    character, and an unpaired surrogate (a byte that could not be decoded, as Python's
    surrogateescape keeps it) made UNDECODABLE, never "?", which reads as punctuation."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if not _encodable(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


KEY_MARK = "\uffff"  # a Unicode noncharacter: never let through literally, it marks a made key
MAX_KEY_CHARS = 200  # PostgreSQL's btree indexes hold ~2,700 bytes per entry, scope included
_SHOWN_CHARS = 128  # of an odd or long key, this much stays readable before the mark and hash


class Key(str):
    """A key `clean_key` already made: it passes `clean_key` unchanged, so a key handed on
    from one engine function to the next (or read back from the store) is never made twice."""


def clean_key(text: str) -> str:
    """Make an identifier (scope, session id, memory id) storable; distinct inputs get distinct
    keys. An ordinary id (no NUL, no unpaired surrogate, no U+FFFF, at most MAX_KEY_CHARS
    characters) is its own key, byte for byte; any other becomes a readable prefix, U+FFFF and
    the SHA-256 of the whole id (see `bounded_key`). U+FFFF never passes literally, so no
    ordinary id can equal another id's made key."""
    if not isinstance(text, str) or isinstance(text, Key):
        return text
    if "\x00" in text or not _encodable(text):
        return Key(_hashed(text))
    return Key(bounded_key(text))


def bounded_key(key: str) -> str:
    """An indexed key kept short enough for any index, injectively: a longer one, or one that
    holds U+FFFF, becomes its first 128 characters (NUL and unpaired surrogates written out,
    U+FFFF dropped), U+FFFF and the SHA-256 of the whole."""
    if len(key) <= MAX_KEY_CHARS and KEY_MARK not in key:
        return key
    return _hashed(key)


def _hashed(key: str) -> str:
    shown = escape_surrogates(key[:_SHOWN_CHARS].replace("\x00", "\\x00").replace(KEY_MARK, ""))[:_SHOWN_CHARS]
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{shown}{KEY_MARK}{digest}"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


def like_literal(text: str) -> str:
    """`text` made literal inside a SQL LIKE pattern (escape character: backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def content_hash(text: str) -> str:
    """Hash of the normalised text: same words, same hash."""
    normal = _SPACE.sub(" ", text.strip().lower())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def speaker_of(text: str) -> str | None:
    """Who speaks in a transcript-style line ("Alice: ..."), lower-cased; None otherwise."""
    found = SPEAKER.match(text)
    return found.group(1).lower() if found else None
