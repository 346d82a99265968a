"""Item shapes: the five kinds, their parts checked and rendered as one readable line."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from ...common.errors import InvalidInput
from ._text import SECRETISH

KINDS = ("fact", "preference", "decision", "skill", "belief")
_I = re.IGNORECASE
ATTRIBUTES = {"name", "first name", "last name", "surname", "middle name", "nickname", "birthday", "age",
              "hometown", "home town", "job", "job title", "title", "role", "occupation", "profession",
              "employer", "company", "team", "timezone", "time zone", "native language", "first language",
              "mother tongue", "major", "university", "school", "college", "blood type", "shoe size",
              "star sign", "zodiac sign", "car", "laptop", "phone", "editor", "shell", "browser",
              "operating system", "nationality", "department", "pronouns", "diet"}


@dataclass
class Item:
    """One piece of knowledge: its kind, a readable one-line rendering and its structured parts."""

    kind: str  # fact | preference | decision | skill | belief
    text: str  # the rendering, stored as the memory content
    parts: dict = field(default_factory=dict)


def make_item(kind: str, parts: dict) -> Item:
    """An Item of `kind` from its parts, checked and rendered; bad parts raise InvalidInput."""
    if kind not in KINDS:
        raise InvalidInput(f"Unknown item kind {kind!r}; choose one of {', '.join(KINDS)}.")
    if not isinstance(parts, dict):
        raise InvalidInput(f"The parts of a {kind} must be a dict, not {type(parts).__name__}.")
    parts = _CHECKS[kind](parts)
    return Item(kind, _RENDER[kind](parts), parts)


def _text(parts: dict, name: str, kind: str, optional: bool = False) -> Optional[str]:
    value = parts.get(name)
    if optional and value in (None, ""):
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"A {kind}'s {name} must be a non-empty string, not {value!r}.")
    if SECRETISH.search(value):
        raise InvalidInput(f"A {kind}'s {name} looks like a secret (an email, key or token).")
    return " ".join(value.split())


def _polarity(parts: dict, kind: str) -> int:
    value = parts.get("polarity", 1)
    if isinstance(value, bool) or value not in (1, -1):
        raise InvalidInput(f"A {kind}'s polarity must be 1 or -1, not {value!r}.")
    return int(value)


def _check_fact(parts: dict) -> dict:
    return {**{name: _text(parts, name, "fact") for name in ("subject", "predicate", "object")},
            **_ended(parts, "fact")}


def _check_preference(parts: dict) -> dict:
    subject = _text(parts, "subject", "preference", optional=True) or "user"
    checked = {"subject": subject, "object": _text(parts, "object", "preference"),
               "polarity": _polarity(parts, "preference")}
    instead = _text(parts, "instead", "preference", optional=True)
    return {**checked, **({"instead": instead} if instead else {}), **_ended(parts, "preference")}


def _ended(parts: dict, kind: str) -> dict:
    """{"ended": True} for an item that was true and is no longer ("I used to ..."), else {}."""
    value = parts.get("ended", False)
    if not isinstance(value, bool):
        raise InvalidInput(f"A {kind}'s ended must be true or false, not {value!r}.")
    return {"ended": True} if value else {}


def _check_decision(parts: dict) -> dict:
    return {"choice": _text(parts, "choice", "decision"),
            "reason": _text(parts, "reason", "decision", optional=True)}


def _check_skill(parts: dict) -> dict:
    steps = parts.get("steps")
    if not isinstance(steps, (list, tuple)) or len(steps) < 2:
        raise InvalidInput(f"A skill needs a list of at least 2 steps, not {steps!r}.")
    return {"purpose": _text(parts, "purpose", "skill"),
            "steps": [_text({"step": step}, "step", "skill") for step in steps]}


def _check_belief(parts: dict) -> dict:
    confidence = parts.get("confidence", 0.7)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise InvalidInput(f"A belief's confidence must be a number from 0 to 1, not {confidence!r}.")
    return {"proposition": _text(parts, "proposition", "belief"),
            "polarity": _polarity(parts, "belief"), "confidence": float(confidence)}


def _render_fact(p: dict) -> str:
    no_longer = "no longer " if p.get("ended") else ""
    if p["predicate"] in ATTRIBUTES:
        return f"{p['subject']}'s {p['predicate']} is {no_longer}{p['object']}"
    verb, _, rest = p["predicate"].partition(" ")
    if no_longer and verb == "is":  # "user is no longer a vegetarian", "... no longer allergic to cats"
        return " ".join(part for part in (p["subject"], "is no longer", rest, p["object"]) if part)
    return f"{p['subject']} {no_longer}{p['predicate']} {p['object']}"


def _render_preference(p: dict) -> str:
    verb = "likes" if p["polarity"] == 1 else "dislikes"
    return f"{p['subject']} {'no longer ' if p.get('ended') else ''}{verb} {p['object']}"


def replaced(item: Item) -> list[str]:
    """The texts of the earlier items `item` replaces when it is learned: for a fact, the same
    fact ended or not ("user no longer lives in Berlin" and "user lives in Berlin"); for a
    preference, every other stance on its object (liked, disliked, no longer either) and the
    liking of what it is preferred `instead` of ("coffee over tea": "user likes tea")."""
    if item.kind not in ("fact", "preference") or not isinstance(item.parts, dict):
        return []
    try:  # (a plugin's item may come with parts make_item would refuse: it replaces nothing)
        parts = _CHECKS[item.kind](item.parts)
    except InvalidInput:
        return []
    if item.kind == "fact":
        return [_render_fact({**parts, "ended": not parts.get("ended")})]
    stances = [{**parts, "polarity": polarity, "ended": ended} for polarity in (1, -1) for ended in (False, True)]
    texts = [_render_preference(p) for p in stances]
    if parts.get("instead"):
        texts.append(_render_preference({"subject": parts["subject"], "object": parts["instead"], "polarity": 1}))
    return [text for text in dict.fromkeys(texts) if text != _render_preference(parts)]


def _render_decision(p: dict) -> str:
    return f"Decision: {p['choice']}" + (f" — because {p['reason']}" if p["reason"] else "")


def _render_skill(p: dict) -> str:
    return f"How to {p['purpose']}: " + " ".join(f"{n}. {s}" for n, s in enumerate(p["steps"], 1))


def _render_belief(p: dict) -> str:
    text = p["proposition"] if p["polarity"] == 1 else negate(p["proposition"])
    return text[:1].upper() + text[1:]


_AUX = re.compile(r"\b(?:is|are|was|were|will|would|can|could|should|must|has|have|had|may|might)\b", _I)


def negate(proposition: str) -> str:
    """The proposition denied: "not" after its first auxiliary verb when it has one ("the API
    is not stable"), else "it is not the case that ..."."""
    found = _AUX.search(proposition)
    if found:
        return f"{proposition[:found.end()]} not{proposition[found.end():]}"
    return f"it is not the case that {proposition}"


_CHECKS: dict[str, Callable[[dict], dict]] = {
    "fact": _check_fact, "preference": _check_preference, "decision": _check_decision,
    "skill": _check_skill, "belief": _check_belief}
_RENDER: dict[str, Callable[[dict], str]] = {
    "fact": _render_fact, "preference": _render_preference, "decision": _render_decision,
    "skill": _render_skill, "belief": _render_belief}


def _item(kind: str, **parts) -> Optional[Item]:
    """make_item for the rules: a part that looks like a secret or is empty drops the item."""
    try:
        return make_item(kind, parts)
    except InvalidInput:
        return None


def _unique(items: list[Optional[Item]]) -> list[Item]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for item in items:
        if item is not None and (item.kind, item.text) not in seen:
            seen.add((item.kind, item.text))
            kept.append(item)
    return kept
