"""Deterministic knowledge extraction: facts, preferences, decisions, skills and beliefs found in
one message by whole-word rules, sentence by sentence (no LLM).

Precision comes first, since a wrong item in someone's memory is worse than a missed one: a
sentence that asks, supposes, wishes, requests, doubts what it knows, reports someone else's
words or looks like code yields nothing. First-person subjects become "user" (role "user" only).
"""
from __future__ import annotations

from ._facts import RELATIONS
from ._message import MAX_SENTENCE_CHARS, MAX_TEXT_CHARS, ROLES, extract
from ._objects import MAX_OBJECT_WORDS
from ._shapes import ATTRIBUTES, KINDS, Item, make_item, negate, replaced
from ._text import SECRETISH, expand

__all__ = ["ATTRIBUTES", "KINDS", "MAX_OBJECT_WORDS", "MAX_SENTENCE_CHARS", "MAX_TEXT_CHARS", "RELATIONS", "ROLES",
           "SECRETISH", "Item", "expand", "extract", "make_item", "negate", "replaced"]
