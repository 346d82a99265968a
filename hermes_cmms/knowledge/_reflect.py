"""The read side of beliefs: loading them with their evidence, the belief dict every door
returns (the CMMS 0.11 `belief_response` fields and ours), the conflict rules, and the seven
reflection views (computed from the stored rows; each gives the contract's fields for its mode
beside ours).

Only reads; `hermes_cmms.knowledge.beliefs` writes.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Optional, Sequence

from ..common import lifecycle_rules as lifecycle
from ..common.errors import UnknownMemory
from ..common.ids import shown_id
from ..recall.shape import iso, verification_status
from ..store import belief_rows
from ..store.belief_rows import DECLARED, MARKERS, SETTLED

REFLECT_MODES = ("overview", "contradictions", "relations", "decay", "topics", "evidence_audit", "confidence")
SHOWN_STATES = ("candidate", "validated", "active", "stale", "archived", "superseded")
LIFECYCLE_STATES = ("active", "superseded", "discarded", "contradicted")  # the contract's coarse states
# DECLARED, SETTLED, MERGED, MARKERS: the evidence rows' source types that are links (store/belief_rows.py)
SOURCE_TYPES = ("fact", "decision", "observation", "user_statement")  # the contract's, for sources
TIE_CONFIDENCE = 0.05  # confidences this close are a tie for the auto rule
AUTO_RESOLVE_GAP = 0.5  # the contract's auto_resolve: a bigger confidence gap supersedes the lower
SHOWN_EVIDENCE = 20  # evidence rows in a belief dict (the newest); the counts cover all
LISTED = 10  # entries per list in a reflection
EXTREMES = 3  # lowest and highest beliefs in the confidence view
BUCKETS = 5
DAY = 86400.0
WEEK = 7 * DAY
CONTEXT_TAG = "context:"  # a tag `context:<name>` says which context a belief holds in (relations)


@dataclass
class Record:
    """One stored belief: its memory row, its proposition and its evidence (oldest first)."""

    id: str
    text: str
    proposition: str  # the normalised key (shown as `proposition_key`)
    topic: str
    polarity: int
    confidence: float
    reliability: float
    state: str  # the memory's lifecycle state
    superseded_by: Optional[str]
    tags: list[str]
    source: str
    created_at: float
    last_seen_at: float
    reinforced: int
    seq: int
    updated_at: float = 0.0
    creator: str = ""
    evidence: list[dict] = field(default_factory=list)  # memory_id, source, stance, note, at, exists, ...
    settled: dict[str, str] = field(default_factory=dict)  # rival belief id -> the belief merged from both
    merged_from: list[str] = field(default_factory=list)  # the beliefs a merge made this one from

    @property
    def current(self) -> bool:
        """Still held: neither superseded nor archived."""
        return self.superseded_by is None and self.state != "archived"

    @property
    def shown_state(self) -> str:
        return "superseded" if self.superseded_by else self.state

    @property
    def support(self) -> int:
        return sum(1 for e in self.evidence if e["stance"] > 0)

    @property
    def against(self) -> int:
        return sum(1 for e in self.evidence if e["stance"] < 0)

    @property
    def last_evidence(self) -> float:
        """When it was last stated, reinforced or given evidence."""
        return max([self.last_seen_at, *(e["at"] for e in self.evidence)])

    @property
    def source_ids(self) -> list[str]:
        """What its evidence cites, as shown: memory ids of the scope dashed, outside references
        exactly as given (an outside 32-hex reference is no id of ours)."""
        return list(dict.fromkeys(shown_id(e["memory_id"]) if e["memory_id"] else e["source_ref"]
                                  for e in self.evidence
                                  if e["source_type"] != DECLARED and (e["memory_id"] or e["source_ref"])))


def settled(a: Record, b: Record) -> bool:
    """A merge settled the contest between the two (recorded on either)."""
    return b.id in a.settled or a.id in b.settled


def lifecycle_state(r: Record, contested: bool) -> str:
    """The contract's coarse state: superseded, discarded (archived), contradicted (current and
    contested), else active (candidate, validated, active or stale)."""
    if r.superseded_by:
        return "superseded"
    if r.state == "archived":
        return "discarded"
    return "contradicted" if contested else "active"


def belief_dict(r: Record, contested_by: list[str]) -> dict:
    """The JSON shape of one belief, as every door returns it: the contract's belief_response
    (`proposition` is the text) and ours (`proposition_key` the normalised proposition, `state`
    the fine-grained lifecycle state)."""
    shown = [{"memory_id": e["memory_id"], "source_ref": e["source_ref"], "source_type": e["source_type"],
              "weight": e["weight"], "source": e["source"], "stance": e["stance"], "note": e["note"],
              "at": iso(e["at"])} for e in reversed(r.evidence[-SHOWN_EVIDENCE:])]
    return {"id": r.id, "proposition": r.text, "text": r.text, "proposition_key": r.proposition,
            "topic": r.topic, "polarity": r.polarity, "confidence": r.confidence,
            "lifecycle_state": lifecycle_state(r, bool(contested_by)), "state": r.shown_state,
            "verification_status": verification_status(r),
            "superseded_by": r.superseded_by, "contested_by": contested_by, "evidence": shown,
            "evidence_for": r.support, "evidence_against": r.against, "source_ids": r.source_ids,
            "tags": r.tags, "source": r.source, "creator": r.creator or r.source,
            "created_at": iso(r.created_at), "updated_at": iso(r.updated_at or r.created_at),
            "last_reinforced_at": iso(r.last_seen_at), "version": 1 + r.reinforced,
            "reinforcements": r.reinforced, "merged_from_ids": r.merged_from, "settled_with_ids": list(r.settled)}


def auto_winner(a: Record, b: Record) -> tuple[Record, Record, str]:
    """(winner, loser, rule): the higher confidence wins; within TIE_CONFIDENCE, more supporting
    evidence wins; still tied, the newer belief wins."""
    if round(abs(a.confidence - b.confidence), 6) > TIE_CONFIDENCE:
        return (a, b, "confidence") if a.confidence > b.confidence else (b, a, "confidence")
    if a.support != b.support:
        return (a, b, "evidence") if a.support > b.support else (b, a, "evidence")
    return (a, b, "newer") if (a.created_at, a.seq) > (b.created_at, b.seq) else (b, a, "newer")


def negation(a: Record, b: Record) -> bool:
    """The two state the same proposition with opposite polarity."""
    return a.proposition == b.proposition and a.polarity != b.polarity


def contradictions(records: list[Record]) -> list[tuple[Record, Record]]:
    """Pairs of current beliefs that contradict: the same proposition with opposite polarity
    (holds first, then denied), then pairs declared contradicted by resolve_conflict's
    auto_resolve (evidence of source_type 'belief' against each other; older first); a pair a
    merge settled is none."""
    by_key: dict[str, list[Record]] = {}
    for r in records:
        if r.current:
            by_key.setdefault(r.proposition, []).append(r)
    pairs = [(p, n) for group in by_key.values() for p in group if p.polarity > 0
             for n in group if n.polarity < 0 and not settled(p, n)]
    held = {r.id: r for r in records if r.current}
    declared = {tuple(sorted((r.id, e["memory_id"]), key=lambda i: held[i].seq))
                for r in held.values() for e in r.evidence
                if e["source_type"] == DECLARED and e["stance"] < 0 and e["memory_id"] in held
                and e["memory_id"] != r.id and not negation(r, held[e["memory_id"]])
                and not settled(r, held[e["memory_id"]])}
    ordered = sorted(declared, key=lambda pair: (held[pair[0]].seq, held[pair[1]].seq))
    return pairs + [(held[a], held[b]) for a, b in ordered]


def contested_by(records: list[Record]) -> dict[str, list[str]]:
    """For each contested belief, the ids of the current beliefs that contradict it."""
    found: dict[str, list[str]] = {}
    for p, n in contradictions(records):
        found.setdefault(p.id, []).append(n.id)
        found.setdefault(n.id, []).append(p.id)
    return found


# -- loading ------------------------------------------------------------------------------------


query, current = belief_rows.query, belief_rows.current  # (the selections load and one read)


def load(conn, scope: str, q) -> list[Record]:
    """The beliefs `q` selects, with their evidence (oldest first)."""
    records = []
    for row, evidence in belief_rows.rows(conn, scope, q):
        record = _as_record(row)
        records.append(record)
        for e in evidence:
            if e.source_type in MARKERS:
                _mark(record, e)
                continue
            record.evidence.append({
                "memory_id": e.memory_id, "source": e.source, "stance": e.stance, "note": e.note, "at": e.at,
                "source_type": e.source_type or "observation", "source_ref": e.source_ref, "weight": e.weight,
                "exists": True})
    return records


def _mark(r: Record, row) -> None:
    """A marker row read into its record: a settled contest, or a belief it was merged from."""
    if row.source_type == SETTLED:
        r.settled[row.memory_id] = row.source_ref
    elif row.memory_id not in r.merged_from:
        r.merged_from.append(row.memory_id)


def _as_record(row) -> Record:
    return Record(id=row["id"], text=row["content"], proposition=row["proposition_key"], topic=row["topic"],
                  polarity=row["polarity"], confidence=row["confidence"], reliability=row["reliability"],
                  state=row["state"], superseded_by=row["superseded_by"], tags=json.loads(row["tags"] or "[]"),
                  source=row["source"], created_at=row["created_at"],
                  last_seen_at=row["last_seen_at"] or row["created_at"], reinforced=row["access_count"],
                  seq=row["seq"], updated_at=row["updated_at"], creator=row["creator"])


def mark_missing(conn, scope: str, records: list[Record]) -> None:
    """Flag evidence whose memory no longer exists in the scope (`exists` False)."""
    cited = list({e["memory_id"] for r in records for e in r.evidence if e["memory_id"]})
    present = belief_rows.present(conn, scope, cited)
    for r in records:
        for e in r.evidence:
            e["exists"] = e["memory_id"] is None or e["memory_id"] in present


def one(conn, scope: str, belief_id) -> Record:
    """A belief of the scope by id; UnknownMemory if there is none."""
    found = load(conn, scope, belief_rows.with_id(query(scope), belief_id)) if isinstance(belief_id, str) else []
    if not found:
        raise UnknownMemory(f"Unknown belief id {belief_id!r} in this scope.")
    return found[0]


def dicts(conn, scope: str, records: Sequence[Record]) -> list[dict]:
    """Belief dicts, each with the current beliefs that contradict it."""
    keys = list({r.proposition for r in records})
    named = list({e["memory_id"] for r in records for e in r.evidence if e["source_type"] == DECLARED})
    rivals = load(conn, scope, belief_rows.with_keys(current(query(scope)), keys)) if keys else []
    rivals += load(conn, scope, belief_rows.among(current(query(scope)), named)) if named else []
    known = {r.id: r for r in [*rivals, *records]}
    contested = contested_by(list(known.values()))
    return [belief_dict(r, contested.get(r.id, [])) for r in records]


def narrowed(records: list[Record], topic: Optional[str], min_confidence: float, limit: int) -> list[Record]:
    """The records a reflection analyses: about `topic` (its topic, or one of its tags, in any
    case), at least `min_confidence` sure, the newest `limit` of them (0: all), oldest first."""
    wanted = " ".join(topic.split()).casefold() if topic else None
    kept = [r for r in records if r.confidence >= min_confidence and (
        wanted is None or r.topic == wanted or wanted in (t.casefold() for t in r.tags))]
    return kept[-limit:] if limit else kept


def _mean(values: list[float]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _ref(r: Record) -> dict:
    return {"id": r.id, "text": r.text, "confidence": r.confidence}


def _brief(r: Record) -> dict:
    return {**_ref(r), "evidence_for": r.support, "evidence_against": r.against}


def _days(now: float, at: float) -> float:
    return round(max(0.0, now - at) / DAY, 1)


def _pair_fields(a: Record, b: Record) -> dict:
    """The contract's fields naming the two beliefs of a pair."""
    return {"belief_a_id": a.id, "proposition_a": a.text, "confidence_a": a.confidence,
            "belief_b_id": b.id, "proposition_b": b.text, "confidence_b": b.confidence}


