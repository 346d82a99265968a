"""How deeply input from outside nests (MCP requests, Hermes tool arguments, import lines),
measured without recursion, so a value nested a million levels deep costs one linear pass
instead of a RecursionError (or pydantic-core's parser giving up at 200 levels)."""
from __future__ import annotations

import re
from itertools import accumulate
from typing import Any, Iterator

MAX_DEPTH = 64  # arrays and objects; the deepest request a real MCP client sends is ~8

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def text_depth(text: str) -> int:
    """How deeply the JSON `text` nests arrays and objects (brackets inside strings do not
    count; broken JSON is measured as far as its brackets go)."""
    return max(levels(text), default=0)


def levels(text: str) -> Iterator[int]:
    """The nesting level after each bracket of the JSON `text` outside its strings."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return accumulate(map(_STEP.__getitem__, brackets))


def value_depth(value: Any, stop: int = MAX_DEPTH) -> int:
    """How deeply lists, tuples and dicts nest in `value`; counting ends past `stop`, so a
    list that holds itself is measured too."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= stop:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def too_deep(what: str) -> str:
    """The one sentence every door answers nested input with."""
    return f"{what} nests lists or objects deeper than {MAX_DEPTH} levels; nothing was done."
