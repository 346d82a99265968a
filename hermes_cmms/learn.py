"""Learning: read facts, preferences, decisions, skills and beliefs out of text and conversation
turns, and store each one linked to the memory it was learned from."""
from __future__ import annotations

import logging
from typing import Optional, Sequence

from . import beliefs
from .errors import CmmsError, InvalidInput
from .extract import Item
from .plugins import run_extractors
from .text import clean

log = logging.getLogger(__name__)

MAX_LEARN_CHARS = 200_000
LEARNED_KINDS = ("fact", "preference", "decision", "skill", "belief")


def learn(service, scope: str, text: str, *, source: str = "", extract_beliefs: bool = True,
          session_id: Optional[str] = None) -> dict:
    """Keep `text` as an observation, then store what can be learned from it, each item
    linked to it (forgetting the text forgets what was learned only from it)."""
    if not isinstance(text, str) or not clean(text).strip():
        raise InvalidInput("The text to learn from must be a non-empty string.")
    if len(text) > MAX_LEARN_CHARS:
        raise InvalidInput(f"The text to learn from is {len(text):,} characters; the limit is {MAX_LEARN_CHARS:,}.")
    if not isinstance(extract_beliefs, bool):
        raise InvalidInput(f"extract_beliefs must be true or false, not {extract_beliefs!r}.")
    receipt = source.strip() if isinstance(source, str) and source.strip() else "learn"
    origin = service.store_note(scope, text, kind="observation", tier="episodic", source=receipt,
                                session_id=session_id, judge=False)
    items = extracted(service, origin.scope, origin.content, "user")
    learned = store_items(service, origin.scope, items, [origin.id], f"learn:{receipt}", session_id,
                          extract_beliefs)
    return {"id": origin.id, "stored": not origin.reinforced, "scope": origin.scope, "learned": learned}


def extracted(service, scope: str, text: str, role: str) -> list[Item]:
    """Every extractor's items for `text`: the hook's (deterministic, third-party), then the
    configured LLM's. A failing extractor costs its items only."""
    items = run_extractors(service.pm, text, scope, role)
    if service.settings.llm != "off":
        from .llm import llm_extract

        seen = {(i.kind, i.text.casefold()) for i in items}
        items += [i for i in llm_extract(service.settings, text) if (i.kind, i.text.casefold()) not in seen]
    return items


def store_items(service, scope: str, items: Sequence[Item], sources: list[str], receipt: str,
                session_id: Optional[str], extract_beliefs: bool = True) -> list[dict]:
    """Store learned items (each linked to `sources`); an item that fails admission is skipped."""
    learned = []
    for item in items:
        if item.kind not in LEARNED_KINDS or (item.kind == "belief" and not extract_beliefs):
            continue
        try:
            learned.append(_store(service, scope, item, sources, receipt, session_id))
        except CmmsError as exc:  # e.g. nothing but a secret: that item is not kept
            log.info("hermes-cmms: learned %s not stored: %s", item.kind, exc)
    return learned


def _store(service, scope: str, item: Item, sources: list[str], receipt: str,
           session_id: Optional[str]) -> dict:
    parts = item.parts
    if item.kind == "belief":
        result = beliefs.set_belief(service, scope, parts["proposition"], polarity=parts.get("polarity", 1),
                                    confidence=parts.get("confidence"), evidence_ids=sources,
                                    source=receipt, learned_from=sources)
        return {"id": result["id"], "kind": "belief", "text": result["belief"]["text"],
                "reinforced": result["action"] == "reinforced", "parts": parts}
    fact = (parts["subject"], parts["predicate"], parts["object"]) if item.kind == "fact" else None
    stored = service.store_note(scope, item.text, kind=item.kind, tier="semantic", source=receipt,
                                session_id=session_id, fact=fact, detail=None if fact else parts,
                                learned_from=sources, judge=False)
    return {"id": stored.id, "kind": item.kind, "text": stored.content, "reinforced": stored.reinforced,
            "parts": parts}


def extract_session(service, scope: str, session_id: str) -> int:
    """Learn from the user's turns of a session not read yet; return how many items were
    stored. Restart-safe: the session remembers the last turn it was read up to."""
    messages, last_turn = service.store.unextracted_messages(scope, session_id)
    count = 0
    for message in messages:
        items = extracted(service, scope, message.content, message.role or "user")
        count += len(store_items(service, scope, items, [message.id], "extract:session", session_id))
    if last_turn:
        service.store.mark_extracted(scope, session_id, last_turn)
    return count