def _stale_at(r: Record) -> float:
    """When an unrestated belief turns stale (one TTL after it was last seen)."""
    return r.last_seen_at + lifecycle.ttl_days("belief") * DAY


def _coarse(records: list[Record]) -> dict[str, str]:
    contested = contested_by(records)
    return {r.id: lifecycle_state(r, r.id in contested) for r in records}


def overview(records: list[Record], now: float) -> dict:
    """Counts by state, current / superseded / contested, mean confidence, evidence totals; and
    the contract's totals, confidence bands, conflicts and ages."""
    current = [r for r in records if r.current]
    states = Counter(r.shown_state for r in records)
    newest = max(records, key=lambda r: r.seq, default=None)
    oldest = min(records, key=lambda r: r.seq, default=None)
    pairs = contradictions(records)
    every_pair = [(a, b) for group in _by_key(records).values() for a, b in combinations(group, 2) if negation(a, b)]
    coarse = Counter(_coarse(records).values())
    confidences = [r.confidence for r in current]
    return {"beliefs": len(records), "by_state": {s: states[s] for s in SHOWN_STATES},
            "current": len(current), "superseded": states["superseded"],
            "contested": len(contested_by(records)),
            "mean_confidence": _mean(confidences),
            "evidence": {"for": sum(r.support for r in records), "against": sum(r.against for r in records),
                         "total": sum(len(r.evidence) for r in records)},
            "topics": len({r.topic for r in current}),
            "newest": {**_ref(newest), "created_at": iso(newest.created_at)} if newest else None,
            "total_beliefs": len(records),
            "by_lifecycle_state": {s: coarse[s] for s in LIFECYCLE_STATES},
            "by_topics": dict(Counter(r.topic for r in current).most_common()),
            "confidence": {"high_0.8_1.0": sum(1 for c in confidences if c >= 0.8),
                           "medium_0.5_0.8": sum(1 for c in confidences if 0.5 <= c < 0.8),
                           "low_0.0_0.5": sum(1 for c in confidences if c < 0.5),
                           "average": _mean(confidences) or 0.0},
            "contradiction_count": len(pairs),
            "conflicts": {"total": len({(a.id, b.id) for a, b in every_pair} | {(a.id, b.id) for a, b in pairs}),
                          "unresolved": len(pairs),
                          "auto_resolvable": sum(1 for a, b in pairs if confidence_gap(a, b) > AUTO_RESOLVE_GAP),
                          "age_hours_max": max((round(max(0.0, now - max(a.created_at, b.created_at)) / 3600, 2)
                                                for a, b in pairs), default=0.0)},
            "stale_count": sum(1 for r in current if r.state == "stale"),
            "decaying_next_7d": sum(1 for r in current if r.state != "stale" and _stale_at(r) <= now + WEEK),
            "no_evidence_count": sum(1 for r in current if not r.evidence),
            "oldest_belief_days": _days(now, oldest.created_at) if oldest else 0.0,
            "newest_belief_days": _days(now, newest.created_at) if newest else 0.0}


