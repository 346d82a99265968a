"""Checks a rule's match must pass before it is masked: Luhn, entropy, secret-ish key names."""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from functools import lru_cache

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
                   "secretaccesskey", "sharedaccesskey", "accesskeysecret", "clientkeydata", "rediscliauth",
                   "identitytoken", "registrytoken", "dockerconfigjson", "dockercfg"})  # Docker's config.json
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
# A value this long is never a dotted name of code nor (however it is padded) a word of talk: so
# the generic key-value rule decides on a value's first LONG characters and reads no further.
LONG = 200


@lru_cache(maxsize=4096)  # a text repeats its keys; the generic rule asks about each one
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
    first = value.split(None, 1)[0] if value.strip() else ""
    return bare_word(first)


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
    return (end <= after < start + LONG and "." in found.group()) or (after < len(text) and text[after] in "([")


def bare_word(value: str) -> bool:
    """A whole value that is one word of talk (`?token=expired`, `secret=none`)."""
    return len(value) < LONG and value.strip(".,;:!?)(").lower() in NOT_SECRETS


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


# Each card network's number prefixes and the lengths its numbers have (the issuers' tables that
# DLP scanners use): a bare run of digits is a card only when its prefix and length fit one.
_NETWORKS = [
    (r"4", (13, 16, 19)),  # Visa
    (r"5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720", (16,)),  # Mastercard
    (r"3[47]", (15,)),  # American Express
    (r"6011|64[4-9]|65", range(16, 20)),  # Discover
    (r"35(?:2[89]|[3-8]\d)", range(16, 20)),  # JCB
    (r"30[0-59]|3[689]", range(14, 20)),  # Diners Club
    (r"62", range(16, 20)),  # UnionPay
    (r"220[0-4]", range(16, 20)),  # Mir
    (r"50(?:18|20|38)|5893|6304|6759|676[1-3]", range(12, 20)),  # Maestro
]
_NETWORK_PREFIXES = [(re.compile(prefix), lengths) for prefix, lengths in _NETWORKS]
_CARD_GROUPS = re.compile(r"\d{4}(?:([ \-])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|([ \-])\d{6}\2\d{4,5})\Z")
_CARD_WORDS = re.compile(r"(?i)(?<![a-z])(?:card|cc|visa|master ?card|amex|american express|discover|diners|jcb"
                         r"|credit|debit|pan|karte|carte|tarjeta|cart[aã]o|cvv|cvc|exp)")
# The words right before a bare number that say it is something else: an id, an amount, a phone
# ("order id 4111…", "the total was 4012…", "tracking number: 4000…").
_NOT_CARD = re.compile(r"(?i)(?<![a-z])(?:order|invoice|tracking|ticket|shipment|parcel|booking|ref|reference"
                       r"|isbn|ean|upc|imei|iccid|phone|tel|fax|total|amount|balance|sum)"
                       r"(?:[\s#:=.]+(?:id|no|nr|number|num|is|was))*[\s#:=.'\"(]*\Z")


def card_number(text: str) -> bool:
    """A payment card number: a card network's prefix, a length that network issues, and a
    valid Luhn sum."""
    digits = re.sub(r"[ .-]", "", text)
    return any(prefix.match(digits) and len(digits) in lengths for prefix, lengths in _NETWORK_PREFIXES) \
        and luhn(digits)


def card_context(text: str, start: int, end: int) -> bool:
    """A card number written as cards are (4-4-4-4, 4-6-5), or with a card word near it, or as
    one bare run of digits unless the words right before it name what else it is; digits split
    some other way need a card word."""
    number = text[start:end]
    if _CARD_GROUPS.match(number) or _CARD_WORDS.search(text, max(0, start - 40), start) or \
            _CARD_WORDS.search(text, end, end + 24):
        return True
    return number.isdigit() and not _NOT_CARD.search(text, max(0, start - 40), start)


_USER_PASSWORD = re.compile(r"(?=[^:]*[A-Za-z])[\w.@+\-]{2,64}:(?!//)[!-~]{2,}", re.A)


_URL_SAFE = str.maketrans("-_", "+/")


def basic_credentials(text: str, anywhere: bool = False) -> bool:
    """Whether base64 `text` (standard or URL-safe alphabet) decodes to printable `user:password`. `anywhere` (a base64 value with
    no "Basic" before it, as in a Docker `auth` or an npm `_auth`): a user name of 2-64 name
    characters with a letter, a password of 2+ with no space, and no URL (`http://…`)."""
    url_safe = "-" in text or "_" in text
    if (url_safe and ("+" in text or "/" in text)) or len(text.rstrip("=")) % 4 == 1:
        return False  # the two alphabets mixed, or a length no base64 has ("eu-west-1")
    try:
        decoded = base64.b64decode((text.translate(_URL_SAFE) if url_safe else text) + "=" * (-len(text) % 4),
                                   validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    if anywhere:
        return _USER_PASSWORD.fullmatch(decoded) is not None
    return ":" in decoded and decoded.isprintable()
