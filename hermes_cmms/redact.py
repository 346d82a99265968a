"""Built-in redactor: common secrets never reach the store."""
from __future__ import annotations

import re

from .hooks import hookimpl

# Words that follow "password is/was" in talk *about* a password rather than the password itself.
NOT_A_PASSWORD = (
    "a", "an", "the", "not", "no", "now", "still", "also", "too", "very", "being", "been", "set",
    "reset", "changed", "updated", "saved", "stored", "required", "mandatory", "optional",
    "incorrect", "wrong", "correct", "right", "invalid", "valid", "expired", "empty", "blank",
    "missing", "weak", "strong", "long", "short", "same", "different", "hidden", "encrypted",
    "hashed", "forgotten", "lost", "locked", "sent", "shown", "accepted", "rejected", "compromised",
    "leaked", "fine", "ok", "okay", "working", "good", "bad", "secure", "insecure", "case",
    "in", "on", "at", "for", "from", "my", "your", "his", "her", "their", "our", "this", "that",
    "it", "what", "which", "there", "here", "below", "above")

# (label, pattern); the whole match is replaced unless the pattern has a `secret` group.
PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private-key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)),
    ("openai-key", re.compile(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", re.compile(
        r"(?i)aws[_\s-]?secret[_\s-]?(?:access[_\s-]?)?key\s*(?:[:=]|is\b:?)\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})")),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9_\-\.=~+/]{16,})")),
    ("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase|client[_-]?secret|secret[_-]?key|api[_-]?key"
        r"|access[_-]?token|auth[_-]?token)\s*[:=]\s*(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s,;]+)")),
    ("password", re.compile(
        r"(?i)\b(?:password|passphrase|passcode)\s+(?:is|was)\s*:?\s+"
        rf"(?!(?:{'|'.join(NOT_A_PASSWORD)})[.!?:)]*(?:[\s,;]|$))(?P<secret>[^\s,;]+)")),
    ("url-password", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:(?P<secret>[^/\s@]+)@")),
]


def redact_text(text: str) -> str:
    for label, pattern in PATTERNS:
        text = pattern.sub(lambda m, label=label: _mask(m, label), text)
    return text


def _mask(match: re.Match, label: str) -> str:
    marker = f"[REDACTED:{label}]"
    if "secret" in match.re.groupindex and match.group("secret"):
        start, end = match.span("secret")
        whole_start = match.start()
        return match.group(0)[: start - whole_start] + marker + match.group(0)[end - whole_start:]
    return marker


@hookimpl
def redact(text):
    return redact_text(text)