def _by_key(records: list[Record]) -> dict[str, list[Record]]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        groups.setdefault(r.proposition, []).append(r)
    return groups


def confidence_gap(a: Record, b: Record) -> float:
    """How far apart the two beliefs' confidences are (the contract's auto_resolve compares it)."""
    return round(abs(a.confidence - b.confidence), 6)


def contradiction_view(records: list[Record], now: float) -> dict:
    """Each contradictory pair with both confidences and what `auto` would decide; and the
    contract's list (a lexical negation is detected by keyword, a declared one by the
    confidence rule that declared it)."""
    pairs, listed = [], []
    for p, n in contradictions(records):
        winner, _, rule = auto_winner(p, n)
        pairs.append({"proposition_key": p.proposition, "topic": p.topic, "holds": _brief(p),
                      "denied": _brief(n), "auto": {"winner": winner.id, "rule": rule}})
        lexical = negation(p, n)
        listed.append({**_pair_fields(p, n), "overlap_score": 1.0 if lexical else _overlap(p, n),
                       "detection_score": 1.0, "detected_at": iso(max(p.created_at, n.created_at)),
                       "detection_method": "keyword" if lexical else "confidence_weighted"})
    advice = ("No contradictions." if not pairs else
              f"{len(pairs)} contradiction(s): settle each with resolve_conflict (keep_a, keep_b, merge or "
              "discard_both), or auto_resolve to let the confidence gap decide.")
    return {"count": len(pairs), "pairs": pairs, "total": len(listed), "contradictions": listed,
            "recommendation": advice}


