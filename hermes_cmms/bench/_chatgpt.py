"""Conversations written as ChatGPT's data export writes them (conversations.json: an array of
conversations, each a `mapping` tree from a message-less root through a hidden system message
to the last reply, `current_node` its leaf, times in epoch seconds; the shape described in
../shared/formats/chatgpt-export.md and read by ops/formats/chatgpt.py), so a benchmark can feed
a conversation through the real importer instead of turn by turn."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Iterable, Sequence

Message = tuple[str, str, float]  # (author role: "user" or "assistant", text, epoch seconds)


def conversation(conversation_id: str, title: str, messages: Sequence[Message]) -> dict:
    """One conversation object: root, hidden system message, then `messages` in a line."""
    root, system = "client-created-root", _node_id(conversation_id, "system")
    mapping = {root: {"id": root, "message": None, "parent": None, "children": [system]}}
    parent, start = root, messages[0][2] if messages else 0.0
    nodes = [(system, _message(system, "system", "", None, hidden=True))]
    nodes += [(_node_id(conversation_id, n), _message(_node_id(conversation_id, n), role, text, at))
              for n, (role, text, at) in enumerate(messages)]
    for node_id, message in nodes:
        mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
        mapping[parent]["children"].append(node_id)
        parent = node_id
    return {"id": conversation_id, "conversation_id": conversation_id, "title": title, "create_time": start,
            "update_time": messages[-1][2] if messages else start, "current_node": parent,
            "default_model_slug": "gpt-4o", "is_archived": False, "mapping": mapping}


def _node_id(conversation_id: str, part: object) -> str:
    return str(uuid.uuid5(uuid.UUID(conversation_id), str(part)))


def _message(node_id: str, role: str, text: str, at, hidden: bool = False) -> dict:
    return {"id": node_id, "author": {"role": role, "name": None, "metadata": {}}, "create_time": at,
            "update_time": None, "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "end_turn": role != "user", "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all", "channel": None}


def write(path: Path, conversations: Iterable[dict]) -> Path:
    """Write conversations.json as ChatGPT does: one minified line."""
    path.write_text(json.dumps(list(conversations), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return path
