"""Learning: read facts, preferences, decisions, skills and beliefs out of text and conversation
turns, and store each one linked to the memory it was learned from."""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from . import beliefs
from ..common.errors import CmmsError, InvalidInput
from .extract import Item, replaced
from .extractors import run_extractors
from ..common.text import clean
from ..retain.admission import store_note
from ..store.store import UNDATED

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

MAX_LEARN_CHARS = 200_000
MAX_SOURCE_CHARS = 200
FLUSH_LLM_TIMEOUT_S = 15.0  # a session flush waits at most this long for the model
LEARNED_KINDS = ("fact", "preference", "decision", "skill", "belief")
CLAIM_TURNS = 50  # imported user turns claimed (and read) at a time: a killed run loses at most these


def learn(engine: "Engine", scope: str, text: str, *, source: str = "", extract_beliefs: bool = True,
          session_id: Optional[str] = None, min_belief_confidence: float = 0.0) -> dict:
    """Keep `text` as an observation, then store what can be learned from it, each item
    linked to it (forgetting the text forgets what was learned only from it); a belief read
    with a confidence below `min_belief_confidence` is not stored."""
    if not isinstance(text, str) or not clean(text).strip():
        raise InvalidInput("The text to learn from must be a non-empty string.")
    if len(text) > MAX_LEARN_CHARS:
        raise InvalidInput(f"The text to learn from is {len(text):,} characters; the limit is {MAX_LEARN_CHARS:,}.")
    if not isinstance(extract_beliefs, bool):
        raise InvalidInput(f"extract_beliefs must be true or false, not {extract_beliefs!r}.")
    if isinstance(min_belief_confidence, bool) or not isinstance(min_belief_confidence, (int, float)) \
            or not 0 <= min_belief_confidence <= 1:
        raise InvalidInput(f"min_belief_confidence must be a number from 0 to 1, not {min_belief_confidence!r}.")
    if source is not None and (not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS):
        raise InvalidInput(f"The source must be a string of at most {MAX_SOURCE_CHARS} characters.")
    receipt = source.strip() if source and source.strip() else "learn"
    origin = store_note(engine, scope, text, kind="observation", tier="episodic", source=receipt,
                        session_id=session_id, judge=False)
    items = run_extractors(engine.pm, origin.content, origin.scope, "user") + _by_model(engine, origin.content)
    learned = store_items(engine, origin.scope, items, [origin.id], f"learn:{receipt}", session_id,
                          extract_beliefs, min_belief_confidence)
    return {"id": origin.id, "stored": not origin.reinforced, "scope": origin.scope, "learned": learned}


def _by_model(engine: "Engine", text: str, timeout: float = 30.0) -> list[Item]:
    """The configured LLM's items for `text` ([] when there is none, or it fails)."""
    if engine.settings.llm == "off":
        return []
    from .llm import llm_extract

    return llm_extract(engine.settings, text, timeout)


def store_items(engine: "Engine", scope: str, items: Sequence[Item], sources: list[str], receipt: str,
                session_id: Optional[str], extract_beliefs: bool = True,
                min_belief_confidence: float = 0.0, said_at: Optional[float] = None) -> list[dict]:
    """Store learned items (each linked to `sources`, dated `said_at` if not said now); an
    item that fails admission is skipped, and so is a belief read with a confidence below
    `min_belief_confidence`."""
    learned, seen = [], set()
    for item in items:
        if item.kind not in LEARNED_KINDS or (item.kind == "belief" and not extract_beliefs):
            continue
        if item.kind == "belief" and item.parts.get("confidence", 1.0) < min_belief_confidence:
            continue
        if (item.kind, item.text.casefold()) in seen:  # the rules and the model found the same
            continue
        seen.add((item.kind, item.text.casefold()))
        try:
            learned.append(_store(engine, scope, item, sources, receipt, session_id, said_at))
        except CmmsError as exc:  # e.g. nothing but a secret: that item is not kept
            log.info("hermes-cmms: learned %s not stored: %s", item.kind, exc)
        except Exception as exc:  # noqa: BLE001 - one bad item never costs the others
            log.warning("hermes-cmms: learned %s not stored: %s", item.kind, exc)
    return learned


