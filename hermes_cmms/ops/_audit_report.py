"""The audit's answer, findings collected by audit type; and reading a query in pages."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

if TYPE_CHECKING:
    from ..engine import Engine

MAX_FINDINGS = 100  # listed per audit type; the count is always the true one
BATCH = 1000


@dataclass
class Report:
    """Findings collected by audit type: the first MAX_FINDINGS listed, all of them counted."""

    types: tuple[str, ...]
    findings: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    checked: dict = field(default_factory=dict)

    def __post_init__(self):
        self.findings = {t: [] for t in self.types}
        self.counts = {t: 0 for t in self.types}

    def room(self, audit_type: str) -> int:
        return MAX_FINDINGS - len(self.findings[audit_type])

    def add(self, audit_type: str, finding: dict) -> None:
        self.counts[audit_type] += 1
        if self.room(audit_type) > 0:
            self.findings[audit_type].append(finding)

    def answer(self, audit_type: str, scope: Optional[str]) -> dict:
        return {"audit_type": audit_type, "scope": scope, "checked": self.checked,
                "findings": self.findings, "counts": self.counts, "ok": not any(self.counts.values())}


def _finding(check: str, key_name: str, key, scope: Optional[str], **detail) -> dict:
    return {"check": check, key_name: key, "scope": scope, "detail": detail}


def _batches(engine: "Engine", query, key, after=None) -> Iterator[list]:
    """Rows of `query` in pages ordered by `key` (keyset paging: each page is its own read)."""
    while True:
        page = query if after is None else query.where(key > after)
        with engine.store.read() as conn:
            rows = conn.execute(page.order_by(key).limit(BATCH)).all()
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def _scoped(query, column, scope: Optional[str]):
    return query if scope is None else query.where(column == scope)


def _chain(*iterators: Iterator[dict]) -> Iterator[dict]:
    for iterator in iterators:
        yield from iterator
