"""What a caller hands the store to remember, and what the store says happened to it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass
class NewMemory:
    """What a caller hands the store to remember (already redacted and cleaned)."""

    scope: str
    content: str
    kind: str = "message"
    tier: str = "episodic"
    role: Optional[str] = None
    session_id: Optional[str] = None
    source: str = ""
    tags: Sequence[str] = ()
    confidence: float = 1.0
    expires_at: Optional[float] = None
    fact: Optional[tuple[str, str, str]] = None  # (subject, predicate, object)
    dedup: bool = True  # the same text already live in the scope (and tier) is reinforced instead
    supersedes: Sequence[str] = ()  # ids of older memories this one replaces (kept, marked)
    replaces: Sequence[str] = ()  # texts of the scope's current memories of its kind and tier it replaces
    duplicate_of: Optional[str] = None  # a memory this one repeats: reinforce it, insert nothing
    detail: Optional[dict] = None  # the structured parts of a learned item (decision, skill, ...)
    learned_from: Sequence[str] = ()  # ids of the memories (turns, texts) it was learned from
    belief: Optional[dict] = None  # a belief's proposition_key, topic, polarity: its beliefs row when new
    evidence: Sequence[dict] = ()  # evidence rows (memory_id, source, stance, note[, at]) for it, new or reinforced
    corrects: bool = False  # a user's correction: what it supersedes was wrong (marked corrected, never recalled)
    speaker: Optional[str] = None  # who wrote it (a named author in a group chat); else read from "Name: ..."
    said_at: Optional[float] = None  # when what it holds was said, if not now (learned from imported history)
    row: Optional[dict] = None  # an imported memory's whole row (ops/transfer), written as it is: id, times, chain
    # set by Store.add: what happened to it
    id: Optional[str] = None
    reinforced: bool = False  # True when an existing memory was reinforced instead of inserting
    redacted: bool = False  # admission ran the built-in redactor on its text; else Store.add runs it
    present: bool = False  # an imported row whose id was stored already: nothing was written