def _words(r: Record) -> frozenset[str]:
    return frozenset(r.proposition.split())


def _overlap(a: Record, b: Record) -> float:
    """Jaccard overlap of the two propositions' words."""
    wa, wb = _words(a), _words(b)
    return round(len(wa & wb) / len(wa | wb), 4) if wa | wb else 0.0


def _contexts(r: Record) -> set[str]:
    return {t[len(CONTEXT_TAG):].casefold() for t in r.tags if t.casefold().startswith(CONTEXT_TAG)}


def _same_context(a: Record, b: Record, context: Optional[str]) -> bool:
    """With `context`: both carry the tag context:<it>; without: they share a context tag, or
    neither has one (one shared, unnamed context)."""
    ca, cb = _contexts(a), _contexts(b)
    if context:
        return context.casefold() in ca and context.casefold() in cb
    return bool(ca & cb) or not (ca or cb)


def _entailing(held: list[Record]) -> list[tuple[Record, Record]]:
    """(a, b) pairs of the same polarity where b's proposition words (two at least) are all
    among a's: a, the more specific, entails b (an inverted index, not all pairs)."""
    postings: dict[str, set[int]] = {}
    for i, r in enumerate(held):
        for word in _words(r):
            postings.setdefault(word, set()).add(i)
    found = []
    for j, b in enumerate(held):
        words = _words(b)
        if len(words) < 2:
            continue
        for i in sorted(set.intersection(*(postings[w] for w in words)) - {j}):
            a = held[i]
            if a.polarity == b.polarity and (len(_words(a)) > len(words) or i < j):
                found.append((a, b))
    return found


