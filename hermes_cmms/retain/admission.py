"""Admission: redact first, refuse what is nothing but secrets, classify notes, compare explicit
semantic notes with what is stored; then the retain hook writes. An import's memories, checked
and redacted by the import (ops/transfer), are written by the same hook (retain_imported)."""
from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from ..common import lifecycle_rules as lifecycle
from ..common.checks import scope_of, tags_of
from ..common.errors import InvalidInput
from ..common.plugins import run_redactors
from ..common.text import UNDECODABLE, clean, clean_key, content_hash, map_strings
from ..store import turn_rows
from ..store.store import NewMemory
from .judge import judge as _judge

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

MAX_CONTENT_CHARS = 10_000_000
MAX_FACT_PART_CHARS = 2_000
MAX_NAME_CHARS = 200  # a turn author's name or id, a client's name
MAX_TTL_SECONDS = 10 * 365 * 86400


def retain_turn(engine: "Engine", scope: str, session_id: str, user: str, assistant: str,
                source: str = "hermes", author: Optional[Mapping] = None, client: str = "") -> list[str]:
    """Store one conversation turn verbatim; durable when this returns. `author` ({"id", "name",
    "is_bot"}: who wrote the user's message, in a group chat) makes that message its speaker's,
    and is kept with `client` (the gateway client that sent the turn) in its detail."""
    scope, session_id = scope_of(scope), clean_key(session_id or "")
    items = _turn(scope, session_id, user, assistant, source, author, client)
    if not items:
        return []
    return _retain(engine, scope, session_id, items, turn_of=(scope, session_id))


def checkpoint(engine: "Engine", scope: str, session_id: str, turns: Sequence[tuple[str, str]],
               source: str = "hermes") -> int:
    """Store the (user, assistant) `turns` of a conversation about to be compacted, each pair a
    turn, except the messages the scope already holds (as sync_turn or an earlier checkpoint
    stored them: none is stored or reinforced twice); how many messages were stored."""
    scope, session_id = scope_of(scope), clean_key(session_id or "")
    pairs = [_turn(scope, session_id, user, assistant, source, None, "") for user, assistant in turns]
    for item in (item for pair in pairs for item in pair):
        _admit(engine.pm, item, scope)  # as stored: what `held` compares
    held = turn_rows.held(engine.store, scope, {_key(item) for pair in pairs for item in pair})
    stored = 0
    for pair in pairs:
        new = [item for item in pair if _key(item) not in held]
        held |= {_key(item) for item in new}
        if new:
            stored += len(_stored(engine, scope, session_id, new, turn_of=(scope, session_id)))
    return stored


def _key(item: NewMemory) -> tuple[str, str]:
    return item.role or "", content_hash(item.content)


def _turn(scope: str, session_id: str, user: str, assistant: str, source: str,
          author: Optional[Mapping], client: str) -> list[NewMemory]:
    """The messages of one turn, the user's carrying its author and client."""
    speaker, detail = _provenance(author, client)
    return [NewMemory(scope=scope, content=text, role=role, session_id=session_id, source=source,
                      confidence=lifecycle.reliability(source), speaker=speaker if role == "user" else None,
                      detail=detail if role == "user" else None)
            for role, text in (("user", user), ("assistant", assistant))
            if isinstance(text, str) and clean(text).strip()]


def _provenance(author: Optional[Mapping], client: str) -> tuple[Optional[str], Optional[dict]]:
    """(speaker, detail) of a message from `author` ({"id", "name", "is_bot"}, any of them)
    sent through `client`: hostile values dropped or cut; the speaker is the name."""
    author = author if isinstance(author, Mapping) else {}
    said = {key: _short(author.get(key)) for key in ("id", "name")}
    said = {key: value for key, value in said.items() if value}
    if isinstance(author.get("is_bot"), bool):
        said["is_bot"] = author["is_bot"]
    detail = {"author": said} if said else {}
    if _short(client):
        detail["client"] = _short(client)
    return said.get("name"), detail or None  # (lower-cased once redacted, by _admit)


