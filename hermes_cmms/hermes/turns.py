"""What Hermes hands the provider about a conversation, read as the engine takes it: the turns
of a transcript before a compaction, and who wrote a turn."""
from __future__ import annotations

from typing import Any, Optional

from ..common.text import MEMORY_BLOCK


def evidence(messages: Any) -> list[tuple[str, str]]:
    """The (user, assistant) turns of `messages`: Hermes 0.23's normalised user/assistant
    evidence, or 0.19's raw transcript (tool calls and results, system prompts and recalled
    memory blocks left out; a turn's answer is its last assistant text)."""
    turns: list[list[str]] = []
    for message in messages if isinstance(messages, (list, tuple)) else ():
        if not isinstance(message, dict) or message.get("tool_calls"):
            continue
        role, text = message.get("role"), _text(message.get("content"))
        if role == "user" and text:
            turns.append([text, ""])
        elif role == "assistant" and text and turns:
            turns[-1][1] = text
    return [(user, assistant) for user, assistant in turns]


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a multimodal list joined by lines."""
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content
                            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return MEMORY_BLOCK.sub("", content).strip() if isinstance(content, str) else ""


def author(turn_author: Any = None, **named: Any) -> Optional[dict]:
    """Who wrote a turn: sync_turn's `turn_author` {"id", "name", "is_bot"}, else on_turn_start's
    author_id / author_name / author_is_bot; None when neither names anyone."""
    if isinstance(turn_author, dict):
        return turn_author
    found = {key: named.get(f"author_{key}") for key in ("id", "name", "is_bot")}
    return found if any(value is not None for value in found.values()) else None


def client(kwargs: dict) -> str:
    """The gateway client that sent the turn, where Hermes announces it (kwarg `client`)."""
    value = kwargs.get("client")
    return value if isinstance(value, str) else ""
