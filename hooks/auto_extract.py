"""Built-in auto-extract: the deterministic whole-word rules of hermes_cmms.knowledge.extract
(imported when a text is first extracted from: their patterns take a third of a second to
compile, which a command that extracts nothing does not pay)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .specs import hookimpl

if TYPE_CHECKING:
    from hermes_cmms.knowledge.extract import Item


@hookimpl
def extract(text: str, role: str) -> list[Item]:
    from hermes_cmms.knowledge.extract import extract as extract_items

    return extract_items(text, role)
