"""Extraction by the LLM chosen by the `llm` setting (the client is hermes_cmms.common.llm,
re-exported here): its items, checked like rule-made ones."""
from __future__ import annotations

import json
import logging
from typing import Optional

from ..common.errors import InvalidInput, LlmUnavailable
from ..common.llm import API_KEY_ENV, OFF, ROLES, complete, hermes_complete  # noqa: F401 - re-exported
from .extract import Item, make_item

log = logging.getLogger(__name__)

MAX_EXTRACT_CHARS = 12_000  # the part of a text sent for extraction

EXTRACT_PROMPT = """Extract durable knowledge about the user and their work from the message below.
Answer with only a JSON array (no prose). Each element is one of:
{"kind": "fact", "subject": "...", "predicate": "...", "object": "..."}
{"kind": "preference", "object": "...", "polarity": 1 or -1}
{"kind": "decision", "choice": "...", "reason": "..." or null}
{"kind": "skill", "purpose": "...", "steps": ["...", "...", ...]}
{"kind": "belief", "proposition": "...", "polarity": 1 or -1, "confidence": 0.0-1.0}
Write the user as "user". Skip questions, requests, hypotheticals, wishes and secrets (emails,
passwords, keys, tokens). Answer [] when there is nothing durable."""


def llm_extract(settings, text: str, timeout: float = 30.0) -> list[Item]:
    """Items the configured LLM finds in `text` (waiting at most `timeout` seconds), each
    checked like a rule-made item; [] (and a logged warning) on any failure, so it never
    breaks the caller."""
    try:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("Text to extract from must be a non-empty string.")
        messages = [{"role": "system", "content": EXTRACT_PROMPT},
                    {"role": "user", "content": text[:MAX_EXTRACT_CHARS]}]
        return parse_items(complete(settings, messages, max_tokens=800, timeout=timeout,
                                    purpose="cmms extraction"))
    except Exception as exc:  # noqa: BLE001 - extraction is optional; the turn goes on
        log.warning("hermes-cmms: LLM extraction failed: %s", exc)
        return []


def parse_items(reply: str) -> list[Item]:
    """The valid items of the first JSON array in `reply`; the invalid ones are dropped."""
    found = _json_array(reply)
    if found is None:
        raise LlmUnavailable(f"The LLM's reply holds no JSON array: {reply[:80]!r}.")
    items = []
    for raw in found:
        item = _valid(raw)
        if item is not None:
            items.append(item)
    return items


def _json_array(reply: str) -> Optional[list]:
    decoder = json.JSONDecoder()
    start = reply.find("[")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(reply, start)
        except ValueError:
            value = None
        if isinstance(value, list):
            return value
        start = reply.find("[", start + 1)
    return None


def _valid(raw) -> Optional[Item]:
    if not isinstance(raw, dict):
        return None
    parts = {key: value for key, value in raw.items() if key != "kind"}
    try:
        return make_item(raw.get("kind"), parts)
    except InvalidInput as exc:
        log.info("hermes-cmms: dropped an LLM item: %s", exc)
        return None
