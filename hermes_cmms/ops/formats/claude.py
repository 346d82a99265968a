"""The Claude.ai data export (Settings > Privacy > Export data): `conversations.json`, a JSON
array of conversations, each with its `chat_messages`; and `memories.json`, Claude's saved
memory. Accepted as the file itself, the unpacked export folder (at any depth, `__MACOSX/`
skipped) or the ZIP (named .zip or not). Field notes: ../shared/formats/claude-ai-export.md.

One session per conversation; one memory per message of the branch the user ended on: 2025+
exports form a tree (`parent_message_uuid`, an all-zero root), whose latest leaf is walked up
to the root, the other branches skipped; 2024 exports are a flat list in no reliable order,
sorted by time (a person's message before the reply stamped the same second). A message is its
`text` blocks only: thinking, tool calls and tool results (which sit inside the assistant's
message) are skipped and counted; a long paste lives in an attachment's `extracted_content`;
a 2024 reply's inline `<antThinking>` is dropped and an `<antArtifact>` is left as its title
(in its `text` and in the text blocks of the `content` beside it alike); the
files attached are named (`[attached: a.png]`: the export has their names, not their bytes).
The conversation's summary (model-written) is a `summary` memory; `memories.json` gives one
semantic note per memory file, per paragraph of the account's memory, per project memory.
`users.json` and the project files are personal data or settings and are not read.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Iterator, Optional

from ...common.errors import InvalidInput
from . import Skipped, memory, session, streamed_json_array, timestamp

NAME = "claude"
ROOT = "00000000-0000-4000-8000-000000000000"  # the parent of a 2025+ conversation's first message
HEAD_BYTES = 64 * 1024
ROLES = {"human": "user", "assistant": "assistant"}
BLOCKS_SKIPPED = {"thinking": "thinking (reasoning) block", "redacted_thinking": "thinking (reasoning) block",
                  "tool_use": "tool call block", "tool_result": "tool result block",
                  "token_budget": "token budget block", "flag": "safety notice block"}
THINKING_TAG = re.compile(r"(?<!`)<(/?)antThinking>")  # (a tag in backticks is prose about it)
ARTIFACT = re.compile(r'(?<!`)<antArtifact\b((?:[^>"]|"[^"]*")*)>.*?(?:</antArtifact>|\Z)', re.S)
TITLE = re.compile(r'\btitle="([^"]*)"')


def sniff(path: Path) -> bool:
    """A conversations.json whose start holds Claude's `chat_messages` (ChatGPT's has
    `mapping`), or a folder or ZIP holding one."""
    try:
        with _conversations(path) as handle:
            head = handle.read(HEAD_BYTES)
    except (OSError, InvalidInput, zipfile.BadZipFile):
        return False
    return head.lstrip()[:1] == b"[" and b'"chat_messages"' in head


def records(path: Path, *, scope: str) -> Iterator[dict | Skipped]:
    """The export's sessions and memories (see the module docstring)."""
    where = path.name if path.is_file() and not _is_zip(path) else f"conversations.json in {path.name}"
    with _conversations(path) as handle:
        for index, conversation in enumerate(streamed_json_array(handle, where=where)):
            if not isinstance(conversation, dict) or not isinstance(conversation.get("chat_messages"), list):
                raise InvalidInput(f"Conversation {index} of {where} is not a Claude conversation "
                                   f"(an object with chat_messages); nothing after it was read.")
            yield from _conversation(conversation, index)
    yield from _memories(path)


# -- the files of an export ---------------------------------------------------------------------

@contextmanager
def _conversations(path: Path) -> Iterator[IO[bytes]]:
    with _member(path, "conversations.json", required=True) as handle:
        yield handle


@contextmanager
def _member(path: Path, name: str, required: bool) -> Iterator[Optional[IO[bytes]]]:
    """The export's file `name`: `path` itself, in the folder `path` or in the ZIP `path`."""
    if path.is_dir():
        found = _first(p for pattern in (name, f"*/{name}", f"*/*/{name}") for p in sorted(path.glob(pattern))
                       if _wanted(p.relative_to(path)))  # a wrapper folder or two, not a walk of a whole disk
        if found is None:
            _missing(path, name, required)
        with (found.open("rb") if found else _empty()) as handle:
            yield handle
    elif _is_zip(path):
        with zipfile.ZipFile(path) as archive:
            found = _first(n for n in sorted(archive.namelist())
                           if PurePosixPath(n).name == name and _wanted(PurePosixPath(n)))
            if found is None:
                _missing(path, name, required)
            with (archive.open(found) if found else _empty()) as handle:
                yield handle
    elif path.name == name or required:
        with path.open("rb") as handle:
            yield handle
    else:
        with _empty() as handle:  # a lone conversations.json: no memories.json beside it is read
            yield handle


