"""ChatGPT's data export: the ZIP, its unpacked folder, or one JSON file of it
(`conversations.json`, or the `conversations-000.json`... shards of newer exports, read in
order). Each conversation is a tree of messages; the branch imported is the one the user
ended on (`current_node` up to the root), so regenerated and edited-away replies are left out
(and counted, as OFF_BRANCH).
Only what the user saw is kept: user and assistant messages with text, addressed to the user;
system, tool, hidden messages, tool calls, custom instructions and ChatGPT's own memory
snapshot are counted as skipped. A conversation marked "do not remember" is skipped whole.
Notes on the format: docs/import.md and the issue's format notes."""
from __future__ import annotations

import re
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Optional

from ...common.errors import InvalidInput
from . import Skipped, json_error, memory, session, timestamp

NAME = "chatgpt"
SHARD = re.compile(r"conversations-(\d+)\.json$")
CITATION = re.compile("\ue200[^\ue201]*\ue201|[\ue200-\ue202]|【\\d+†[^】]{0,80}】")
HEAD = 16384
OFF_BRANCH = "a message not on the branch the user ended on (a reply regenerated or a message edited away)"


def sniff(path: Path) -> bool:
    with _opened(path) as files:
        for _name, handle in files:
            head = handle.read(HEAD)
            return head.lstrip()[:1] in (b"[", b"{") and b'"mapping"' in head
    return False


def records(path: Path, *, scope: str) -> Iterator[Any]:
    with _opened(path) as files:
        index = 0
        for name, handle in files:
            for conversation in _conversations(handle, name):
                yield from _conversation(conversation, index, name)
                index += 1


# -- the files --------------------------------------------------------------------------------

@contextmanager
def _opened(path: Path):
    """(name, binary handle) of each conversations file of `path`, in order, lazily."""
    archive = zipfile.ZipFile(path) if path.is_file() and zipfile.is_zipfile(path) else None
    try:
        yield _files(path, archive)
    finally:
        if archive is not None:
            archive.close()


def _files(path: Path, archive: Optional[zipfile.ZipFile]) -> Iterator[tuple[str, IO[bytes]]]:
    if archive is not None:
        names = {Path(name).name: name for name in archive.namelist()}
        for base in _ordered(names):
            with archive.open(names[base]) as handle:
                yield base, handle
    elif path.is_dir():
        names = {child.name: child for child in path.iterdir() if child.is_file()}
        for base in _ordered(names):
            with names[base].open("rb") as handle:
                yield base, handle
    elif path.is_file():
        with path.open("rb") as handle:
            yield path.name, handle


def _ordered(names) -> list[str]:
    """conversations.json, else the shards in numeric order."""
    if "conversations.json" in names:
        return ["conversations.json"]
    return sorted((name for name in names if SHARD.match(name)), key=lambda name: int(SHARD.match(name)[1]))


def _conversations(handle: IO[bytes], name: str) -> Iterator[Any]:
    """The conversations of one file: a JSON array, or an object holding one under
    "conversations" (what some scripts write)."""
    import ijson

    head = handle.read(HEAD)
    handle.seek(0)
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first not in (b"[", b"{"):
        raise InvalidInput(f"{name} is not a ChatGPT export: it is not a JSON array of conversations.")
    prefix = "item" if first == b"[" else "conversations.item"
    index = -1
    try:
        for index, item in enumerate(ijson.items(handle, prefix, use_float=True)):
            yield item
    except ijson.JSONError as exc:
        raise InvalidInput(f"{name} is not valid JSON after conversation {index + 1} ({json_error(exc)}).") from None


# -- one conversation -------------------------------------------------------------------------

