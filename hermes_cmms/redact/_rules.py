"""The corpus of secret shapes, modelled on gitleaks' rule set: each rule is a label, a regular
expression, the lower-case keywords one of which must be in the text before the expression is
tried (gitleaks' prefilter, which keeps ordinary text fast), and an optional check of the match
(Luhn, entropy, a secret-ish key name). A rule masks its `secret` group (or `secretq`, a quoted
value) when it has one, else the whole match. Order matters: vendor shapes first, so a key's
marker names its vendor; the generic key-value rules skip a value that is already a marker."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from . import _checks

_E = r"(?![A-Za-z0-9])"  # and ends here
_KEY = r"(?P<key>[A-Za-z_][\w.\-]*+)"


@dataclass(frozen=True)
class Rule:
    label: str
    pattern: re.Pattern
    keywords: tuple[str, ...] = ()  # () = always tried (unless `precheck` says no)
    check: Optional[Callable[[re.Match], bool]] = None
    precheck: Optional[Callable[[str], bool]] = None  # a cheap look at the original text first
    overlapping: bool = False  # a refused match is tried again one character on (see redact._core._scan)
    anchors: tuple[str, ...] = ()  # lower-case words: the pattern is tried only where one starts
    starts: Optional[Callable[[str], list[int]]] = None  # else the only positions the pattern is tried at
    whole: Optional[re.Pattern] = None  # `pattern` with its value uncapped: what a match accepted is masked by

    def wanted(self, text: str, lowered: str) -> bool:
        """Whether the text may hold a match: one of the keywords is in it and the precheck passes."""
        if self.keywords and not any(map(lowered.__contains__, self.keywords)):
            return False
        return self.precheck is None or self.precheck(text)


def _rule(label: str, pattern: str, keywords=(), check=None, flags=0, precheck=None, overlapping=False,
          anchors=(), starts=None, whole=None) -> Rule:
    return Rule(label, re.compile(pattern, flags), tuple(keywords or anchors), check, precheck, overlapping,
                tuple(anchors), starts, whole and re.compile(whole, flags))


def _secret(match: re.Match) -> str:
    return match.group("secretq") if "secretq" in match.re.groupindex and match.group("secretq") \
        else match.group("secret")


def _random(match: re.Match) -> bool:
    text = match.group("secret") if "secret" in match.re.groupindex else match.group(0)
    return _checks.random_looking(text)


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def key_of(match: re.Match) -> Optional[str]:
    """The key of a key-value match: its `key` group, or the name just before the separator."""
    if "key" in match.re.groupindex:
        return match.group("key")
    return key_before(match.string, match.start())


def key_before(text: str, end: int) -> Optional[str]:
    """The name just before text[end] (past spaces and a closing quote), at most 80 characters,
    starting with a letter or "_"."""
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    if end > 0 and text[end - 1] in "\"'":
        end -= 1
    start = end
    while start > 0 and end - start < 80 and text[start - 1] in _KEY_CHARS:
        start -= 1
    while start < end and not (text[start].isalpha() or text[start] == "_"):
        start += 1
    if 0 < start < end and text[start - 1] == "\\" and text[start] in "ntr":
        start += 1  # an escaped line break before the key ("...\\npasswd=..." in a quoted error)
    return text[start:end] or None


def _keyed(match: re.Match) -> bool:
    """A key-value pair whose key names a secret, unless the value is code, a placeholder or one
    word of talk (after a colon: starts with talk), or a PIN that is no 4-12 digits."""
    key = key_of(match)
    if key is None or not _checks.secret_key(key) or _compared(match):
        return False
    group = "secretq" if "secretq" in match.re.groupindex and match.group("secretq") else "secret"
    value, (start, end) = match.group(group), match.span(group)
    if _checks.code(match.string, start, end) or _checks.bare_word(value) or not _pin(key, value):
        return False
    sep = match.group("sep") if "sep" in match.re.groupindex else "="
    return group == "secretq" or sep != ":" or not _checks.talk(value)


def _compared(match: re.Match) -> bool:
    """`token == expected`, `password != other`, `n <= limit`: a comparison, not a value."""
    return _compared_at(match.string, match.start("sep") if "sep" in match.re.groupindex else match.start())


def _compared_at(text: str, at: int) -> bool:
    return at > 0 and text[at - 1] in "=!<>"


_SEPS = re.compile(r"[:=]")


def _keyed_seps(text: str) -> list[int]:
    """Where a separator follows a key that names a secret: the only places where the generic
    key-value rule's match can pass `_keyed`, found without reading any value."""
    return [at for at in (m.start() for m in _SEPS.finditer(text))
            if not _compared_at(text, at) and _checks.secret_key(key_before(text, at) or "")]


