"""Built-in auto-extract: the deterministic whole-word rules of hermes_cmms.knowledge.extract."""
from __future__ import annotations

from hermes_cmms.knowledge.extract import Item
from hermes_cmms.knowledge.extract import extract as extract_items

from .specs import hookimpl


@hookimpl
def extract(text: str, role: str) -> list[Item]:
    return extract_items(text, role)
