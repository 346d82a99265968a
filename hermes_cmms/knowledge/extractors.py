"""The extract hook's host: every extractor's items pooled, checked and without duplicates.
See docs/extraction.md."""
from __future__ import annotations

import logging
from typing import Optional

import pluggy

from ..common.errors import InvalidInput
from ..common.tracing import Span
from .extract import Item, make_item

log = logging.getLogger(__name__)


def run_extractors(pm: pluggy.PluginManager, text: str, scope: str, role: str = "user") -> list[Item]:
    """Every extract implementation's items, pooled in pluggy's call order without exact
    duplicates (same kind and text). Never raises: a failing extractor is logged and skipped."""
    span = Span("cmms.hook extract", hook="extract")
    items = _pooled(pm, {"text": text, "scope": scope, "role": role})
    span.end()
    return items


def _pooled(pm: pluggy.PluginManager, kwargs: dict) -> list[Item]:
    items: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for impl in pm.hook.extract.get_hookimpls()[::-1]:
        try:
            found = impl.function(**{name: kwargs[name] for name in impl.argnames}) or []
            found = [checked for item in found if (checked := _well_formed(item, impl.plugin_name))]
        except Exception as exc:  # noqa: BLE001 - a broken extractor costs its items only
            log.warning("hermes-cmms: extractor %r failed: %s", impl.plugin_name, exc)
            continue
        for item in found:
            if (item.kind, item.text) not in seen:
                seen.add((item.kind, item.text))
                items.append(item)
    return items


def _well_formed(item, plugin: str) -> Optional[Item]:
    """The item with its parts checked (and its text rendered from them), or None."""
    if not isinstance(item, Item) or not isinstance(item.kind, str) or not isinstance(item.parts, dict):
        log.warning("hermes-cmms: extractor %r returned %r, not an Item; skipped", plugin, type(item).__name__)
        return None
    try:
        return make_item(item.kind, item.parts)
    except InvalidInput as exc:
        log.warning("hermes-cmms: extractor %r returned a bad %s: %s", plugin, item.kind, exc)
        return None