def relations(records: list[Record], now: float, context: Optional[str] = None, strict: bool = True) -> dict:
    """Pairs of current beliefs rated contradiction (see `contradictions`), entailment (same
    polarity, one's proposition words contained in the other's) or neutral (the rest). With
    `strict`, a pair not in the same context (`_same_context`) is neutral whatever it says;
    only those gated pairs are listed among the neutral ones (the others are counted)."""
    held = [r for r in records if r.current]
    related = [("contradiction", a, b) for a, b in contradictions(held)] + \
              [("entailment", a, b) for a, b in _entailing(held)]
    listed, gated, counts = [], [], Counter()
    for relation, a, b in related:
        same = _same_context(a, b, context)
        shown = relation if same or not strict else "neutral"
        counts[shown] += 1
        counts[f"{shown} in the same context"] += same
        method = ("keyword" if negation(a, b) else "declared") if relation == "contradiction" else "containment"
        item = {"relation": shown, "same_context": same, "overlap_score": _overlap(a, b),
                "confidence": 1.0 if relation == "contradiction" else _overlap(a, b),
                "detection_method": method if shown == relation else f"{method}, gated by context",
                "detected_at": iso(now), **_pair_fields(a, b)}
        (listed if shown == relation else gated).append(item)
    total = len(held) * (len(held) - 1) // 2
    neutral = total - counts["contradiction"] - counts["entailment"]
    return {"total": total, "contradictions": counts["contradiction"], "entailments": counts["entailment"],
            "neutral_pairs": neutral, "relations": listed + gated[:LISTED], "context": context,
            "strict_same_context": strict, "recommendation": _relations_advice(counts)}