def _conversation(conversation: Any, index: int, name: str) -> Iterator[Any]:
    where = f"{name}, conversation {index}"
    if not isinstance(conversation, dict) or not isinstance(conversation.get("mapping"), dict):
        yield Skipped("not a conversation (no message tree)", where)
        return
    cid = str(conversation.get("conversation_id") or conversation.get("id") or f"index-{index}")
    where = f"{where} ({cid})"
    if conversation.get("is_do_not_remember") is True:
        yield Skipped("a conversation marked do-not-remember", where)
        return
    started, turns, kept, last = timestamp(conversation.get("create_time")), 0, [], None
    branch = _branch(conversation["mapping"], conversation.get("current_node"))
    yield from _off_branch(conversation["mapping"], {node_id for node_id, _ in branch}, where)
    for node_id, message in branch:
        text, reason = _visible(message)
        if reason:
            yield Skipped(reason, f"{where}, message {node_id}")
            continue
        role = message["author"]["role"]
        turns += role == "user"
        last = timestamp(message.get("create_time")) or last
        kept.append((str(message.get("id") or node_id), role, text, last, max(turns, 1)))
    if not kept:
        yield Skipped("a conversation with no message to keep", where)
        return
    yield session(NAME, cid, started_at=started if started is not None else kept[0][3], turns=max(turns, 1),
                  ended_at=timestamp(conversation.get("update_time")))
    for mid, role, text, at, turn in kept:
        yield memory(NAME, (cid, mid), text, original=f"chatgpt:conv/{cid}/msg/{mid}", created_at=at,
                     role=role, turn=turn, conversation=cid, tags=("chatgpt",))


def _branch(mapping: dict, current: Any) -> list[tuple[str, Any]]:
    """(node id, message) from the root to `current` (else to the latest leaf), guarded
    against cycles and dangling parents."""
    if not isinstance(current, str) or current not in mapping:
        current = _latest_leaf(mapping)
    path, seen = [], set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current] if isinstance(mapping[current], dict) else {}
        path.append((current, node.get("message")))
        current = node.get("parent")
    return path[::-1]


def _off_branch(mapping: dict, branch: set, where: str) -> Iterator[Skipped]:
    """A Skipped for each message of the tree that is not on the branch imported: a reply
    regenerated, a message edited away (OFF_BRANCH), or what would be skipped anyway (ChatGPT's
    memory snapshot, a tool message), by that reason."""
    for node_id, node in mapping.items():
        message = node.get("message") if isinstance(node, dict) else None
        if node_id in branch or not isinstance(message, dict):
            continue
        reason = _visible(message)[1]
        yield Skipped(reason or OFF_BRANCH, f"{where}, message {node_id}")


def _latest_leaf(mapping: dict) -> Optional[str]:
    leaves = [key for key, node in mapping.items() if isinstance(node, dict) and not node.get("children")]

    def created(key):
        message = mapping[key].get("message")
        return (timestamp(message.get("create_time")) or 0.0) if isinstance(message, dict) else 0.0

    return max(leaves, key=created, default=None)


def _visible(message: Any) -> tuple[str, Optional[str]]:
    """The message's text and None, or ("", why it is skipped)."""
    if not isinstance(message, dict):
        return "", "a node without a message"
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = author.get("role")
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    kind = content.get("content_type")
    if kind == "user_editable_context" or metadata.get("is_user_system_message"):
        return "", "custom instructions (a profile, not a turn)"
    if kind == "model_editable_context":
        return "", "ChatGPT's memory snapshot"
    if metadata.get("is_visually_hidden_from_conversation"):
        return "", "a hidden message"
    if role not in ("user", "assistant"):
        return "", f"a {role if role in ('system', 'tool') else 'non-user, non-assistant'} message"
    if message.get("recipient", "all") != "all" or message.get("channel") not in (None, "final"):
        return "", "a tool call"
    if kind not in (None, "text", "multimodal_text"):
        return "", f"a message of type {str(kind)[:40]}"
    text = CITATION.sub("", _text(content)).strip()
    names = [a.get("name") for a in metadata.get("attachments") or () if isinstance(a, dict) and a.get("name")]
    if names:
        text = f"{text}\n[attached: {', '.join(map(str, names))}]".strip()
    return (text, None) if text else ("", "a message without text")


def _text(content: dict) -> str:
    parts = content.get("parts")
    if isinstance(parts, list):
        return "".join(p if isinstance(p, str) else p.get("text", "") if isinstance(p, dict)
                       and isinstance(p.get("text"), str) else "" for p in parts)
    for name in ("text", "result"):
        if isinstance(content.get(name), str):
            return content[name]
    return ""
