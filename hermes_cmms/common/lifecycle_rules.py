"""Lifecycle rules: states, admission, confidence (reliability, corroboration, decay, conflict).

Pure functions over values; the store applies them and records every move on the audit trail.
"""
from __future__ import annotations

import re
from typing import Optional

from .text import terms

# Forward only: a memory never goes back to an earlier state. `forgotten` is the state a
# memory is in once `forget` has deleted it (it lives on only as an audit snapshot).
STATES = ("candidate", "validated", "active", "stale", "archived", "forgotten")
LIVE_STATES = STATES[:-1]
FADED = ("stale", "archived")  # not reinforced by a repeat (states only move forward): replaced
CONSOLIDATING = STATES[:4]  # states whose episodic memories consolidation still looks at
ACTIVE_CONFIDENCE = 0.6  # a new memory below this starts as a candidate
CORROBORATION = 0.7  # each duplicate closes 30% of the gap between confidence and 1
CONFLICT_PENALTY = 0.5  # a memory superseded by a newer, conflicting one
DECAY_FLOOR = 0.5  # age alone never takes confidence below half its corroborated value
MAX_RECEIPTS = 20  # the receipts of the latest duplicates kept on a memory
ARCHIVE_AFTER_TTLS = 3  # stale after one TTL without reinforcement, archived after three

DAY = 86400.0
# Per kind: days after which an unreinforced memory is stale, and the half-life of its decay.
KIND_TTL_DAYS = {"status": 2, "observation": 90, "message": 365, "note": 365, "decision": 365,
                 "fact": 730, "preference": 730, "summary": 730}
DEFAULT_TTL_DAYS = 365

# Reliability of a write by its receipt (source) prefix, when the caller gives no confidence.
TURN_RELIABILITY = 0.9  # a conversation's message, kept live through Hermes or imported
SOURCE_RELIABILITY = (("hermes:memory-tool", 0.95), ("hermes:cmms_remember", 0.95), ("mcp:", 0.9),
                      ("consolidation", 0.85), ("hermes:delegation", 0.8), ("hermes:", TURN_RELIABILITY))
DEFAULT_RELIABILITY = 0.8

# Admission: what an explicit note is, by whole words only ("know" is not "now",
# "template" is not "temp"). First match wins.
_KIND_RULES = (
    ("preference", r"prefer|prefers|preferred|favou?rites?|likes?|loves?|hates?|dislikes?|enjoys?"),
    ("decision", r"decided|decides|decide|chose|chosen|choose|going with|agreed|settled on"),
    ("status", r"now|currently|today|tonight|right now|at the moment|temp|temporary|temporarily|"
               r"this week|for now"),
)
KIND_RULES = tuple((kind, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for kind, words in _KIND_RULES)
REDACTED = re.compile(r"\[REDACTED[^\]]*\]")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NEGATION = re.compile(r"\b(?:not|no|nor|never|none|nothing|nobody|neither|nowhere|cannot|without)\b|n['’]t\b",
                       re.IGNORECASE)
GIST_DIFFERENCE = 1  # content words two near-duplicates may differ by (one added or dropped)


def classify(text: str, default: str = "note") -> str:
    """The kind of an explicit note, from whole-word rules; `default` when none matches."""
    for kind, rule in KIND_RULES:
        if rule.search(text):
            return kind
    return default


def only_secrets(text: str) -> bool:
    """True when nothing but redaction markers and punctuation is left of `text`."""
    return not re.sub(r"[\W_]+", "", REDACTED.sub("", text))


def same_gist(a: str, b: str) -> bool:
    """Guard for vector near-duplicates: the same numbers, the same negations, and the same
    content words but for at most one added or dropped. "question 175" / "question 176", a
    meeting "on Monday" / "on Wednesday", or "is allergic" / "is not allergic" embed almost
    alike but are not the same memory (the second is an update)."""
    if sorted(_NUMBER.findall(a)) != sorted(_NUMBER.findall(b)) or _negations(a) != _negations(b):
        return False
    return len(set(terms(a, 500)) ^ set(terms(b, 500))) <= GIST_DIFFERENCE


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text))


def reliability(source: str, given: Optional[float] = None) -> float:
    """The caller's confidence when given, else what the receipt's door is worth."""
    if given is not None:
        return float(given)
    for prefix, value in SOURCE_RELIABILITY:
        if source.startswith(prefix):
            return value
    return DEFAULT_RELIABILITY


def ttl_days(kind: str) -> float:
    return KIND_TTL_DAYS.get(kind, DEFAULT_TTL_DAYS)


def confidence(reliability: float, reinforced: int, kind: str, age_s: float, conflicted: bool) -> float:
    """Stored confidence: reliability, raised by corroboration, decayed by age since the memory
    was last seen (half-life = its kind's TTL, never below DECAY_FLOOR), halved by a conflict."""
    corroborated = 1.0 - (1.0 - reliability) * CORROBORATION ** reinforced
    decay = max(DECAY_FLOOR, 0.5 ** (max(0.0, age_s) / (ttl_days(kind) * DAY)))
    return round(corroborated * decay * (CONFLICT_PENALTY if conflicted else 1.0), 4)


def initial_state(confidence_value: float) -> str:
    return "active" if confidence_value >= ACTIVE_CONFIDENCE else "candidate"


def reinforced_state(state: str, confidence_value: float) -> str:
    """State after a duplicate corroborates a memory: candidate -> validated -> active."""
    if state == "candidate":
        return "validated"
    if state == "validated" and confidence_value >= ACTIVE_CONFIDENCE:
        return "active"
    return state


def aged_state(state: str, kind: str, age_s: float) -> str:
    """State after time passes without reinforcement: stale after one TTL, archived after
    ARCHIVE_AFTER_TTLS; a candidate nobody corroborated is archived after one TTL."""
    ttl = ttl_days(kind) * DAY
    if state in ("candidate", "validated", "active", "stale") and age_s >= ARCHIVE_AFTER_TTLS * ttl:
        return "archived"
    if state == "candidate" and age_s >= ttl:
        return "archived"
    if state in ("validated", "active") and age_s >= ttl:
        return "stale"
    return state


def forward(old: str, new: str) -> bool:
    """Whether moving from `old` to `new` respects the forward-only order."""
    return STATES.index(new) > STATES.index(old)
