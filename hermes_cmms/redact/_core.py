"""The redactor's core: `redact_text` and `redact_key` over the rules of `_rules.py` (the
package docstring says what they mask and why)."""
from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from typing import Optional

from ._rules import RULES, Rule, key_of

MARKER = "[REDACTED:"
_LONGEST_MARKER = len(MARKER) + max(len(rule.label) for rule in RULES) + 14  # ":" + 12-digit digest + "]"
_SHORT = 64  # clean strings up to this length are remembered, so audit words cost one lookup
_clean: set[str] = set()


def redact_text(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<label>]`."""
    return _redacted(text, keyed=False)


def redact_key(text: str) -> str:
    """An identifier with every secret replaced by `[REDACTED:<label>:<digest>]`: stable, and
    distinct for distinct secrets."""
    return _redacted(text, keyed=True)


def _redacted(text: str, keyed: bool) -> str:
    if not isinstance(text, str) or not text or text in _clean:
        return text
    lowered, out = text.lower(), text
    for rule in RULES:
        if (not rule.keywords and rule.precheck is None) or rule.wanted(text, lowered):
            out = _scan(rule, out, keyed, _starts(rule, out)) if rule.overlapping or rule.anchors or rule.starts \
                else rule.pattern.sub(lambda m, rule=rule: _masked(m, rule, keyed) or m.group(0), out)
    if out == text and len(text) <= _SHORT:
        if len(_clean) > 4096:
            _clean.clear()
        _clean.add(text)
    return out


def _scan(rule: Rule, text: str, keyed: bool, starts: Optional[list[int]]) -> str:
    """`rule` applied like re.sub, except that a match its check refuses is tried again one
    character later ("settings: password=x" must not hide "password=x" inside a refused
    value), and, given `starts`, tried only at those positions."""
    pieces, pos, last = [], 0, 0
    while (match := _next(rule, text, pos, starts)) is not None:
        masked = _masked(match, rule, keyed)
        if masked is None:
            pos = match.start() + 1
            continue
        if rule.whole is not None:  # the value was read up to a cap: the mask covers all of it
            match = rule.whole.match(text, match.start())
            masked = _masked(match, rule, keyed)
        pieces += [text[last:match.start()], masked]
        last = pos = match.end()
    return "".join(pieces) + text[last:] if pieces else text


def _next(rule: Rule, text: str, pos: int, starts: Optional[list[int]]) -> Optional[re.Match]:
    if starts is None:
        return rule.pattern.search(text, pos)
    for at in range(bisect_left(starts, pos), len(starts)):
        if (match := rule.pattern.match(text, starts[at])) is not None:
            return match
    return None


def _starts(rule: Rule, text: str) -> Optional[list[int]]:
    """Where the rule is tried in `text`: its `starts`, or where its anchor words start (None: try
    everywhere). A text whose lower-case form has another length (a few non-ASCII letters) is
    searched everywhere for anchor words."""
    if rule.starts is not None:
        return rule.starts(text)
    if not rule.anchors:
        return None
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    found = set()
    for word in rule.anchors:
        at = lowered.find(word)
        while at >= 0:
            found.add(at)
            at = lowered.find(word, at + 1)
    return sorted(found)


def _masked(match: re.Match, rule: Rule, keyed: bool) -> Optional[str]:
    """The match with its secret replaced by a marker, or None when the match is no secret."""
    names = match.re.groupindex
    group = "secretq" if "secretq" in names and match.group("secretq") else "secret" if "secret" in names else 0
    secret = match.group(group)
    if secret.startswith(MARKER) or _in_marker(match) or (rule.check is not None and not rule.check(match)):
        return None
    marker = f"{MARKER}{_label(rule, match)}" + (f":{_digest(secret)}]" if keyed else "]")
    start, end = match.span(group)
    whole = match.start()
    return match.group(0)[: start - whole] + marker + match.group(0)[end - whole:]


def _in_marker(match: re.Match) -> bool:
    """Whether the match starts inside a marker already made (`[REDACTED:github-token:e74d…]` is
    no `token: <value>` pair), so that redacting the output again changes nothing."""
    text, start = match.string, match.start()
    opened = text.rfind(MARKER, max(0, start - _LONGEST_MARKER), start)
    return opened >= 0 and text.find("]", opened, opened + _LONGEST_MARKER) >= start


def _label(rule: Rule, match: re.Match) -> str:
    """A generic key-value rule says "password" when the key names one."""
    key = key_of(match) if rule.label == "secret" else None
    if key:
        key = key.lower()
        return "password" if re.search(r"pass|pwd|(?<![a-z])pw(?![a-z])", key) else "secret"
    return rule.label


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:12]