def _relations_advice(counts: Counter) -> str:
    """The relations mode's recommendation, saying how many contradictions share a context."""
    found, same = counts["contradiction"], counts["contradiction in the same context"]
    if not found:
        return "No contradictions among the beliefs analysed."
    where = ("in the same context" if same == found else "none of them in the same context" if not same
             else f"{same} of them in the same context")
    return f"{found} contradiction(s), {where}: settle them with resolve_conflict."


def decay(records: list[Record], now: float) -> dict:
    """Beliefs whose confidence fell most below their reliability; the stale and archived ones;
    days since each was last stated or given evidence; and the contract's counts of what turns
    stale or archived within 7 days (decay archives beliefs, it never forgets them)."""
    held = [r for r in records if r.superseded_by is None]
    fallen = sorted((r for r in held if r.reliability - r.confidence > 1e-4),
                    key=lambda r: (r.confidence - r.reliability, r.seq))[:LISTED]
    stale = [r for r in held if r.state == "stale"]
    archive_after = lifecycle.ARCHIVE_AFTER_TTLS * lifecycle.ttl_days("belief") * DAY

    def aged(r: Record) -> dict:
        return {**_ref(r), "state": r.state, "days_since_evidence": _days(now, r.last_evidence)}
    by_tag = Counter(t for r in stale for t in r.tags)
    advice = ("No belief is stale." if not stale else
              f"{len(stale)} stale belief(s): restate the ones still true (set_belief) or let them be archived.")
    return {"fallen": [{**aged(r), "reliability": r.reliability, "drop": round(r.reliability - r.confidence, 4)}
                       for r in fallen],
            "stale": [aged(r) for r in stale],
            "archived": [aged(r) for r in held if r.state == "archived"],
            "stale_now": len(stale),
            "stale_7d": sum(1 for r in held if r.state in ("candidate", "validated", "active")
                            and _stale_at(r) <= now + WEEK),
            "archived_7d": sum(1 for r in stale if r.last_seen_at + archive_after <= now + WEEK),
            "forgotten_7d": 0, "by_tag_stale": dict(by_tag.most_common()), "recommendation": advice}


def topics(records: list[Record], now: float) -> dict:
    """The contract's `topics`: current beliefs by tag (how many, mean confidence, how many
    stale) and how many have no tag; ours, `subjects`: current beliefs grouped by topic (what
    they are about): how many, mean confidence, how many contested."""
    contested = contested_by(records)
    groups: dict[str, list[Record]] = {}
    tagged: dict[str, list[Record]] = {}
    for r in records:
        if r.current:
            groups.setdefault(r.topic, []).append(r)
            for tag in r.tags:
                tagged.setdefault(tag, []).append(r)
    rows = [{"topic": topic, "beliefs": len(group), "mean_confidence": _mean([r.confidence for r in group]),
             "contested": sum(1 for r in group if r.id in contested), "ids": [r.id for r in group]}
            for topic, group in groups.items()]
    by_tag = [{"tag": tag, "count": len(group), "avg_confidence": _mean([r.confidence for r in group]),
               "stale": sum(1 for r in group if r.state == "stale")} for tag, group in tagged.items()]
    return {"count": len(rows), "subjects": sorted(rows, key=lambda row: (-row["beliefs"], row["topic"])),
            "topics": sorted(by_tag, key=lambda row: (-row["count"], row["tag"])),
            "untagged_count": sum(1 for r in records if r.current and not r.tags)}