def _first(items) -> Optional[object]:
    return next(iter(items), None)


def _wanted(relative: PurePosixPath) -> bool:
    return not any(part == "__MACOSX" or part.startswith(".") for part in relative.parts)


def _missing(path: Path, name: str, required: bool) -> None:
    if required:
        raise InvalidInput(f"{path.name} holds no {name}: point at a Claude export's conversations.json, its "
                           f"folder or its ZIP.")


@contextmanager
def _empty() -> Iterator[None]:
    yield None


def _is_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"PK\x03\x04"


# -- one conversation ---------------------------------------------------------------------------

def _conversation(conversation: dict, index: int) -> Iterator[dict | Skipped]:
    cid = _text(conversation.get("uuid")) or f"index-{index}"
    where = f"conversation {index} ({cid})"
    started = timestamp(conversation.get("created_at"))
    messages = [m for m in conversation["chat_messages"] if isinstance(m, dict)]
    path, alternates = _active_branch(messages)
    for message in alternates:
        yield Skipped("message on an edited or retried-away branch", f"{where}, message {_text(message.get('uuid'))}")
    memories, turn = [], 0
    for message in path:
        role = ROLES.get(_text(message.get("sender")))
        mid = _text(message.get("uuid")) or f"position-{len(memories)}"
        mwhere = f"{where}, message {mid}"
        if role is None:
            yield Skipped("message from an unknown sender", mwhere)
            continue
        content, skipped = _content(message, role)
        for reason in skipped:
            yield Skipped(reason, mwhere)
        if not content:
            yield Skipped("message without text", mwhere)
            continue
        if role == "user" or turn == 0:
            turn += 1
        memories.append(memory(NAME, (cid, mid), content, original=f"claude:conversation/{cid}/message/{mid}",
                               created_at=timestamp(message.get("created_at")),
                               updated_at=timestamp(message.get("updated_at")), role=role, turn=turn,
                               conversation=cid))
    summary = _summary(conversation)
    if not memories and not summary:
        yield Skipped("conversation without messages", where)
        return
    ended = timestamp(conversation.get("updated_at"))
    yield session(NAME, cid, started_at=started, turns=turn, ended_at=ended)
    yield from memories
    if summary:
        yield memory(NAME, (cid, "summary"), summary, original=f"claude:conversation/{cid}/summary",
                     created_at=ended or started, tier="semantic", kind="summary", conversation=cid)


