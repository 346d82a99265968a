"""Skills: a "how to X:" line over a numbered or bulleted list, or one sentence of steps
("To deploy, first run the tests, then build the image")."""
from __future__ import annotations

import re
from typing import Optional

from ...common.text import UNDECODABLE
from ._shapes import Item, _item

_I = re.IGNORECASE


_HEADER = re.compile(r"^\s*(?:#+\s*)?(?:here\s+is\s+|here's\s+)?(?:(?:(?:the\s+)?steps\s+to|how\s+to|how\s+(?:I|we))"
                     r"\s+(?P<a>[^:?]{3,80}?)\s*[:\-–—]?|to\s+(?P<b>[^:?]{3,80}?)\s*:)\s*$", _I)
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•‣]|step\s+\d+\s*[:.)-])\s+(?P<step>\S.*)$", _I)
_INLINE = re.compile(r"^(?:here\s+is\s+|here's\s+)?(?:(?P<steps>(?:the\s+)?steps\s+to)|(?:the\s+)?way\s+to|how\s+to"
                     r"|how\s+(?:I|we)|to)"
                     r"\s+(?P<purpose>[^:,;]{3,80}?)\s*(?:\s(?:are|is)\s*:?|:|,)\s*(?P<body>.+)$", _I)
_NUMBERED = re.compile(r"(?:^|\s)\(?\d{1,2}[.)]\s+")
_SEQUENCE = re.compile(r"\s*[,;]?\s*\b(?:and\s+)?(?:then|next|finally|lastly|after\s+that|afterwards)\b\s*,?\s*", _I)
_STEP_LEAD = re.compile(r"^(?:first(?:ly)?|then|and|just|you\s+(?:need|have|should|must|can)\s+to|you\s+should"
                        r"|you\s+must|you)\b\s*,?\s*", _I)
_NOT_A_PURPOSE = re.compile(r"^(?:me|you|him|her|us|them|be|date|this|that|my|your|our|his|their|the|a|an|some"
                            r"|all|each|everyone|anyone|no|sum\s+up|summari[sz]e|recap|clarify|conclude)\b", _I)


def _skill_blocks(text: str) -> tuple[list[Optional[Item]], str]:
    """Skills written as a "how to X:" line followed by a numbered or bulleted list, and the
    text without those lines."""
    lines, items, kept, i = text.splitlines(), [], [], 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        steps, j = _list_after(lines, i + 1) if header else ([], i + 1)
        if header and len(steps) >= 2:
            items.append(_skill(header.group("a") or header.group("b"), steps))
            i = j
        else:
            kept.append(lines[i])
            i += 1
    return items, "\n".join(kept)


def _list_after(lines: list[str], start: int) -> tuple[list[str], int]:
    steps, i = [], start
    while i < len(lines) and not lines[i].strip() and not steps:
        i += 1
    while i < len(lines) and (found := _LIST_ITEM.match(lines[i])):
        steps.append(found.group("step"))
        i += 1
    return steps, i


def _inline_skill(sentence: str) -> Optional[Item]:
    found = _INLINE.match(sentence.rstrip(" ."))
    if not found:
        return None
    body = found.group("body")
    if len(_NUMBERED.findall(" " + body)) >= 2:
        parts = _NUMBERED.split(" " + body)
    elif _SEQUENCE.search(body) or re.match(r"^first\b", body, _I):
        parts = [p for chunk in _SEQUENCE.split(body) for p in re.split(r"[;,]", chunk)]
    elif ";" in body:
        parts = body.split(";")
    elif found.group("steps") or len(parts := re.split(r",\s*(?:and\s+)?", body)) >= 3:
        parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", body) if found.group("steps") else parts
    else:
        return None
    return _skill(found.group("purpose"), parts)


def _skill(purpose: str, parts: list[str]) -> Optional[Item]:
    purpose = " ".join(re.sub(r"^how\s+to\s+", "", purpose.strip(" .:"), flags=_I).split())
    steps = [step for step in (_step(p) for p in parts) if step]
    if (len(steps) < 2 or len(purpose.split()) > 10 or _NOT_A_PURPOSE.match(purpose)
            or UNDECODABLE in purpose + "".join(steps)
            or re.search(r"\b(?:it|them|this|that|these|those)$", purpose, _I)
            or any(len(step.split()) > 25 for step in steps)):
        return None
    return _item("skill", purpose=purpose, steps=steps)


def _step(text: str) -> str:
    step = text.strip(" .;,")
    while (shorter := _STEP_LEAD.sub("", step, count=1)) != step:
        step = shorter
    first = step.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower() and first != "I":
        step = step[:1].lower() + step[1:]
    return step.strip(" .;,")
