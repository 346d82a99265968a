"""The audit's answer, findings collected by audit type (the pages it reads are in
_rows/audit.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from ..common.ids import shown_id

MAX_FINDINGS = 100  # listed per audit type; the count is always the true one
BATCH = 1000  # rows read per page
EXAMPLES = 3  # findings named in a check's sentence
# checks whose findings break the store's integrity (the CMMS contract's `errors`); every other
# check (drift that reindex repairs, what a person should judge) is a warning
ERRORS = frozenset({
    "fact_without_memory", "link_without_memory", "link_without_source", "belief_without_memory",
    "evidence_without_belief", "evidence_without_memory", "relation_without_memory", "relation_without_entity",
    "outbox_without_memory", "superseded_by_missing", "unknown_state", "superseded_by_self", "supersede_cycle",
    "confidence_out_of_range", "reliability_out_of_range", "relation_mismatch", "belief_without_row"})


@dataclass
class Report:
    """Findings collected by audit type: the first MAX_FINDINGS listed, all of them counted."""

    types: tuple[str, ...]
    findings: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    checked: dict = field(default_factory=dict)
    by_check: dict = field(default_factory=dict)  # check name: how many it found
    skipped: tuple[str, ...] = ()  # scopes being forgotten: not checked (see audit._being_forgotten)

    def __post_init__(self):
        self.findings = {t: [] for t in self.types}
        self.counts = {t: 0 for t in self.types}

    def room(self, audit_type: str) -> int:
        return MAX_FINDINGS - len(self.findings[audit_type])

    def add(self, audit_type: str, finding: dict) -> None:
        if finding["scope"] in self.skipped:
            return
        self.counts[audit_type] += 1
        self.by_check[finding["check"]] = self.by_check.get(finding["check"], 0) + 1
        if self.room(audit_type) > 0:
            self.findings[audit_type].append(finding)

    def answer(self, audit_type: str, scope: Optional[str], checks: dict[str, tuple[str, ...]]) -> dict:
        """The audit's answer; `checks` names the checks of each audit type (audit.CHECKS)."""
        sentences: dict[str, list[str]] = {"errors": [], "warnings": []}
        for kind in self.types:
            for check in (c for c in checks[kind] if self.by_check.get(c)):
                sentences["errors" if check in ERRORS else "warnings"].append(self._sentence(kind, check))
        if "vector_drift" in self.types and "not checked" in str(self.checked.get("vector_index", "")):
            sentences["warnings"].append(f"The vector index was not checked: {self.checked['vector_index']}.")
        sentences["warnings"] += [f"A forget --all of scope {name!r} is in progress: its rows are not checked "
                                  "until it finishes." for name in self.skipped]
        return {"audit_type": audit_type, "scope": scope, "checked": self.checked, "findings": self.findings,
                "counts": self.counts, "ok": not any(self.counts.values()), "forgetting": list(self.skipped),
                **sentences}

    def _sentence(self, audit_type: str, check: str) -> str:
        """One check's findings in one sentence: how many, of which type, the first few."""
        count = self.by_check[check]
        named = [_named(f) for f in self.findings[audit_type] if f["check"] == check][:EXAMPLES]
        more = f", {', '.join(named)}{' and more' if count > len(named) else ''}" if named else ""
        return f"{count} {check} ({audit_type}){more}."


def _named(finding: dict) -> str:
    """A finding as a sentence names it: its key, the id shown dashed."""
    key_name = "memory_id" if "memory_id" in finding else "id"
    return f"{key_name} {shown_id(finding[key_name])}"


def _finding(check: str, key_name: str, key, scope: Optional[str], **detail) -> dict:
    return {"check": check, key_name: key, "scope": scope, "detail": detail}


def _chain(*iterators: Iterator[dict]) -> Iterator[dict]:
    for iterator in iterators:
        yield from iterator
