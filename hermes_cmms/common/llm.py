"""The LLM client for optional work, chosen by the `llm` setting: "off", "hermes" (Hermes'
plugin LLM: the user's own model and auth, inside a Hermes process) or the base URL of an
OpenAI-compatible endpoint (called with the standard library, key in CMMS_LLM_API_KEY).
Extraction and consolidation both ask through here."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from .errors import InvalidInput, LlmUnavailable

API_KEY_ENV = "CMMS_LLM_API_KEY"
OFF = "No LLM is configured (set llm to hermes or an OpenAI-compatible URL)."
ROLES = ("system", "user", "assistant")


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
    except Exception as exc:  # outside a Hermes process, or the model failed
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
