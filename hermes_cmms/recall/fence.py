"""Stored text made inert for the memory block: one line, no fence tags, labels we control.

Hermes wraps recall in `<memory-context>` ... `</memory-context>` behind a `[System note: ...]`.
A stored text that closed that fence, opened another, or began a line of its own (a heading, a
role, a system note) could pass for something other than quoted data. So every field is put on
one line (each line separator `str.splitlines` knows becomes " / "), characters that print
nothing are dropped (controls, bidi overrides, zero-width and tag characters), and whatever
reads as a fence tag once look-alikes are folded away (compatibility forms such as fullwidth,
case, accents and combining marks, homoglyphs, spaces or invisible characters inside,
HTML/URL/escape encodings) becomes TAG_REMOVED. Labels (role, kind, receipt) keep a strict
charset.
"""
from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from urllib.parse import unquote

TAG_REMOVED = "[tag removed]"
LINE_SEPARATOR = " / "
# The roles and kinds hermes-cmms writes; a line's label is one of them (see label()).
LABELS = frozenset({"user", "assistant", "message", "note", "observation", "summary", "fact",
                    "preference", "decision", "status", "skill", "belief"})
MAX_RECEIPT_CHARS = 48

# Characters folded onto the ASCII ones a tag is made of (beyond what NFKD already maps).
_BRACKETS = {**dict.fromkeys("‹〈⟨˂ᐸ❮❬❰⧼⦑⦉", "<"), **dict.fromkeys("›〉⟩˃ᐳ❯❭❱⧽⦒⦊", ">"),
             **dict.fromkeys("∕⁄⧸╱⟋\\", "/"), **dict.fromkeys("ǀ∣│￨", "|"),
             **dict.fromkeys("【〔〖〘〚⟦⁅", "["), **dict.fromkeys("】〕〗〙〛⟧⁆", "]")}
_LOOKALIKES = str.maketrans({
    **_BRACKETS,
    # Cyrillic, Greek, Armenian and small-capital letters that look like Latin ones
    "а": "a", "ϲ": "c", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "ӏ": "l",
    "к": "k", "м": "m", "ո": "n", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "ս": "u",
    "х": "x", "у": "y", "ԝ": "w",
    **dict(zip("αβεηικνοτυχρ", "abenikvotuxp")),
    **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢıɩ", "abcdefghijklmnoprstuvwyzii")),
})
_BRACKET_TABLE = str.maketrans(_BRACKETS)
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789<>/|[](")
# An encoded character: an HTML entity (also &amp;-nested), %XX, \\uXXXX or \\xXX.
_ENCODED = re.compile(r"&(?:amp;)*(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});?"
                      r"|%(?:25)*[0-9a-f]{2}|\\u[0-9a-f]{4}|\\x[0-9a-f]{2}", re.I)
_TRIGGERS = re.compile(r"[<>\[(&%\\]")
_NAME = r"memor(?:y|ies)[a-z0-9/]{0,16}context"
_FENCE = re.compile(
    rf"</?[a-z0-9|]{{0,16}}{_NAME}(?:[a-z0-9|]{{0,16}}>)?|/?{_NAME}[a-z0-9|]{{0,16}}>"  # </memory-context
    r"|</?(?:system|developer|assistant|user|human|instructions?)[a-z0-9]{0,16}>"  # <system>
    r"|<\|[a-z0-9/]{0,32}\|?>"  # chat-template tokens: <|im_start|>, <|eot_id|>
    r"|</?(?:memory|memories|context|functionresults|functioncalls|toolresults?|endofturn|startofturn)>"
    r"|</s>|<</?sys>>|\[/?inst\]"  # </memory>, Gemma's <end_of_turn>, Llama's </s>[INST] <<SYS>>
    r"|[\[(]systemnote|\[(?:system|developer|assistant|user)[a-z0-9]{0,16}\]")  # [System note: ...], (System note
_LABEL_DROP = re.compile(r"[^a-z0-9_-]+")
_RECEIPT_DROP = re.compile(r"[^\w .:@/+#=-]+")
_SPACES = re.compile(r"\s+")


def inert(text: str) -> str:
    """`text` as inert data: one line, nothing invisible, no fence tags."""
    return neutralise(one_line(text))


def one_line(text: str) -> str:
    """`text` on one line, its lines joined by " / "; other spaces become a plain space and
    characters that print nothing are dropped."""
    text = LINE_SEPARATOR.join(part.strip() for part in text.splitlines() if part.strip())
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " if c.isspace() else "" for c in text)


def neutralise(text: str) -> str:
    """`text` with each span that reads as a fence tag, once folded, replaced by TAG_REMOVED."""
    for _ in range(8):  # a removal can bring the parts of another tag together
        spans = fence_spans(text)
        if not spans:
            return text
        for start, end in reversed(spans):
            text = text[:start] + TAG_REMOVED + text[end:]
    return TAG_REMOVED


def fence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) in `text` of each span whose folded form is a fence tag."""
    probe = unicodedata.normalize("NFKC", text)
    if not (_TRIGGERS.search(probe) or _TRIGGERS.search(probe.translate(_LOOKALIKES))):
        return []  # nothing here folds into a bracket or an encoded character
    folded, starts, ends = _skeleton(text)
    spans: list[tuple[int, int]] = []
    for match in _FENCE.finditer(folded):
        start, end = starts[match.start()], ends[match.end() - 1]
        if spans and start < spans[-1][1]:  # both inside one source character or entity
            start = spans.pop()[0]
        spans.append((start, end))
    return spans


def label(text: str | None, default: str = "note") -> str:
    """A line label (role, kind), one of LABELS: a stored role or kind we never write (an
    imported "system", say) is shown as `default`, so no label reads as an instruction's speaker."""
    text = _LABEL_DROP.sub("-", unicodedata.normalize("NFKC", text or "").lower()).strip("-")
    return text if text in LABELS else default


