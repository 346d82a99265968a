"""The read side of beliefs: loading them with their evidence, the belief dict every door
returns, the conflict rule, and the six reflection views (computed from the stored rows).

Only reads; `hermes_cmms.knowledge.beliefs` writes.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from sqlalchemy import Connection, select

from ..common.errors import UnknownMemory
from ..recall.shape import iso
from ..store.models import Belief, Evidence, Memory

REFLECT_MODES = ("overview", "contradictions", "decay", "topics", "evidence_audit", "confidence")
SHOWN_STATES = ("candidate", "validated", "active", "stale", "archived", "superseded")
TIE_CONFIDENCE = 0.05  # confidences this close are a tie for the auto rule
SHOWN_EVIDENCE = 20  # evidence rows in a belief dict (the newest); the counts cover all
LISTED = 10  # entries per list in a reflection
EXTREMES = 3  # lowest and highest beliefs in the confidence view
BUCKETS = 5
DAY = 86400.0


@dataclass
class Record:
    """One stored belief: its memory row, its proposition and its evidence (oldest first)."""

    id: str
    text: str
    proposition: str
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
    evidence: list[dict] = field(default_factory=list)  # memory_id, source, stance, note, at, exists

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


def belief_dict(r: Record, contested_by: list[str]) -> dict:
    """The JSON shape of one belief, as every door returns it."""
    shown = [{"memory_id": e["memory_id"], "source": e["source"], "stance": e["stance"],
              "note": e["note"], "at": iso(e["at"])} for e in reversed(r.evidence[-SHOWN_EVIDENCE:])]
    return {"id": r.id, "text": r.text, "proposition": r.proposition, "topic": r.topic,
            "polarity": r.polarity, "confidence": r.confidence, "state": r.shown_state,
            "superseded_by": r.superseded_by, "contested_by": contested_by, "evidence": shown,
            "evidence_for": r.support, "evidence_against": r.against, "tags": r.tags,
            "source": r.source, "created_at": iso(r.created_at), "reinforcements": r.reinforced}


def auto_winner(a: Record, b: Record) -> tuple[Record, Record, str]:
    """(winner, loser, rule): the higher confidence wins; within TIE_CONFIDENCE, more supporting
    evidence wins; still tied, the newer belief wins."""
    if round(abs(a.confidence - b.confidence), 6) > TIE_CONFIDENCE:
        return (a, b, "confidence") if a.confidence > b.confidence else (b, a, "confidence")
    if a.support != b.support:
        return (a, b, "evidence") if a.support > b.support else (b, a, "evidence")
    return (a, b, "newer") if (a.created_at, a.seq) > (b.created_at, b.seq) else (b, a, "newer")


def contradictions(records: list[Record]) -> list[tuple[Record, Record]]:
    """Pairs of current beliefs with the same proposition and opposite polarity (holds, denied)."""
    by_key: dict[str, list[Record]] = {}
    for r in records:
        if r.current:
            by_key.setdefault(r.proposition, []).append(r)
    return [(p, n) for group in by_key.values() for p in group if p.polarity > 0
            for n in group if n.polarity < 0]


def contested_by(records: list[Record]) -> dict[str, list[str]]:
    """For each contested belief, the ids of the current beliefs that contradict it."""
    found: dict[str, list[str]] = {}
    for p, n in contradictions(records):
        found.setdefault(p.id, []).append(n.id)
        found.setdefault(n.id, []).append(p.id)
    return found


# -- loading ------------------------------------------------------------------------------------


def query(scope: str):
    """Every belief of the scope: its memory columns and its proposition."""
    return (select(*Memory.__table__.columns, Belief.proposition_key, Belief.topic, Belief.polarity)
            .join(Belief, Belief.memory_id == Memory.id).where(Belief.scope == scope, Memory.scope == scope))


def current(q):
    """`q` narrowed to current beliefs (neither superseded nor archived)."""
    return q.where(Memory.superseded_by.is_(None), Memory.state != "archived")


def load(conn: Connection, scope: str, q) -> list[Record]:
    """The beliefs `q` selects, with their evidence (oldest first)."""
    records = [_as_record(row._mapping) for row in conn.execute(q)]
    by_id = {r.id: r for r in records}
    for start in range(0, len(records), 500):
        chunk = [r.id for r in records[start:start + 500]]
        for e in conn.execute(select(Evidence).where(Evidence.scope == scope, Evidence.belief_id.in_(chunk))
                              .order_by(Evidence.id)):
            by_id[e.belief_id].evidence.append({"memory_id": e.memory_id, "source": e.source,
                                                "stance": e.stance, "note": e.note, "at": e.at, "exists": True})
    return records


def _as_record(row) -> Record:
    return Record(id=row["id"], text=row["content"], proposition=row["proposition_key"], topic=row["topic"],
                  polarity=row["polarity"], confidence=row["confidence"], reliability=row["reliability"],
                  state=row["state"], superseded_by=row["superseded_by"], tags=json.loads(row["tags"] or "[]"),
                  source=row["source"], created_at=row["created_at"],
                  last_seen_at=row["last_seen_at"] or row["created_at"], reinforced=row["access_count"],
                  seq=row["seq"])


def mark_missing(conn: Connection, scope: str, records: list[Record]) -> None:
    """Flag evidence whose memory no longer exists in the scope (`exists` False)."""
    cited = list({e["memory_id"] for r in records for e in r.evidence if e["memory_id"]})
    present = set()
    for start in range(0, len(cited), 500):
        present |= {i for i, s in conn.execute(select(Memory.id, Memory.scope).where(
            Memory.id.in_(cited[start:start + 500]))) if s == scope}
    for r in records:
        for e in r.evidence:
            e["exists"] = e["memory_id"] is None or e["memory_id"] in present


def one(conn: Connection, scope: str, belief_id) -> Record:
    """A belief of the scope by id; UnknownMemory if there is none."""
    found = load(conn, scope, query(scope).where(Memory.id == belief_id)) if isinstance(belief_id, str) else []
    if not found:
        raise UnknownMemory(f"Unknown belief id {belief_id!r} in this scope.")
    return found[0]


def dicts(conn: Connection, scope: str, records: Sequence[Record]) -> list[dict]:
    """Belief dicts, each with the current beliefs that contradict it."""
    keys = list({r.proposition for r in records})
    rivals = load(conn, scope, current(query(scope)).where(Belief.proposition_key.in_(keys))) if keys else []
    known = {r.id: r for r in [*rivals, *records]}
    contested = contested_by(list(known.values()))
    return [belief_dict(r, contested.get(r.id, [])) for r in records]


def _mean(values: list[float]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _ref(r: Record) -> dict:
    return {"id": r.id, "text": r.text, "confidence": r.confidence}


def _brief(r: Record) -> dict:
    return {**_ref(r), "evidence_for": r.support, "evidence_against": r.against}


def _days(now: float, at: float) -> float:
    return round(max(0.0, now - at) / DAY, 1)


def overview(records: list[Record], now: float) -> dict:
    """Counts by state, current / superseded / contested, mean confidence, evidence totals."""
    current = [r for r in records if r.current]
    states = Counter(r.shown_state for r in records)
    newest = max(records, key=lambda r: r.seq, default=None)
    return {"beliefs": len(records), "by_state": {s: states[s] for s in SHOWN_STATES},
            "current": len(current), "superseded": states["superseded"],
            "contested": len(contested_by(records)),
            "mean_confidence": _mean([r.confidence for r in current]),
            "evidence": {"for": sum(r.support for r in records), "against": sum(r.against for r in records),
                         "total": sum(len(r.evidence) for r in records)},
            "topics": len({r.topic for r in current}),
            "newest": {**_ref(newest), "created_at": iso(newest.created_at)} if newest else None}


def contradiction_view(records: list[Record], now: float) -> dict:
    """Each contradictory pair with both confidences and what `auto` would decide."""
    pairs = []
    for p, n in contradictions(records):
        winner, _, rule = auto_winner(p, n)
        pairs.append({"proposition": p.proposition, "topic": p.topic, "holds": _brief(p),
                      "denied": _brief(n), "auto": {"winner": winner.id, "rule": rule}})
    return {"count": len(pairs), "pairs": pairs}


def decay(records: list[Record], now: float) -> dict:
    """Beliefs whose confidence fell most below their reliability; the stale and archived ones;
    days since each was last stated or given evidence."""
    held = [r for r in records if r.superseded_by is None]
    fallen = sorted((r for r in held if r.reliability - r.confidence > 1e-4),
                    key=lambda r: (r.confidence - r.reliability, r.seq))[:LISTED]

    def aged(r: Record) -> dict:
        return {**_ref(r), "state": r.state, "days_since_evidence": _days(now, r.last_evidence)}
    return {"fallen": [{**aged(r), "reliability": r.reliability, "drop": round(r.reliability - r.confidence, 4)}
                       for r in fallen],
            "stale": [aged(r) for r in held if r.state == "stale"],
            "archived": [aged(r) for r in held if r.state == "archived"]}


def topics(records: list[Record], now: float) -> dict:
    """Current beliefs grouped by topic: how many, mean confidence, how many contested."""
    contested = contested_by(records)
    groups: dict[str, list[Record]] = {}
    for r in records:
        if r.current:
            groups.setdefault(r.topic, []).append(r)
    rows = [{"topic": topic, "beliefs": len(group), "mean_confidence": _mean([r.confidence for r in group]),
             "contested": sum(1 for r in group if r.id in contested), "ids": [r.id for r in group]}
            for topic, group in groups.items()]
    return {"count": len(rows), "topics": sorted(rows, key=lambda row: (-row["beliefs"], row["topic"]))}


def evidence_audit(records: list[Record], now: float) -> dict:
    """Current beliefs without evidence, with evidence from one source only, or with more
    evidence against than for; evidence (of any belief) whose memory no longer exists."""
    held = [r for r in records if r.current]
    return {"no_evidence": [_ref(r) for r in held if not r.evidence],
            "single_source": [_ref(r) for r in held if len({e["source"] for e in r.evidence}) == 1],
            "outweighed": [_brief(r) for r in held if r.against > r.support],
            "missing_memory": [{"belief_id": r.id, "memory_id": e["memory_id"]} for r in records
                               for e in r.evidence if e["memory_id"] and not e["exists"]]}


def confidence(records: list[Record], now: float) -> dict:
    """Current beliefs: a 5-bucket histogram, the lowest and highest, and the correlation of
    confidence with the number of supporting evidence rows."""
    held = sorted((r for r in records if r.current), key=lambda r: (r.confidence, r.seq))
    counts = Counter(min(int(round(r.confidence * BUCKETS, 6)), BUCKETS - 1) for r in held)
    width = 1 / BUCKETS
    return {"count": len(held), "mean": _mean([r.confidence for r in held]),
            "histogram": {f"{i * width:.1f}-{(i + 1) * width:.1f}": counts[i] for i in range(BUCKETS)},
            "lowest": [_ref(r) for r in held[:EXTREMES]],
            "highest": [_ref(r) for r in reversed(held[-EXTREMES:])],
            "correlation_with_evidence": _pearson([r.confidence for r in held], [r.support for r in held])}


def _pearson(xs: list[float], ys: list[float]) -> Optional[float]:
    """Pearson's r, or None with fewer than two points or no spread."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return round(sxy / math.sqrt(sxx * syy), 4) if sxx > 0 and syy > 0 else None


VIEWS: dict[str, Callable[[list[Record], float], dict]] = {
    "overview": overview, "contradictions": contradiction_view, "decay": decay, "topics": topics,
    "evidence_audit": evidence_audit, "confidence": confidence}
