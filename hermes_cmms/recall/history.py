"""What each session stored and was given: sessions, a session's timeline of turns, and the
latest recalls (from the recall events, which keep ids and ranks only; the answers add each
memory's text as it reads now)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..common.checks import scope_of
from ..common.errors import InvalidInput
from ..common.text import brief, clean_key
from ..common.vocabulary import MAX_HISTORY_PAGE
from . import _rows as recall_events
from ..store.models import Memory
from .block import settled

if TYPE_CHECKING:
    from ..engine import Engine

SHORT_CHARS = 120  # of a stored memory's text in a timeline


def sessions(engine: "Engine", scope: str, offset: int = 0, limit: int = 50) -> list[dict]:
    """The scope's sessions, newest first: session_id, started_at, turns, flushed_at, recalls,
    and `first`, the start of its first user message (None if it stored none)."""
    _page(offset, limit)
    settled()
    return recall_events.sessions(engine.store, scope_of(scope), offset, limit)


def recent_recalls(engine: "Engine", scope: Optional[str] = None, limit: int = 10) -> list[dict]:
    """The newest recalls (of `scope`, or of every scope), newest first: scope, session_id,
    turn, at and `recalled` [{memory_id, rank, text}]."""
    _page(0, limit)
    settled()
    events = recall_events.recent(engine.store, scope_of(scope) if scope is not None else None, limit)
    for event in events:
        _with_texts(engine, event["scope"], event["recalled"])
    return events


def session_timeline(engine: "Engine", scope: str, session_id: str) -> dict:
    """Each turn of a session, oldest first: what it stored (ids and the start of their text)
    and what it was given (`recalled`: ids, ranks and the start of the text of the last block
    recalled for it, None for one since expired; `recalled_at` when). A block given to a compaction's summary (kind "summary") is no turn's."""
    scope = scope_of(scope)
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput("The session id must be a non-empty string.")
    key = clean_key(session_id)
    settled()
    stored, recalls = recall_events.session_memories(engine.store, scope, key), recall_events.of_session(
        engine.store, scope, key)
    if not stored and not recalls:
        raise InvalidInput(f"No session {brief(repr(session_id), 80)} in this scope.")
    turns: dict[int, dict] = {}
    for memory in stored:
        turn = turns.setdefault(_turn_of(memory, stored), {"turn": _turn_of(memory, stored), "at": memory.created_at,
                                                            "stored": [], "recalled": [],
                                                            "recalled_at": None})
        turn["stored"].append({"memory_id": memory.id, "kind": memory.kind, "role": memory.role,
                               "text": memory.content[:SHORT_CHARS]})
    given = {event["turn"] or 0: event for event in recalls if event["kind"] == "turn"}  # the last of each turn
    for number, event in given.items():
        _with_texts(engine, scope, event["recalled"])
        turn = turns.setdefault(number, {"turn": number, "at": event["at"], "stored": []})
        turn["at"], turn["recalled"], turn["recalled_at"] = min(turn["at"], event["at"]), event["recalled"], event["at"]
    return {"session_id": key, "turns": [turns[t] for t in sorted(turns)]}


def _with_texts(engine: "Engine", scope: str, recalled: list[dict]) -> None:
    """Each recalled memory with the start of its text (`text`), None for one since forgotten:
    a door shows what was recalled, not only its id."""
    found = engine.store.get([item["memory_id"] for item in recalled], scope) if recalled else {}
    for item in recalled:
        memory = found.get(item["memory_id"])
        item["text"] = memory.content[:SHORT_CHARS] if memory is not None else None


def _turn_of(memory: Memory, stored: list[Memory]) -> int:
    """A memory's turn; one written in a session without a turn (a note) belongs to the turn
    of the last message before it (0 before any)."""
    if memory.turn:
        return memory.turn
    return max((m.turn for m in stored if m.turn and m.created_at <= memory.created_at), default=0)


def _page(offset: int, limit: int) -> None:
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (offset, limit)) \
            or not (1 <= limit <= MAX_HISTORY_PAGE and offset >= 0):
        raise InvalidInput(f"A page is 1 to {MAX_HISTORY_PAGE} items from an offset of 0 or more, not {limit!r} "
                           f"from {offset!r}.")