def receipt(text: str) -> str:
    """Where a memory came from, on one line, in word characters and ` .:@/+#=-`, kept short."""
    text = _SPACES.sub(" ", _RECEIPT_DROP.sub(" ", inert(text).translate(_BRACKET_TABLE))).strip()
    return text if len(text) <= MAX_RECEIPT_CHARS else text[:MAX_RECEIPT_CHARS - 1].rstrip() + "…"


def _skeleton(text: str) -> tuple[str, list[int], list[int]]:
    """The folded text and, for each of its characters, where its source starts and ends."""
    out, starts, ends = [], [], []
    position = 0
    for match in _ENCODED.finditer(text):
        _fold_into(text, position, match.start(), out, starts, ends)
        for char in "".join(map(_fold, _decoded(match.group()))):
            out.append(char), starts.append(match.start()), ends.append(match.end())
        position = match.end()
    _fold_into(text, position, len(text), out, starts, ends)
    return "".join(out), starts, ends


def _fold_into(text: str, start: int, end: int, out: list, starts: list, ends: list) -> None:
    for index in range(start, end):
        for char in _fold(text[index]):
            out.append(char), starts.append(index), ends.append(index + 1)


@lru_cache(maxsize=8192)
def _fold(char: str) -> str:
    """What one character reads as: compatibility-decomposed, case-folded, look-alikes mapped;
    marks, spaces, punctuation and invisible characters fold to nothing."""
    folded = unicodedata.normalize("NFKD", char.translate(_LOOKALIKES)).casefold()
    return "".join(c for c in folded.translate(_LOOKALIKES) if c in _KEPT)


def _decoded(token: str) -> str:
    for _ in range(4):  # &amp;lt; or %253C: encoded more than once
        plain = html.unescape(unquote(token))
        if plain == token:
            break
        token = plain
    if token[:2].lower() in ("\\u", "\\x"):
        token = chr(int(token[2:], 16))
    return token