def _store(engine: "Engine", scope: str, item: Item, sources: list[str], receipt: str,
           session_id: Optional[str], said_at: Optional[float] = None) -> dict:
    parts = item.parts
    if item.kind == "belief":
        cited = sources[-beliefs.MAX_EVIDENCE_IDS:]  # a long session: its latest turns
        result = beliefs.set_belief(engine, scope, parts["proposition"], polarity=parts.get("polarity", 1),
                                   confidence=parts.get("confidence"), evidence_ids=cited,
                                   source=receipt, learned_from=cited)
        return {"id": result["id"], "kind": "belief", "text": result["belief"]["text"],
                "reinforced": result["action"] == "reinforced", "parts": parts, "belief": result["belief"]}
    fact = (parts["subject"], parts["predicate"], parts["object"]) \
        if item.kind == "fact" and not parts.get("ended") else None  # (an ended fact holds no value now)
    stored = store_note(engine, scope, item.text, kind=item.kind, tier="semantic", source=receipt,
                        session_id=session_id, fact=fact, detail=None if fact else parts,
                        learned_from=sources, replaces=replaced(item), judge=False, said_at=said_at)
    return {"id": stored.id, "kind": item.kind, "text": stored.content, "reinforced": stored.reinforced,
            "parts": parts}


def extract_session(engine: "Engine", scope: str, session_id: str, model: bool = True) -> int:
    """Learn from the user's turns of a session not read yet; return how many items were
    stored. The turns are claimed first (a concurrent flush gets none of them), so each is
    read at most once, even across restarts (a crash between the claim and the writes loses
    that flush's items, never a turn). The rules read each turn; with `model`, a configured
    model reads them all in one call (their first 12,000 characters), waiting at most
    FLUSH_LLM_TIMEOUT_S. What is learned from an imported turn is dated when it was said."""
    return _learned(engine, scope, engine.store.claim_unextracted(scope, session_id), session_id, model)


def _learned(engine: "Engine", scope: str, messages: list, session_id: str, model: bool) -> int:
    """Learn from the claimed user `messages` of a session; how many items were stored."""
    count, found = 0, set()
    for message in messages:
        items = run_extractors(engine.pm, message.content, scope, "user")
        found |= {(item.kind, item.text.casefold()) for item in items}
        count += len(store_items(engine, scope, items, [message.id], _receipt(message), session_id,
                                 said_at=_said_at(message)))
    if messages and model and engine.settings.llm != "off":
        items = _by_model(engine, "\n\n".join(m.content for m in messages), FLUSH_LLM_TIMEOUT_S)
        items = [item for item in items if (item.kind, item.text.casefold()) not in found]
        count += len(store_items(engine, scope, items, [m.id for m in messages], _receipt(messages[-1]), session_id,
                                 said_at=_said_at(messages[-1])))
    return count


def _said_at(message) -> Optional[float]:
    """When an imported turn was said (its own date); None for a live one (said now)."""
    return message.created_at if (message.source or "").startswith("import:") else None


def _receipt(message) -> str:
    """What is learned from `message` is stored with this source: "extract:session", ending
    UNDATED when the message is an imported one whose date is not known (its file's or its
    conversation's date filled in, or a date to come clamped to the import's: ops/formats/run
    marks its receipt `dated`); such a fact never replaces a dated or live one (store.py)."""
    if _said_at(message) is not None:
        try:
            receipts = json.loads(message.receipts or "[]")
        except ValueError:
            receipts = []
        if any(isinstance(receipt, dict) and receipt.get("dated") for receipt in receipts):
            return "extract:session" + UNDATED
    return "extract:session"


def learn_history(engine: "Engine", limit: Optional[int] = None,
                  progress: Optional[Callable[[int, int], None]] = None,
                  stop: Optional[Callable[[], bool]] = None) -> dict:
    """Read the user's turns of the conversations imported and not read yet (at most `limit`
    turns, oldest conversation first) with the rules, as a session's flush reads them; the
    model is not asked (one call a conversation, for years of them). The turns are claimed
    CLAIM_TURNS at a time (each read at most once: a run killed half way loses at most the
    claim it was reading, and the next run continues after it), and the run stops between
    two claims once `stop()` is true (a closing process). `progress(done, total)` in turns
    after each claim. Return the conversations read from, the turns read, the items learned,
    and how many conversations and turns still wait."""
    budget = limit if limit is not None else engine.store.unread_turn_count()
    total = min(budget, engine.store.unread_turn_count()) if limit is not None else budget
    read, sessions, learned = 0, 0, 0
    for scope, session_id in engine.store.unread_sessions():
        if read >= budget or (stop is not None and stop()):
            break
        sessions += 1
        while read < budget and not (stop is not None and stop()):
            messages = engine.store.claim_unextracted(scope, session_id, min(CLAIM_TURNS, budget - read))
            if not messages:  # all read (or claimed by another process)
                break
            learned += _learned(engine, scope, messages, session_id, model=False)
            read += len(messages)
            if progress is not None:
                progress(min(read, total), total)
    return {"sessions": sessions, "turns": read, "learned": learned,
            "waiting": engine.store.unread_session_count(), "waiting_turns": engine.store.unread_turn_count()}