_PIN = re.compile(r"\d{4,12}(?!\S)")


def _pin(key: str, value: str) -> bool:
    """A PIN is 4-12 digits ("pin: 3 on the GPIO header" is a pin number, not a PIN)."""
    return not key.lower().endswith("pin") or bool(_PIN.match(value))


def _word_start(match: re.Match) -> bool:
    start = match.start()
    return start == 0 or not match.string[start - 1].isalnum()


_SAID_WORDS = re.compile(r"(?:api[ _-]?key|access[ _-]?key|secret(?:[ _-]?key)?|token|credential|private[ _-]?key"
                         r"|auth[ _-]?token|client[ _-]?secret)s?")


def _said(match: re.Match) -> bool:
    """A random-looking value right after a secret word ("the api key is 7Hq2..."); one of LONG
    characters or more is taken for one whatever it looks like."""
    secret = match.group("secret")
    return (_word_start(match) and bool(_SAID_WORDS.fullmatch(match.group("word").lower()))
            and (len(secret) >= _checks.LONG or _checks.random_looking(secret)))


def _digits(text: str) -> bool:
    return sum(map(text.count, "0123456789")) >= 13


_DOTTED = re.compile(r"\.[\w\-]{6}\.")


def _all(*checks):
    return lambda match: all(check(match) for check in checks)


def _T(match: re.Match) -> bool:
    """A token starts where the match starts: no letter or digit before it ("_" or "=" may be)."""
    start = match.start()
    return start == 0 or not match.string[start - 1].isascii() or not match.string[start - 1].isalnum()


def _W(match: re.Match) -> bool:
    """A word starts where the match starts."""
    start = match.start()
    return start == 0 or not (match.string[start - 1].isalnum() or match.string[start - 1] == "_")


def _no_dot_before(match: re.Match) -> bool:
    return _T(match) and (match.start() == 0 or match.string[match.start() - 1] != ".")


def _flag(match: re.Match) -> bool:
    """A command-line flag: at the start or after white space."""
    return match.start() == 0 or match.string[match.start() - 1].isspace()


_TELEGRAM_ID = re.compile(r"\d{6,12}\Z")


def _telegram(match: re.Match) -> bool:
    """The bot's numeric id (6-12 digits, nothing before them) is part of the token."""
    return bool(_TELEGRAM_ID.search(match.string, max(0, match.start() - 13), match.start()))


