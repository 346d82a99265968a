"""Hybrid ranking: keyword and vector rankings fused by reciprocal rank (the vector ones
counting more when the keyword hits hold few of the query's words), raised by a named speaker
and a named time, nudged by recency, scaled by confidence (the block is packed by render.py)."""
from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from . import when
from ..common.lifecycle_rules import LIVE_STATES
from ..store.models import Memory
from ..common.text import STOPWORDS, speaker_of, terms

RRF_K = 10
# A message of fewer content words than this, holding none of the query's own words, says little
# ("Hello Kate! How are you today?"): its relevance is scaled by (words + 1) / (LOW_INFO_TERMS + 1),
# so a line that matched only by a name or a greeting gives its place to one that says something.
LOW_INFO_TERMS = 6
# keyword / vector: the memory's own text; *_context: its text with the message before it;
# vector_sentences: its best-matching sentence (units.py)
RANKING_WEIGHTS = {"keyword": 1.0, "vector": 1.0, "keyword_context": 1.0, "vector_context": 1.0,
                   "vector_sentences": 1.0}
SPEAKER_BOOST = 1.0  # relevance x2 when the memory's speaker is named in the query
DATE_BOOST = 1.0  # relevance x2 when the memory was said within a time the query names (when.py)
NEIGHBOUR_WEIGHT = 0.3  # share of the best neighbour's score (same session, within a turn) added
RECENCY_WEIGHT = 0.004  # a tie-breaker: one fresh memory outranks an equal month-old one
RECENCY_HALF_LIFE_DAYS = 30.0
WEAK_KEYWORDS = 0.25  # when the best keyword hits hold less than this share of the query's words,
WEAK_VECTOR_WEIGHT = 3.0  # the vector rankings count this many times more
_NAME = re.compile(r"\b[A-Z][a-z]+(?:-[A-Z][a-z]+)?\b")


@dataclass
class Hit:
    memory: Memory
    score: float
    keyword_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None  # its best cosine with the query in any vector view (None: not found by meaning)
    units: tuple[int, ...] = ()  # its sentence runs (common/units.py) the query matched by meaning, best first


def fuse(rankings: dict[str, Sequence[str]], vector_weight: float = 1.0) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked id lists (see RANKING_WEIGHTS; the vector ones times
    `vector_weight`)."""
    scores: dict[str, float] = defaultdict(float)
    for name, ranking in rankings.items():
        weight = RANKING_WEIGHTS.get(name, 1.0) * (vector_weight if name.startswith("vector") else 1.0)
        for position, memory_id in enumerate(ranking):
            scores[memory_id] += weight / (RRF_K + position + 1)
    return scores


def vector_weight(query: str, memories: dict[str, Memory], keyword: Sequence[str]) -> float:
    """WEAK_VECTOR_WEIGHT when no one of the first three keyword hits holds WEAK_KEYWORDS of the
    query's words (the words do not carry the link), else 1."""
    wanted = set(terms(query))
    held = max((len(wanted & set(terms(memories[m].content))) for m in keyword[:3] if m in memories), default=0)
    return WEAK_VECTOR_WEIGHT if wanted and held < WEAK_KEYWORDS * len(wanted) else 1.0


def query_names(query: str) -> frozenset[str]:
    """Capitalised words of the query that are not function words: likely people or places."""
    return frozenset(w.lower() for w in _NAME.findall(query) if w.lower() not in STOPWORDS)


def speaker(memory: Memory) -> str | None:
    """Who speaks in a transcript-style memory ("Alice: ..."), lower-cased; None otherwise."""
    return memory.speaker if memory.speaker is not None else speaker_of(memory.content)