def _short(value) -> str:
    """A name or id as kept: a string or whole number, one line, at most MAX_NAME_CHARS."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    return " ".join(clean(str(value)).split())[:MAX_NAME_CHARS]


def store_note(engine: "Engine", scope: str, content: str, *, kind: str = "note", tier: str = "semantic",
               tags: Sequence[str] = (), source: str = "", session_id: Optional[str] = None,
               confidence: Optional[float] = None, ttl_seconds: Optional[float] = None,
               fact: Optional[tuple[str, str, str]] = None, detail: Optional[dict] = None,
               learned_from: Sequence[str] = (), supersedes: Sequence[str] = (), replaces: Sequence[str] = (),
               duplicate_of: Optional[str] = None, judge: bool = True, dedup: bool = True,
               belief: Optional[dict] = None, evidence: Sequence[dict] = (), role: Optional[str] = None,
               corrects: bool = False, said_at: Optional[float] = None) -> NewMemory:
    """Store one explicit memory; return it with its id and whether it reinforced one
    (the arguments are described at MemoryService.store_note; `role`, a message's, and
    `corrects`, for a user's correction of what it supersedes: see lifecycle/steer.py;
    `said_at`, when what it holds was said, if not now: an imported turn's date)."""
    _check_note(content, confidence, ttl_seconds)
    tags = tags_of(tags)
    scope, session_id = scope_of(scope), clean_key(session_id) if session_id else None
    expires_at = time.time() + ttl_seconds if ttl_seconds is not None else None
    if fact is not None:
        fact = tuple(run_redactors(engine.pm, clean(part), scope) for part in fact)
    item = NewMemory(scope=scope, content=content, kind=kind, tier="working" if expires_at else tier, role=role,
                     tags=tags, source=source, session_id=session_id,
                     confidence=lifecycle.reliability(source, confidence), expires_at=expires_at, fact=fact,
                     detail=detail, learned_from=tuple(learned_from), supersedes=tuple(supersedes),
                     replaces=tuple(replaces), duplicate_of=duplicate_of, dedup=dedup, belief=belief,
                     evidence=tuple(evidence), corrects=corrects, said_at=said_at)
    _retain(engine, scope, session_id, [item], turn_of=None, judge=judge)
    return item


def _check_note(content, confidence, ttl_seconds) -> None:
    """InvalidInput unless the note's text, confidence and time to live are usable."""
    if not isinstance(content, str) or not clean(content).strip():
        raise InvalidInput("Memory content must be a non-empty string.")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"Memory content is {len(content):,} characters; the limit is "
                           f"{MAX_CONTENT_CHARS:,}.")
    if confidence is not None and (isinstance(confidence, bool) or not isinstance(confidence, (int, float))
                                   or not 0.0 <= confidence <= 1.0):
        raise InvalidInput(f"Confidence must be a number from 0 to 1, not {confidence!r}.")
    if ttl_seconds is not None and (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float))
                                    or not 0 < ttl_seconds <= MAX_TTL_SECONDS):
        raise InvalidInput(f"ttl_seconds must be a number of seconds from 1 to {MAX_TTL_SECONDS:,}, "
                           f"not {ttl_seconds!r}.")


def remember_fact(engine: "Engine", scope: str, subject: str, predicate: str, obj: str, *,
                  confidence: float = 1.0, source: str = "", tags: Sequence[str] = ()) -> str:
    """Store a subject-predicate-object fact; it is recalled like any memory and can be
    filtered by its parts."""
    parts = {"subject": subject, "predicate": predicate, "object": obj}
    for name, value in parts.items():
        if not isinstance(value, str) or not clean(value).strip():
            raise InvalidInput(f"The fact's {name} must be a non-empty string.")
        if len(value) > MAX_FACT_PART_CHARS:
            raise InvalidInput(f"The fact's {name} is {len(value):,} characters; the limit is "
                               f"{MAX_FACT_PART_CHARS:,}.")
    subject, predicate, obj = (" ".join(v.split()) for v in parts.values())
    return store_note(engine, scope, f"{subject} {predicate} {obj}", kind="fact", tags=tags,
                      source=source, confidence=confidence, fact=(subject, predicate, obj)).id


def _retain(engine: "Engine", scope: str, session_id: Optional[str], items: list[NewMemory],
            turn_of: Optional[tuple[str, str]], judge: bool = False) -> list[str]:
    """Admit `items` (see the module's docstring) and fire the retain hook; return the ids."""
    for item in items:
        _admit(engine.pm, item, scope)
    return _stored(engine, scope, session_id, items, turn_of, judge)