def _active_branch(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the messages of the branch the user ended on, oldest first; the others)."""
    if not any("parent_message_uuid" in m for m in messages):  # a 2024 export: flat, any order
        order = sorted(range(len(messages)), key=lambda i: (timestamp(messages[i].get("created_at")) or 0.0,
                                                            _text(messages[i].get("sender")) != "human", i))
        return [messages[i] for i in order], []
    by_id = {_text(m.get("uuid")): m for m in messages}
    parents = {_text(m.get("parent_message_uuid")) for m in messages} - {""}
    leaves = [i for i, m in enumerate(messages) if _text(m.get("uuid")) not in parents]
    if not leaves:  # every message is a parent: a cycle; fall back to the list
        return messages, []
    leaf = max(leaves, key=lambda i: (timestamp(messages[i].get("created_at")) or 0.0, i))
    path, node = [], messages[leaf]
    while node is not None and len(path) < len(messages):
        path.append(node)
        parent = _text(node.get("parent_message_uuid"))
        node = by_id.get(parent) if parent and parent != ROOT else None
    kept = {id(m) for m in path}
    return path[::-1], [m for m in messages if id(m) not in kept]


def _content(message: dict, role: str) -> tuple[str, list[str]]:
    """The message's words and the reasons for what was left out of them: its `text` blocks, or
    its `text` where it has none; the assistant's inline markup (2024 replies have it in both
    shapes, `text` alone and `text` beside a `content` list of text blocks) stripped."""
    blocks, skipped = message.get("content"), []
    if isinstance(blocks, list) and blocks:
        parts = []
        for block in blocks:
            kind = _text(block.get("type")) if isinstance(block, dict) else ""
            if kind == "text":
                parts.append(_text(block.get("text")).strip())
            else:
                skipped.append(BLOCKS_SKIPPED.get(kind, f"{kind or 'unknown'} block"))
        text = "\n\n".join(p for p in parts if p)
    else:
        text = _text(message.get("text"))
    if role == "assistant":
        text, removed = _without_markup(text)
        skipped += removed
    pasted = [_text(a.get("extracted_content")).strip() for a in _list(message.get("attachments"))
              if isinstance(a, dict)]
    if not text and any(pasted):
        text = "\n\n".join(p for p in pasted if p)
    names = _files(message)
    if names:  # as the ChatGPT import names them
        text = f"{text.strip()}\n[attached: {', '.join(names)}]"
    return text.strip(), skipped


def _without_markup(text: str) -> tuple[str, list[str]]:
    """2024 assistant text without its inline reasoning, each artifact left as its title."""
    text, blocks = _without_thinking(text)
    skipped = ["thinking (reasoning) block"] * blocks

    def title(match: re.Match) -> str:
        skipped.append("artifact body")
        found = TITLE.search(match.group(1))
        return f"[artifact: {found.group(1)}]" if found else "[artifact]"
    text = ARTIFACT.sub(title, text)
    return re.sub(r"\n{3,}", "\n\n", text).strip(), skipped


def _without_thinking(text: str) -> tuple[str, int]:
    """The text without its `<antThinking>` blocks, nested ones whole, one left open (a reply
    cut short) to the end; and how many were removed."""
    kept, depth, at, blocks = [], 0, 0, 0
    for tag in THINKING_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if depth == 0 and not closing:
            kept.append(text[at:tag.start()])
            blocks += 1
        if depth or not closing:  # (a stray closing tag outside a block is left as written)
            depth += -1 if closing else 1
            at = tag.end()
    if depth == 0:
        kept.append(text[at:])
    return "".join(kept), blocks


def _files(message: dict) -> list[str]:
    """The names of the files attached to a message (the export has the names, not the bytes)."""
    return [_text(f.get("file_name")) for f in _list(message.get("files")) + _list(message.get("attachments"))
            if isinstance(f, dict) and _text(f.get("file_name"))]


def _summary(conversation: dict) -> str:
    summary = _text(conversation.get("summary")).strip()
    name = _text(conversation.get("name")).strip()
    return f"{name}\n\n{summary}" if summary and name else summary


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _list(value) -> list:
    return value if isinstance(value, list) else []


# -- memories.json ------------------------------------------------------------------------------

def _memories(path: Path) -> Iterator[dict | Skipped]:
    """Claude's saved memory (memories.json beside conversations.json): already distilled
    facts about the person, each a semantic note."""
    with _member(path, "memories.json", required=False) as handle:
        if handle is None:
            return
        try:
            data = json.load(io.TextIOWrapper(handle, encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"memories.json in {path.name} is not valid JSON ({exc}); the conversations "
                               f"before it were read.") from None
    for number, item in enumerate(data if isinstance(data, list) else [data]):
        if not isinstance(item, dict):
            yield Skipped("memories.json entry that is not an object", f"memories.json entry {number}")
            continue
        yield from _memory_notes(item)


def _memory_notes(item: dict) -> Iterator[dict]:
    """The notes of one memories.json object (the account's memory text has no date: the
    import dates it by the file)."""
    account = _text(item.get("account_uuid")) or "account"
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", _text(item.get("conversations_memory")))]
    for number, paragraph in enumerate(p for p in paragraphs if p):
        yield _note(paragraph, (account, "memory", str(number)), ["claude-memory"], None)
    projects = item.get("project_memories") if isinstance(item.get("project_memories"), dict) else {}
    for project, text in sorted(projects.items()):
        if _text(text).strip():
            yield _note(text.strip(), (account, "project", project), ["claude-memory", "claude-project"], None)
    for entry in item.get("memory_files") if isinstance(item.get("memory_files"), list) else []:
        if isinstance(entry, dict) and _text(entry.get("content")).strip():
            at = timestamp(entry.get("updated_at"))
            yield _note(entry["content"].strip(), (account, "file", _text(entry.get("path"))), ["claude-memory"], at)


def _note(content: str, ids: tuple[str, ...], tags: list[str], at: Optional[float]) -> dict:
    return memory(NAME, ids, content, original="claude:memory/" + "/".join(ids), created_at=at,
                  tier="semantic", kind="note", tags=tags)
