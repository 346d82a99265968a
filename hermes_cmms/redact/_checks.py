"""Checks a rule's match must pass before it is masked: Luhn, entropy, secret-ish key names."""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

# The last part of a key name that says its value is a secret (DB_PASSWORD, twilioAuthToken, ...).
SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "pw", "pass", "passphrase", "passcode", "pin", "secret", "token",
    "apikey", "credential", "credentials", "creds", "dsn", "sig", "signature", "sas", "cookie"})
# The last two parts: the first names what kind of key (API_KEY, STRIPE_SECRET_KEY, ...).
KEY_KINDS = frozenset({
    "api", "access", "secret", "private", "signing", "encryption", "master", "account", "app",
    "client", "service", "auth", "shared", "session", "license", "admin", "root", "deploy",
    "webhook", "consumer", "subscription", "storage", "sendgrid", "stripe", "mailgun", "hmac",
    "jwt", "ssh", "gpg", "pgp", "sentry", "twilio", "datadog", "dd", "x"})
TAILS = frozenset({"privatekeyid", "connectionstring", "connstring", "connstr", "webhookurl",
                   "secretaccesskey", "sharedaccesskey", "accesskeysecret", "clientkeydata", "rediscliauth"})
# A last part with a secret word fused on (PGPASSWORD, DBPASSWD, SSHPASSPHRASE).
FUSED = ("password", "passwd", "passphrase")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Values after "key:" that are talk, not a secret ("Token: see the docs", "password: none").
NOT_SECRETS = frozenset({
    "a", "an", "the", "not", "no", "none", "null", "nil", "true", "false", "yes", "see", "is",
    "was", "required", "optional", "n/a", "tbd", "todo", "unknown", "empty", "unset", "changed",
    "reset", "expired", "invalid", "missing", "hidden", "redacted", "same", "please", "ask",
    "use", "check", "never", "only", "must", "should", "will", "can", "it", "this", "that", "my",
    "your", "our", "their", "its", "in", "on", "at", "for", "from", "to", "of", "and", "or"})


def secret_key(name: str) -> bool:
    """Whether a key name (any case style, any prefix) names a secret value."""
    parts = [p.lower() for p in _PARTS.findall(name)]
    if not parts:
        return False
    if parts[-1] in SECRET_WORDS or parts[-1].endswith(FUSED) or "".join(parts[-3:]) in TAILS or "".join(parts[-2:]) in TAILS:
        return True
    return len(parts) >= 2 and parts[-1] == "key" and parts[-2] in KEY_KINDS


def talk(value: str) -> bool:
    """Whether a value after "key:" starts like a sentence about the key rather than a secret."""
    first = value.split(None, 1)[0].strip(".,;:!?)(").lower() if value.strip() else ""
    return first in NOT_SECRETS


# Values that are code or a placeholder, not a secret: `secret = None`, `def f(password: str)`.
CODE_WORDS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "return", "self", "await", "yield", "lambda",
    "str", "string", "int", "float", "bool", "bytes", "dict", "list", "any", "optional", "number"})
_PLACEHOLDER = re.compile(r"\$\{|\{\{|\$[A-Z_][A-Z0-9_]*(?![A-Za-z0-9_])|%\(\w+\)s|<[\w\- ]+>")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def code(text: str, start: int, end: int) -> bool:
    """Whether the value at text[start:end] is code or a placeholder rather than a secret: a
    literal or type name, `${VAR}` / `{{ x }}` / `$VAR` / `<your-token>`, a dotted name
    (`settings.API_KEY`), or a call or subscript (`getpass.getpass()`, `os.environ[...]`)."""
    value = text[start:end]
    if value.lower() in CODE_WORDS or _PLACEHOLDER.match(text, start):
        return True
    found = _NAME.match(text, start)
    if found is None:
        return False
    after = found.end()
    return (after >= end and "." in found.group()) or (after < len(text) and text[after] in "([")


def bare_word(value: str) -> bool:
    """A whole value that is one word of talk (`?token=expired`, `secret=none`)."""
    return value.strip(".,;:!?)(").lower() in NOT_SECRETS


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def random_looking(text: str) -> bool:
    """A token that looks generated: letters and digits mixed, and no run of plain words."""
    has_digit = any(c.isdigit() for c in text)
    has_alpha = any(c.isalpha() for c in text)
    return has_digit and has_alpha and entropy(text) >= 3.0


def luhn(digits: str) -> bool:
    """The Luhn checksum that every payment card number passes."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|2)|35")


_CARD_GROUPS = re.compile(r"\d{4}(?:([ \-])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|([ \-])\d{6}\2\d{4,5})\Z")
_CARD_WORDS = re.compile(r"(?i)(?<![a-z])(?:card|cc|visa|master ?card|amex|american express|discover|diners|jcb"
                         r"|credit|debit|pan|karte|carte|tarjeta|cart[aã]o|cvv|cvc|exp)")


def card_number(text: str) -> bool:
    """A payment card number: 13-19 digits with a card network's prefix and a valid Luhn sum."""
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn(digits)


def card_context(text: str, start: int, end: int) -> bool:
    """A card number written as cards are (4-4-4-4, 4-6-5) or with a card word near it: a bare
    Luhn-valid run of digits after "order" or in arithmetic is an id or an amount."""
    if _CARD_GROUPS.match(text[start:end]):
        return True
    return _CARD_WORDS.search(text, max(0, start - 40), start) is not None or \
        _CARD_WORDS.search(text, end, end + 24) is not None


def basic_credentials(text: str) -> bool:
    """Whether base64 `text` decodes to printable `user:password`."""
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()
