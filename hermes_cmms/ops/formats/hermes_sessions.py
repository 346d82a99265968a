"""Hermes' own sessions (`state.db` in a Hermes home): each session's messages, in the order
Hermes wrote them, into the scope the cmms provider gives that session's user (the profile's
`local:<profile>` for the CLI and other local platforms, `user:<platform>:<id>` for a gateway
user, `conversation:<platform>:<key>` for a gateway that names no user). Kept: what the user
and the agent said. Skipped and counted: tool calls and results, system and bookkeeping rows,
rewound messages, group messages not addressed to the agent, hidden rows, compaction summaries
(the real message after one is kept), background review prompts, sub-agent sessions. The
recalled-memory fence Hermes' providers put into user turns is removed, so an import does not
feed recalled memories back in as things said."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from ...common.scopes import local_scope, scope_for
from ...common.text import MEMORY_BLOCK
from . import _hermes_files as hermes_files
from . import Skipped, memory, session, timestamp

NAME = "hermes-state"
SENTINEL = "\x00json:"
FENCE_TAG = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
SYSTEM_NOTE = re.compile(r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.[^\]]*\]\s*",
                         re.IGNORECASE)
SUMMARY_STARTS = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:", "[PRIOR CONTEXT")
SUMMARY_END = "--- END OF CONTEXT SUMMARY"
REVIEW_STARTS = ("Review the conversation above and update the skill library",
                 "Review the conversation above and consider saving to memory")


def sniff(path: Path) -> bool:
    return path.is_file() and {"sessions", "messages"} <= hermes_files.tables(path)


def records(path: Path, *, scope: str) -> Iterator[Any]:
    profile = local_scope(path.resolve().parent).split(":", 1)[1]
    with hermes_files.copy_of(path) as conn:
        for row in hermes_files.hermes_sessions(conn):
            yield from _session(row, hermes_files.hermes_messages(conn, row["id"]), profile)


def _session(row: dict, messages: list[dict], profile: str) -> Iterator[Any]:
    sid, where = str(row["id"]), f"session {row['id']}"
    if row.get("source") == "tool" or "_delegate_from" in str(row.get("model_config") or ""):
        yield Skipped("a sub-agent's session", where)
        return
    platform = row.get("source") or "cli"
    scope = scope_for(platform, row.get("user_id"), profile,
                      str(row.get("session_key") or row.get("chat_id") or sid))
    kept, turns, after_review = [], 0, False
    for message in messages:
        text, reason = _said(message, after_review)
        after_review = reason == "a background review prompt"
        if reason:
            yield Skipped(reason, f"{where}, message {message['id']}")
            continue
        turns += message["role"] == "user"
        kept.append((message, text, max(turns, 1)))
    if not kept:
        yield Skipped("a session with no message to keep", where)
        return
    yield session(NAME, sid, started_at=timestamp(row.get("started_at")), turns=max(turns, 1),
                  ended_at=timestamp(row.get("ended_at")), scope=scope, known_as=sid)
    for message, text, turn in kept:
        yield memory(NAME, (sid, message["id"]), text, original=f"hermes:session/{sid}/message/{message['id']}",
                     created_at=timestamp(message.get("timestamp")), role=message["role"], turn=turn,
                     conversation=sid, tags=(f"hermes-{platform}",), scope=scope)


def _said(message: dict, after_review: bool) -> tuple[str, Optional[str]]:
    """The message's text and None, or ("", why it is skipped)."""
    role = message.get("role")
    if not message.get("active", 1) and not message.get("compacted", 0):
        return "", "a rewound message"
    if message.get("observed"):
        return "", "a group message not addressed to the agent"
    if message.get("display_kind") == "hidden":
        return "", "a hidden message"
    if message.get("_compressed_summary"):
        return "", "a compaction summary"
    if role not in ("user", "assistant"):
        return "", {"tool": "a tool's output", "session_meta": "gateway bookkeeping"}.get(role, "a system message")
    text = _decoded(message.get("content"))
    if text.startswith(REVIEW_STARTS):
        return "", "a background review prompt"
    if after_review and role == "assistant":
        return "", "the reply to a background review prompt"
    if text.startswith(SUMMARY_STARTS):
        text = text.split(SUMMARY_END, 1)[1].split("\n", 1)[-1] if SUMMARY_END in text else ""
        if not text.strip():
            return "", "a compaction summary"
    text = FENCE_TAG.sub("", SYSTEM_NOTE.sub("", MEMORY_BLOCK.sub("", text))).strip()
    if not text:
        return "", "a tool call" if role == "assistant" and message.get("tool_calls") else "a message without text"
    return text, None


def _decoded(content: Any) -> str:
    """Plain text, or the text parts of the structured content Hermes stores behind its
    sentinel (an image is named, not kept)."""
    if not isinstance(content, str):
        return ""
    if not content.startswith(SENTINEL):
        return content
    try:
        value = json.loads(content[len(SENTINEL):])
    except ValueError:
        return ""
    if isinstance(value, str):
        return value
    parts = value if isinstance(value, list) else [value]
    texts = [p.get("text") if p.get("type") == "text" else "[image]" if "image" in str(p.get("type")) else None
             for p in parts if isinstance(p, dict)]
    return " ".join(t for t in texts if isinstance(t, str) and t)


def history(home: Path) -> Optional[dict]:
    """What the state.db of a Hermes home holds (sessions, messages, first and last start, its
    path), or None when there is none or it cannot be read."""
    path = Path(home) / "state.db"
    if not sniff(path):
        return None
    size = hermes_files.history_size(path)
    return None if size is None else {"path": str(path), **size}