def _stored(engine: "Engine", scope: str, session_id: Optional[str], items: list[NewMemory],
            turn_of: Optional[tuple[str, str]], judge: bool = False) -> list[str]:
    """Admitted `items` written by the retain hook (those that are not only secrets); the ids."""
    kept = [item for item in items if not lifecycle.only_secrets(item.content)]
    if not kept:
        if turn_of is None:
            raise InvalidInput(_nothing_left(items))
        return []
    items = kept
    if judge and items[0].tier == "semantic" and not (items[0].fact or items[0].duplicate_of
                                                      or UNDECODABLE in items[0].content):
        _judge(engine, items[0])  # (an undecodable note is kept as it is: it folds into and replaces none)
    ids = _fire(engine, scope, session_id, items, turn_of)
    engine.indexer.queued(scope, ids)  # (a recall in the scope next waits for these vectors: settle)
    return ids


def retain_imported(engine: "Engine", scope: str, rows: Sequence[dict]) -> list[NewMemory]:
    """An import's memory rows (ops/transfer: checked, and every string passed through the
    registered redactors, as _admit passes a write's) written as every write is, by the retain
    hook: each is a NewMemory whose `row` the built-in auto-retain inserts as it is (its id,
    times, state and chain kept) unless its id is stored (`present`). The items."""
    items = [NewMemory(scope=scope, content=row["content"], kind=row["kind"], tier=row["tier"], role=row["role"],
                       session_id=row["session_id"], source=row["source"], tags=tuple(json.loads(row["tags"])),
                       confidence=row["confidence"], expires_at=row["expires_at"], speaker=row["speaker"],
                       detail=json.loads(row["detail"]) if row["detail"] else None, dedup=False,
                       redacted=engine.pm.has_plugin("hermes_cmms.redact"), row=row)
             for row in rows]
    _fire(engine, scope, None, items, None)
    return items


def _fire(engine: "Engine", scope: str, session_id: Optional[str], items: list[NewMemory],
          turn_of: Optional[tuple[str, str]]) -> list[str]:
    """The retain hook, which writes `items`; the ids its implementations say they wrote."""
    results = engine.pm.hook.retain(service=engine.service, engine=engine, scope=scope, session_id=session_id,
                                    items=items, turn_of=turn_of)
    return [memory_id for ids in results if ids for memory_id in ids]


def _admit(pm, item: NewMemory, scope: str) -> None:
    """One item redacted (text, tags, receipt, structured parts) and its note kind classified."""
    text = _truncated(clean(item.content), scope)
    item.content = run_redactors(pm, text, scope)
    item.tags = tuple(run_redactors(pm, clean(str(tag)), scope) for tag in item.tags)
    item.source = run_redactors(pm, clean(item.source), scope)  # receipts can carry secrets too
    item.speaker = run_redactors(pm, item.speaker, scope).lower() if item.speaker else item.speaker
    item.replaces = tuple(run_redactors(pm, clean(text), scope) for text in item.replaces)  # as stored
    if item.detail:
        item.detail = _redacted(pm, item.detail, scope)
    item.redacted = pm.has_plugin("hermes_cmms.redact")  # else the store runs it
    if item.kind == "note":
        item.kind = lifecycle.classify(item.content)


def _redacted(pm, value, scope: str):
    """A learned item's structured parts with every string redacted."""
    return map_strings(value, lambda text: run_redactors(pm, clean(text), scope))


def _nothing_left(items) -> str:
    """Why none of `items` is stored: secrets were all there was, or nothing printable was."""
    if any(lifecycle.REDACTED.search(item.content) for item in items):
        return "Nothing is left to remember once secrets are removed; nothing was stored."
    return "The text is empty once unprintable characters and punctuation are removed; nothing was stored."


def _truncated(text: str, scope: str) -> str:
    """`text` cut to MAX_CONTENT_CHARS, saying so in the text and in the log when it is cut."""
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    lost = len(text) - MAX_CONTENT_CHARS
    log.warning("hermes-cmms: a %s-character message in scope %s was cut to %s characters.",
                f"{len(text):,}", scope, f"{MAX_CONTENT_CHARS:,}")
    return f"{text[:MAX_CONTENT_CHARS]}… [truncated: {lost:,} characters not kept]"