def rank(memories: dict[str, Memory], rankings: dict[str, Sequence[str]],
         names: frozenset[str] = frozenset(), now: float | None = None,
         during: Sequence[tuple[float, float]] = (), query: str = "",
         explain: dict | None = None) -> list[Hit]:
    """Order the candidates: fused relevance, raised when a person the query names is the
    speaker, nudged by recency, scaled by confidence; then each raised by a share of its best
    neighbour's score (another candidate of its session at most one turn away): an answer
    lifts its question and the reply around it.

    With `explain` (a dict), each candidate's id is mapped to why it scored what it did:
    `found_by` {ranking: 1-based rank}, `fused` (the fused relevance), `nudges` (the factors
    and additions above) and `score`; a candidate left out says why in `filtered`."""
    now = now or time.time()
    weight = vector_weight(query, memories, rankings.get("keyword", ()))
    asked = set(terms(query)) - names  # the query's own words, less the people it names
    fused = fuse(rankings, weight)
    kw_rank = {m: i for i, m in enumerate(rankings.get("keyword", ()))}
    vec_rank = {m: i for i, m in enumerate(rankings.get("vector", ()))}
    hits = []
    for memory_id, relevance in fused.items():
        memory = memories.get(memory_id)
        if memory is None or memory.state not in LIVE_STATES or memory.corrected_at is not None:
            if explain is not None:
                explain[memory_id] = {"filtered": _left_out(memory)}
            continue  # (a superseded memory stays, its halved confidence ranks it lower; a corrected one was wrong)
        nudges = {"speaker": 1.0, "time_words": 1.0, "few_words": _few_words(memory, asked)}
        relevance *= nudges["few_words"]
        if names and speaker(memory) in names:
            relevance *= 1 + SPEAKER_BOOST
            nudges["speaker"] = 1 + SPEAKER_BOOST
        if during and when.within(memory.created_at, during):
            relevance *= 1 + DATE_BOOST
            nudges["time_words"] = 1 + DATE_BOOST
        age_days = max(0.0, now - memory.created_at) / 86400
        recency = RECENCY_WEIGHT * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
        score = (relevance + recency) * memory.confidence
        hits.append(Hit(memory, score, kw_rank.get(memory_id), vec_rank.get(memory_id)))
        if explain is not None:
            explain[memory_id] = {"fused": fused[memory_id], "nudges": {
                **nudges, "recency": recency, "confidence": memory.confidence, "vector_weight": weight}}
    lifts = _lift_neighbours(hits)
    if explain is not None:
        _explained(explain, hits, lifts, rankings)
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits


def _few_words(memory: Memory, asked: set[str] = frozenset()) -> float:
    """The factor LOW_INFO_TERMS gives a message that says little and holds none of the words
    `asked` (matched by a name, a greeting, or by meaning alone); 1 for any other memory (facts
    and notes are short by nature). Its speaker's name is not a word it says."""
    if memory.kind != "message":
        return 1.0
    said = set(terms(memory.content, 64)) - set(terms(speaker(memory) or ""))
    if len(said) >= LOW_INFO_TERMS or said & asked:
        return 1.0
    return (len(said) + 1) / (LOW_INFO_TERMS + 1)


def _left_out(memory: Memory | None) -> str:
    """Why rank() leaves a candidate out, in a few words."""
    if memory is None:
        return "expired or gone"
    return f"its state is {memory.state}" if memory.state not in LIVE_STATES else "corrected (it was wrong)"


def _explained(explain: dict, hits: list[Hit], lifts: list[float], rankings: dict[str, Sequence[str]]) -> None:
    """Add each ranked hit's neighbour lift and final score, and the rankings that found each id."""
    for hit, lift in zip(hits, lifts):
        why = explain[hit.memory.id]
        why["nudges"]["neighbour"] = lift
        why["score"] = hit.score
    for name, ranking in rankings.items():
        for position, memory_id in enumerate(ranking, 1):
            explain.setdefault(memory_id, {}).setdefault("found_by", {}).setdefault(name, position)


def _lift_neighbours(hits: list[Hit]) -> list[float]:
    by_turn: dict[tuple[str, int], list[Hit]] = defaultdict(list)
    for hit in hits:
        if hit.memory.session_id and hit.memory.turn:
            by_turn[(hit.memory.session_id, hit.memory.turn)].append(hit)
    lifts = []
    for hit in hits:
        session, turn = hit.memory.session_id, hit.memory.turn or 0
        near = [other.score for step in (-1, 0, 1) for other in by_turn.get((session, turn + step), ())
                if other is not hit]
        lifts.append(NEIGHBOUR_WEIGHT * max(near, default=0.0))
    for hit, lift in zip(hits, lifts):
        hit.score += lift
    return lifts