def evidence_audit(records: list[Record], now: float) -> dict:
    """Current beliefs without evidence, with evidence from one source only, or with more
    evidence against than for; evidence (of any belief) whose memory no longer exists; and the
    contract's totals, evidence by source type and rows of weight 0."""
    held = [r for r in records if r.current]
    rows = [e for r in held for e in r.evidence]
    without = [_ref(r) for r in held if not r.evidence]
    advice = ("Every current belief has evidence." if not without else
              f"{len(without)} current belief(s) without evidence: cite sources with set_belief.")
    return {"no_evidence": without,
            "single_source": [_ref(r) for r in held if len({e["source"] for e in r.evidence}) == 1],
            "outweighed": [_brief(r) for r in held if r.against > r.support],
            "missing_memory": [{"belief_id": r.id, "memory_id": e["memory_id"]} for r in records
                               for e in r.evidence if e["memory_id"] and not e["exists"]],
            "total": len(held), "with_evidence": len(held) - len(without), "without_evidence": len(without),
            "avg_evidence_per_belief": _mean([len(r.evidence) for r in held]) or 0.0,
            "by_source_type": dict(Counter(e["source_type"] for e in rows).most_common()),
            "zero_weight_entries": sum(1 for e in rows if e["weight"] == 0), "recommendation": advice}


HISTOGRAM = (("0.9_1.0", 0.9), ("0.7_0.9", 0.7), ("0.5_0.7", 0.5), ("0.3_0.5", 0.3), ("0.0_0.3", 0.0))


def confidence(records: list[Record], now: float) -> dict:
    """Current beliefs: the contract's histogram and list (lowest first), a 5-bucket histogram
    of even fifths (`by_fifth`), the lowest and highest, and the correlation of confidence with
    the number of supporting evidence rows."""
    held = sorted((r for r in records if r.current), key=lambda r: (r.confidence, r.seq))
    counts = Counter(min(int(round(r.confidence * BUCKETS, 6)), BUCKETS - 1) for r in held)
    width = 1 / BUCKETS
    bands = Counter(next(name for name, low in HISTOGRAM if r.confidence >= low) for r in held)
    low, coarse = bands["0.0_0.3"], _coarse(records)
    advice = ("No current belief is below 0.3." if not low else
              f"{low} belief(s) below 0.3: find evidence for them, or discard them.")
    return {"count": len(held), "mean": _mean([r.confidence for r in held]),
            "by_fifth": {f"{i * width:.1f}-{(i + 1) * width:.1f}": counts[i] for i in range(BUCKETS)},
            "lowest": [_ref(r) for r in held[:EXTREMES]],
            "highest": [_ref(r) for r in reversed(held[-EXTREMES:])],
            "correlation_with_evidence": _pearson([r.confidence for r in held], [r.support for r in held]),
            "beliefs": [{"id": r.id, "proposition": r.text, "confidence": r.confidence,
                         "evidence_count": len(r.evidence), "lifecycle_state": coarse[r.id]} for r in held],
            "histogram": {name: bands[name] for name, _ in HISTOGRAM}, "lowest_count": low,
            "recommendation": advice}


def _pearson(xs: list[float], ys: list[float]) -> Optional[float]:
    """Pearson's r, or None with fewer than two points or no spread."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return round(sxy / math.sqrt(sxx * syy), 4) if sxx > 0 and syy > 0 else None


VIEWS: dict[str, Callable[..., dict]] = {
    "overview": overview, "contradictions": contradiction_view, "relations": relations, "decay": decay,
    "topics": topics, "evidence_audit": evidence_audit, "confidence": confidence}
