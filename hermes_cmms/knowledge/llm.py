"""The LLM hermes-cmms may use for optional work, chosen by the `llm` setting: "off", "hermes"
(Hermes' plugin LLM: the user's own model and auth, inside a Hermes process) or the base URL
of an OpenAI-compatible endpoint (called with the standard library, key in CMMS_LLM_API_KEY).
"""
from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from typing import Optional

from ..common.errors import InvalidInput, LlmUnavailable
from .extract import Item, make_item

log = logging.getLogger(__name__)

API_KEY_ENV = "CMMS_LLM_API_KEY"
OFF = "No LLM is configured (set llm to hermes or an OpenAI-compatible URL)."
ROLES = ("system", "user", "assistant")
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


def complete(settings, messages: list[dict], *, max_tokens: int = 512, timeout: float = 30.0,
             purpose: str = "") -> str:
    """The configured LLM's reply to chat `messages`; LlmUnavailable when there is none or it fails."""
    _check_messages(messages)
    if settings.llm == "off":
        raise LlmUnavailable(OFF)
    if settings.llm == "hermes":
        return hermes_complete(messages, max_tokens, timeout, purpose)
    return _http(settings.llm, settings.llm_model, messages, max_tokens, timeout)


def _check_messages(messages) -> None:
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("Messages for the LLM must be a non-empty list of {role, content} dicts.")
    for message in messages:
        if (not isinstance(message, dict) or message.get("role") not in ROLES
                or not isinstance(message.get("content"), str)):
            raise InvalidInput(f"Each LLM message needs a role ({', '.join(ROLES)}) and string content, "
                               f"not {message!r:.80}.")


def hermes_complete(messages: list[dict], max_tokens: int, timeout: float, purpose: str) -> str:
    """Hermes' plugin LLM facility; it works only inside a running Hermes."""
    try:
        from agent.plugin_llm import PluginLlm
    except ImportError:
        raise LlmUnavailable("llm is hermes, but Hermes Agent is not installed here.") from None
    try:
        result = PluginLlm(plugin_id="cmms").complete(messages, max_tokens=max_tokens, timeout=timeout,
                                                      purpose=purpose or "cmms")
    except Exception as exc:  # noqa: BLE001 - outside a Hermes process, or the model failed
        raise LlmUnavailable(f"Hermes' plugin LLM did not answer ({_brief(exc)}).") from exc
    return (result.text or "").strip()


def _http(url: str, model: str, messages: list[dict], max_tokens: int, timeout: float) -> str:
    """POST {url}/chat/completions and return the first choice's text."""
    body = json.dumps({"model": model or "default", "messages": messages, "max_tokens": max_tokens})
    headers = {"Content-Type": "application/json"}
    if os.environ.get(API_KEY_ENV):
        headers["Authorization"] = f"Bearer {os.environ[API_KEY_ENV]}"
    request = urllib.request.Request(f"{url}/chat/completions", data=body.encode(), headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise LlmUnavailable(f"The LLM at {url} answered HTTP {exc.code}.") from None
    except (urllib.error.URLError, OSError) as exc:
        raise LlmUnavailable(f"The LLM at {url} could not be reached ({_brief(exc)}).") from None
    except ValueError:
        raise LlmUnavailable(f"The LLM at {url} did not answer with JSON.") from None
    return _reply_text(payload, url)


def _reply_text(payload, url: str) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LlmUnavailable(f"The LLM at {url} answered without a chat completion.") from None
    return (content or "").strip() if isinstance(content, str) else ""


def _brief(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return " ".join(str(reason).split())[:160].rstrip(".") or type(exc).__name__


# -- extraction --------------------------------------------------------------------------------

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
