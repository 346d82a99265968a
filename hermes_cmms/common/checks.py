"""The checks every door's input passes: a scope, tags and a tier, as the engine stores them."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from .errors import InvalidInput
from .text import brief, clean, clean_key
from .vocabulary import TIERS

MAX_TAGS = 32


def scope_of(scope) -> str:
    """The scope as stored; InvalidInput unless it is a non-empty string."""
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInput("A scope must be a non-empty string.")
    return clean_key(scope)


def tags_of(tags) -> tuple[str, ...]:
    """Tags as stored: a list of non-empty strings (None is no tags)."""
    if tags is None:
        return ()
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)) \
            or not all(isinstance(t, str) and clean(t).strip() for t in tags):  # `\x00` cleans to nothing
        raise InvalidInput("Tags must be a list of non-empty strings.")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"At most {MAX_TAGS} tags, not {len(tags)}.")
    return tuple(clean(t).strip() for t in tags)


def tier_of(tier: Optional[str]) -> Optional[str]:
    """A tier filter: None (any tier) or one of TIERS."""
    if tier is not None and tier not in TIERS:
        raise InvalidInput(f"Unknown tier {tier!r}; choose one of {', '.join(TIERS)}.")
    return tier


def admitted(tool: str, arguments: dict, known: Sequence[str], aliases: Mapping[str, str]) -> dict:
    """`arguments` of a call to `tool` with earlier names (`aliases`: {earlier: current}) renamed;
    an argument outside `known` (and the aliases) is refused in one sentence naming the arguments
    the tool takes, and so is a value given under both a name and its earlier one."""
    unknown = [name for name in arguments if name not in known and name not in aliases]
    if unknown:
        takes = ", ".join(known) if known else "no arguments"
        names = ", ".join(repr(brief(str(name), 60)) for name in unknown[:5])
        verb = "is not one of them" if len(unknown) == 1 else "are not among them"
        raise InvalidInput(f"{tool} takes {takes}; {names} {verb}.")
    out = {}
    for name, value in arguments.items():
        current = aliases.get(name, name)
        if current in out or (current != name and current in arguments):
            raise InvalidInput(f"Give {current!r} or its earlier name {name!r}, not both.")
        out[current] = value
    return out