# Patterns start with a literal (or one character class) wherever they can: the regular
# expression engine then skips straight to the places where that literal occurs, which is
# faster than any keyword prefilter. The token start is checked after the match (_T).
_VENDOR = [
    _rule("private-key", r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?"
                         r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)", flags=re.S),
    _rule("private-key", r"Private-Lines:\s*\d+\s*(?P<secret>(?:[A-Za-z0-9+/=]{4,}\s*)+)"),
    _rule("private-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", check=_T),
    _rule("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{20,}", check=_T),
    _rule("openai-key", r"sk-[A-Za-z0-9_\-]{16,}", check=_all(_T, _random)),
    _rule("stripe-key", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}", ["k_live_", "k_test_", "k_prod_"], _T),
    _rule("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/_\-=]{16,}", check=_T),
    _rule("github-token", r"gh[pousr]_[A-Za-z0-9]{20,}", check=_T),
    _rule("github-token", r"github_pat_[A-Za-z0-9_]{20,}", check=_T),
    _rule("gitlab-token", r"gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|cbt|ffct|wt)-[A-Za-z0-9_\-.]{19,}[A-Za-z0-9_\-]",
          check=_T),
    _rule("gitlab-token", r"GR1348941[A-Za-z0-9_\-]{20,}", check=_T),
    _rule("docker-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", check=_T),
    _rule("npm-token", r"npm_[A-Za-z0-9]{36}" + _E, check=_T),
    _rule("pypi-token", r"pypi-AgE[A-Za-z0-9_\-]{50,}", check=_T),
    _rule("huggingface-token", r"hf_[A-Za-z0-9]{30,}", check=_T),
    _rule("huggingface-token", r"api_org_[A-Za-z0-9]{30,}", check=_T),
    _rule("slack-token", r"x(?:ox[abposre]-|app-|oxe\.xox[bp]-)[A-Za-z0-9\-]{10,}", check=_T),
    _rule("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_\-]{20,})"),
    _rule("discord-webhook", r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d+/[A-Za-z0-9_\-]{20,})"),
    _rule("discord-token", r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![\w\-])",
          check=_T, precheck=_DOTTED.search),
    _rule("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}", check=_T),
    _rule("telegram-token", r":AA(?<=\d:AA)[A-Za-z0-9_\-]{30,}", check=_telegram),
    _rule("mailgun-key", r"key-[0-9a-zA-Z]{32}" + _E, check=_T),
    _rule("twilio-key", r"[AS][CK](?<=AC|SK)[0-9a-f]{32}" + _E, check=_T,
          precheck=lambda text: "AC" in text or "SK" in text),
    _rule("twilio-auth-token", r"[Tt](?i:wilio)[^\n]{0,60}?(?<![0-9a-zA-Z])(?P<secret>[0-9a-fA-F]{32})(?![0-9a-zA-Z])",
          ["twilio"]),
    _rule("azure-key", r"(?:[Aa]ccount[Kk]ey|[Ss]hared[Aa]ccess(?:[Kk]ey|[Ss]ignature)|[?&;]sig)="
                       r"(?P<secret>[A-Za-z0-9%+/=_\-]{16,})", ["accountkey=", "sharedaccess", "sig="]),
    _rule("vault-token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", check=_T),
    _rule("vault-token", r"s\.[A-Za-z0-9]{24}(?![A-Za-z0-9.])", check=_all(_no_dot_before, _random)),
    _rule("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", check=_T),
    _rule("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}", check=_T),
    _rule("datadog-key", r"[Dd](?i:atadog|d)(?![a-zA-Z])[^\n]{0,40}?(?<![0-9a-zA-Z])(?P<secret>[0-9a-f]{40}|[0-9a-f]{32})"
                         r"(?![0-9a-zA-Z])", ["datadog", "dd"], _T),
    _rule("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", check=_T),
    _rule("google-api-key", r"GOCSPX-[A-Za-z0-9_\-]{28}", check=_T),
    _rule("google-api-key", r"ya29\.[0-9A-Za-z_\-]{20,}", check=_T),
    _rule("aws-access-key", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[0-9A-Z]{16}" + _E, check=_T),
    _rule("aws-secret-key", r"[Aa](?i:ws)[^\n]{0,20}?(?i:secret)[^\n]{0,25}?(?<![A-Za-z0-9/+=])"
                            r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", ["aws"]),
    _rule("api-token", r"(?:dapi[a-f0-9]{32}|lin_api_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}"
                       r"|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|glc_[A-Za-z0-9+/_\-]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"
                       r"|r8_[A-Za-z0-9]{37}|gsk_[A-Za-z0-9]{52}|xai-[A-Za-z0-9]{70,}|pplx-[A-Za-z0-9]{40,}"
                       r"|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43}|HRKU-[A-Za-z0-9_\-]{20,}"
                       r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,})" + _E,
          ["dapi", "lin_api_", "ntn_", "secret_", "pmak-", "glc_", "glsa_", "r8_", "gsk_", "xai-", "pplx-", "sq0",
           "hrku-", "dp."], check=_T),
    _rule("api-token", r"(?<![0-9a-zA-Z])[0-9a-f]{32}-us\d{1,2}" + _E, ["-us"]),
    # a header with no payload after it is taken and refused, so the run is not read again from each "eyJ" in it
    _rule("jwt", r"eyJ[A-Za-z0-9_\-]{8,}+(?P<payload>\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)?",
          check=lambda m: bool(m.group("payload")) and _T(m)),
]

_VALUE = r"(?:(?P<q>[\"'])(?P<secretq>[^\"'\n]+)(?P=q)|(?P<secret>[^\s\"']+))"


def _slashed(match: re.Match) -> bool:
    """A URL password with a slash in it, before @host, unless it is a port and a path (host:8080/a@b)."""
    secret = match.group("secret")
    return bool(match.group("host")) and not secret.split("/", 1)[0].isdigit() and _checks.random_looking(secret)


def _command(names: str) -> str:
    """One of the commands `names`, then its -p flag later on the line. The text between stops
    where one of them starts again, which is tried in its turn (so a long line of them is read
    once, not once per command), and finds the same -p."""
    return rf"(?:{names})(?:(?!{names})[^\n])*?[ \t]-p"


_WEB = [
    _rule("bearer-token", r"[Bb](?i:earer)\s+(?P<secret>[A-Za-z0-9_\-.=~+/]{16,})", ["bearer"], _W),
    _rule("basic-auth", r"[Bb](?i:asic)\s+(?P<secret>[A-Za-z0-9+/_\-]{6,}={0,2})(?![A-Za-z0-9+/_\-=])", ["basic"],
          _all(_W, lambda m: _checks.basic_credentials(m.group("secret")))),
    # base64 of user:password anywhere (Docker's `auth`, npm's `_auth`), in either alphabet (the URL-safe
    # one writes "-" and "_" for "+" and "/"); a run that is a plain word (lower case, Title or CAPITALS:
    # nothing after [A-Z]*[a-z]*) is not decoded
    _rule("basic-auth", r"(?<![A-Za-z0-9+/_\-])(?=[A-Z]*+[a-z]*+[A-Z0-9+/_\-])[A-Za-z0-9+/_\-]{6,}+={0,2}"
                        r"(?![A-Za-z0-9+/_\-=])",
          check=lambda m: _checks.basic_credentials(m.group(0), anywhere=True)),
    _rule("auth-header", r"(?:[Pp]roxy-)?[Aa](?i:uthorization)[\"']?\s*[:=]\s*[\"']?"
                         r"(?:(?i:bearer|basic|token|digest|apikey|key|sso-key|gitlab-token|dsn)\s+)?"
                         r"(?P<secret>[A-Za-z0-9_\-.=~+/:]{8,})", ["authorization"], _W),
    # a flag is tried only where one can start (not again from each "-u" in a run of them)
    _rule("cli-password", r"-(?<!\S-)(?:u|-user|-proxy-user|a|-auth)[\s=]+[\"']?[^\s:\"']*:(?P<secret>[^\s\"']+)"),
    _rule("cli-password", r"--(?:password|passwd|pass|token|secret|api-key)[\s=]+[\"']?(?P<secret>[^\s\"']+)",
          check=_flag),
    _rule("url-password", r"://(?<=[A-Za-z0-9+.\-]://)[^\s/:@]*:(?P<secret>[^\s/@]+(?:@[^\s/@]+)*)@"),
    # (one with no @host after it is taken and refused, so the run is not read again from each "://" in it)
    _rule("url-password", r"://(?<=[A-Za-z0-9+.\-]://)[^\s/:@]*:(?P<secret>[^\s/:@]*/[^\s@]*+)"
                          r"(?P<host>@[\w.\-]+(?=[:/?#\s]|\Z))?", check=_slashed),
    _rule("cli-password", _command(r"sshpass|docker[ \t]+login|podman[ \t]+login|helm[ \t]+registry[ \t]+login")
          + r"[ \t]*" + _VALUE, ["sshpass", "docker", "podman", "helm"]),
    _rule("cli-password", _command(r"mysql|mariadb") + _VALUE, ["mysql", "mariadb"]),
    _rule("password", r"machine[ \t\n]+\S+[ \t\n]+(?:(?:login|account)[ \t\n]+\S+[ \t\n]+)*password[ \t\n]+"
                      r"(?P<secret>\S+)", ["machine"]),
    _rule("url-token", r"://(?<=[A-Za-z0-9+.\-]://)(?P<secret>[A-Za-z0-9_\-.~%]{16,})@", check=_random),
    _rule("secret", r"[?&;]" + _KEY + r"(?P<sep>=)(?P<secret>[^\s&#\"'<>]+)", check=_keyed),
]


def _colons(text: str) -> bool:
    return text.count(":") >= 4


def _pgpass_host(match: re.Match) -> bool:
    """The host before a .pgpass port has a letter, a dot or is `*` (also after "mcp:" or at the end of
    a longer chain): not a time, a MAC or an IPv6 address, nor the uid:gid of an /etc/passwd line."""
    text, end = match.string, match.start()
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.*-"):
        start -= 1
    return any(c.isalpha() or c in ".*" for c in text[start:end])


_LINE = (r"[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?[\"']?" + _KEY + r"[\"']?[ \t]*(?P<sep>:=|=>|=|:)(?!=)[ \t]*"
         r"(?P<secret>[^\s\"'`#](?:[^ \t\n]|[ \t]++(?=[^ \t\n#]))*+)")  # up to " #" or spaces ending the line
# a key-value pair anywhere; its value is read (and checked) up to LONG characters, then masked whole
_INLINE = (r"(?P<sep>:=|=>|=|:)(?!=)[ \t]*(?:(?P<q>[\"'`])(?P<secretq>[^\"'`\n]+)(?P=q)"
           r"|(?P<secret>[^\s,;\"'`<>()\[\]{}]%s))")
_CONFIG = [  # a key at the start of a line (.env, YAML, INI) owns the rest of the line; elsewhere one value
    _rule("secret", r"\A" + _LINE, check=_keyed),
    _rule("secret", r"\n" + _LINE, check=_keyed),
    _rule("secret", _INLINE % f"{{1,{_checks.LONG}}}", check=_keyed, overlapping=True, starts=_keyed_seps,
          whole=_INLINE % "+"),
    # a key at a word's start (not tried again from each letter of a long word), a tab (also JSON's "\t")
    _rule("secret", r"(?<!\w)" + _KEY + r"(?P<sep>(?:\t|\\t)+)(?P<secret>[^\s\"'`\\]+)", ["\t", "\\t"],
          _all(_keyed, _random)),
    _rule("password", r"(?i:passwort|kennwort|mot de passe|contrase(?:ñ|n)a|senha|wachtwoord|has(?:ł|l)o|l(?:ö|o)senord"
                      r"|passord|adgangskode|salasana|пароль)[ \t]*[:=][ \t]*(?P<secret>[^\s\"'`]+)",
          check=lambda m: not _checks.talk(m.group("secret")),
          anchors=("passwort", "kennwort", "mot de passe", "contrase", "senha", "wachtwoord", "hasło", "haslo",
                   "lösenord", "losenord", "passord", "adgangskode", "salasana", "пароль")),
    # a .pgpass line, host:port:database:user:password (the port a number or *), found from its port
    _rule("password", r":(?<=[\w.*\-]:)(?:\d{4,5}|\*):[^\s:'\"\\\[]++:[^\s:'\"\\\[]++:"
                      r"(?P<secret>(?:[^\s:'\"\\]|\\[:\\])++)(?!:)", check=_pgpass_host, precheck=_colons),
    _rule("secret", r"(?i)\b(?:key|name)\s*=\s*[\"']" + _KEY + r"[\"']\s+value\s*=\s*[\"'](?P<secretq>[^\"'\n]+)",
          ["value"], _keyed),
]

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

# a random-looking value right after a secret word, read (and checked) up to LONG characters, then masked whole
_SAID_VALUE = (r"(?P<word>[AaSsTtCcPp](?i:pi[ _-]?key|ccess[ _-]?key|ecret(?:[ _-]?key)?|oken|redential"
               r"|rivate[ _-]?key|uth[ _-]?token|lient[ _-]?secret)(?i:s)?)"
               r"[ \t]*+(?:(?:is|was|:|=|-|,)[ \t]*+)?[\"'`]?(?P<secret>[A-Za-z0-9+/_\-.~]%s={0,2})")
_SAID = [
    _rule("password", r"[Pp](?i:ass(?:word|phrase|code)|in)(?:\s+(?i:for|of|to|on)(?:\s+[\w.\-@']+){1,4}?)?"
                      r"\s+(?i:is|was)(?:\s*+:)?\s++"
                      rf"(?!(?:{'|'.join(NOT_A_PASSWORD)})[.!?:)]*(?:[\s,;]|$))"
                      r"(?!\d+\s+(?:char|digit|letter|symbol|word|byte|long)|\d+-(?:char|digit))(?P<secret>[^\s,;]+)",
          check=_word_start, anchors=("pass", "pin")),
    _rule("secret", _SAID_VALUE % f"{{12,{_checks.LONG}}}", check=_said, whole=_SAID_VALUE % "{12,}",
          anchors=("api", "access", "secret", "token", "credential", "private", "auth", "client")),
    _rule("card-number", r"\d(?<![\w.\-+]\d)(?<!\d[ \-]\d)(?:[ \-]?\d){12,18}(?![\w\-]|\.\d)", (),
          lambda m: _checks.card_number(m.group(0)) and _checks.card_context(m.string, m.start(), m.end()),
          precheck=_digits),
    # four groups of four digits split by dots (4111.1111.1111.1111): not a version, an IP address or a date,
    # whose parts are shorter or fewer, nor a part of a longer dotted run
    _rule("card-number", r"\d(?<![\w.]\d)\d{3}(?:\.\d{4}){3}(?![\w\-]|\.\w)", (),
          lambda m: _checks.card_number(m.group(0)), precheck=_digits),
]

RULES: list[Rule] = [*_VENDOR, *_WEB, *_CONFIG, *_SAID]
