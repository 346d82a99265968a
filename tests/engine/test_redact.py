"""Secrets are redacted before anything is stored; ordinary text is stored as written."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.redact import redact_key, redact_text

from db import dump, keyword_rows, on_postgres, shares_a_lexeme, sql

SCOPE = "test:redact"

# (label, text, secret): `secret` must not survive anywhere in the database files.
SECRETS = [
    ("openai-key", "staging key sk-proj-Ab12Cd34Ef56Gh78Ij90KlMnOp for the deploy", "Ab12Cd34Ef56Gh78Ij90KlMnOp"),
    ("openai-key", "OPENAI_API_KEY=sk-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"),
    ("github-token", "use ghp_AbCdEf0123456789GhIjKlMnOpQrStUvWx12 to push", "AbCdEf0123456789GhIjKlMnOpQrStUvWx12"),
    ("github-token", "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz expires Friday",
     "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    ("aws-access-key", "the access key id is AKIAQ3EGTWXMPLZ7RK4N in us-east-1", "AKIAQ3EGTWXMPLZ7RK4N"),
    ("aws-secret-key", "aws_secret_access_key = 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",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lm2Pq8T"),
    ("aws-secret-key", "my aws secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lm2Pq8T ok",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lm2Pq8T"),
    ("bearer-token", 'curl -H "Authorization: Bearer a8f5f167f44f4964e6c998dee827110c" https://api',
     "a8f5f167f44f4964e6c998dee827110c"),
    ("private-key", "here it is\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
     "\nQyNTUxOQAAACDx7Kp\n-----END OPENSSH PRIVATE KEY-----\nthanks", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("private-key", "my deploy key -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQ (pasted half)",
     "MIIEowIBAAKCAQEAq7BFUpkGp3"),
    ("password", "db settings: password=Hunter2Hunter2 host=db1", "Hunter2Hunter2"),
    ("password", 'PASSWORD: "correct horse battery staple"', "correct horse battery staple"),
    ("password", "My password is Tr0ub4dor&3, don't tell anyone", "Tr0ub4dor&3"),
    ("password", "the wifi passphrase was: zebra-mango-91", "zebra-mango-91"),
    ("jwt", "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P"),
    ("slack-token", "bot token xoxb-2048-1234567890-AbCdEfGhIjKl", "1234567890-AbCdEfGhIjKl"),
    ("url-password", "DATABASE_URL=postgres://app:s3cr3tPw0rd@db.internal:5432/app", "s3cr3tPw0rd"),
    # card numbers in dotted groups, as some forms and European receipts write them (Luhn-valid test numbers)
    ("card-number", "my card is 4111.1111.1111.1111.", "4111.1111.1111.1111"),
    ("card-number", "pay with 5425.2334.3010.9903 (exp 04/29)", "5425.2334.3010.9903"),
    # base64 of user:password in the URL-safe alphabet ("-" and "_" for "+" and "/"), as a Docker auth and
    # after "Basic": base64.urlsafe_b64encode(b"admin:p>?~x>>") and (b"deploy:k?~>Zr")
    ("basic-auth", '{"auths": {"ghcr.io": {"auth": "YWRtaW46cD4_fng-Pg=="}}}', "fng-Pg"),
    ("basic-auth", "Authorization: Basic ZGVwbG95Oms_fj5acg==", "ZGVwbG95Oms_fj5acg"),
    # a Svix/Stripe-style webhook secret whose base64 is URL-safe
    ("stripe-webhook-secret", "WEBHOOK whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La-_Sw9x", "-_Sw9x"),
]

ORDINARY = [
    "I know the template is temporary",
    "skip this",
    "the password field is empty",
    "The password is incorrect, please reset it",
    "Your password was changed yesterday",
    "The password policy requires 12 characters",
    "task-based scheduling is the approach we picked",
    "He is the bearer of good news",
    "Bearer tokens go in the Authorization header",
    "Use the AWS console in eu-west-1",
    "See https://example.com/docs:intro for details",
    "Ask about the secret ingredient: nutmeg",
    "ratio 3:2, sk-8 is a shoe size",
    # dotted numbers that are no card: versions, IP addresses, dates, a Luhn failure, a longer dotted run
    "upgrade to 4.1.1111.1111 then 10.4.2.1",
    "the host at 192.168.100.200 and 10.0.0.1",
    "released 2024.01.15, tagged 2024.0115.1230.4567",
    "order 4111.1111.1111.1112 shipped",
    "oid 4111.1111.1111.1111.2222 and 1.4111.1111.1111.1111",
    # URL-safe alphabet that is no credential: hyphenated and snake_case words, UUIDs, slugs
    "a state-of-the-art well-known_thing, snake_case_identifier_name",
    "run 0733759b-3297-4675-aa05-6cc9ba31b0b0 and 123e4567-e89b-12d3-a456-426614174000",
    "see docs/how-to_set-up-the-CI_pipeline-v2 and a1b2-c3d4-e5f6",
]


def _db_bytes(home: Path) -> bytes:
    data = home / "cmms"
    return b"".join(p.read_bytes() for p in data.glob("cmms.db*"))


def _sql(home: Path, query: str, *params) -> list:
    return sql(home, query, *params)


def _stored_nowhere(home: Path, secret: str) -> bool:
    """No trace of `secret` in the store. SQLite: not in the bytes of its files (no page, no
    shadow table, no WAL frame). PostgreSQL: not in any row of any table, nor (in any case) in
    the tsvector columns."""
    everything = dump(home)
    if secret in everything or secret.lower() in everything.lower():
        return False
    if on_postgres(home):
        return True
    return secret.encode() not in _db_bytes(home)


@pytest.mark.parametrize("label,text,secret", SECRETS, ids=[f"{s[0]}-{i}" for i, s in enumerate(SECRETS)])
def test_secret_is_redacted_before_storage(keyword_service, home, label, text, secret):
    memory_id = keyword_service.remember(SCOPE, text)
    stored = keyword_service.store.get([memory_id], SCOPE)[memory_id].content
    assert secret not in stored
    assert f"[REDACTED:{label}]" in stored
    assert [secret in content for (content,) in _sql(home, "SELECT content FROM memories")] == [False]
    indexed = keyword_rows(home)  # the keyword index: FTS5 rows / the tsvector columns
    assert len(indexed) == 1 and not any(secret.lower() in (column or "").lower() for column in indexed[0])
    if on_postgres(home):  # not one word of it reached the index
        assert shares_a_lexeme(home, secret) == 0
    assert _stored_nowhere(home, secret)


@pytest.mark.parametrize("text", ["sk-proj-Ab12Cd34Ef56Gh78Ij90KlMnOp",
                                  "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQ"])
@pytest.mark.quick
def test_a_text_that_is_only_a_secret_is_not_admitted(keyword_service, home, text):
    with pytest.raises(InvalidInput, match="Nothing is left to remember once secrets are removed"):
        keyword_service.remember(SCOPE, text)
    assert keyword_service.retain_turn(SCOPE, "s1", text, "") == []
    assert _sql(home, "SELECT count(*) FROM memories") == [(0,)]


@pytest.mark.quick
def test_redaction_keeps_the_words_around_the_secret(keyword_service):
    memory_id = keyword_service.remember(SCOPE, "staging key sk-proj-Ab12Cd34Ef56Gh78Ij90KlMnOp for the deploy")
    stored = keyword_service.store.get([memory_id], SCOPE)[memory_id].content
    assert stored == "staging key [REDACTED:openai-key] for the deploy"
    assert [h.id for h in keyword_service.search(SCOPE, "staging deploy")] == [memory_id]


def test_turns_tags_and_every_role_are_redacted(keyword_service, home):
    ids = keyword_service.retain_turn(SCOPE, "s1", "my password is Hunter2Hunter2",
                                      "Saved; your token ghp_AbCdEf0123456789GhIjKlMnOpQrStUvWx12 too")
    rows = keyword_service.store.get(ids, SCOPE)
    assert sorted(m.content for m in rows.values()) == [
        "Saved; your token [REDACTED:github-token] too", "my password is [REDACTED:password]"]
    note = keyword_service.remember(SCOPE, "deploy notes", tags=["prod", "password=Hunter2Hunter2"])
    assert json.loads(keyword_service.store.get([note], SCOPE)[note].tags) == [
        "prod", "password=[REDACTED:password]"]
    assert _stored_nowhere(home, "Hunter2Hunter2") and _stored_nowhere(home, "GhIjKlMnOpQrStUvWx12")


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_stored_unchanged(keyword_service, text):
    memory_id = keyword_service.remember(SCOPE, text)
    assert keyword_service.store.get([memory_id], SCOPE)[memory_id].content == text


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_passes_the_redactor_unchanged(text):
    assert redact_text(text) == text


# Text shaped to make a rule read far from many places, each one the shape of a path that once
# cost time growing with the square of the text's length: (before, repeated unit, after).
HOSTILE = [
    ("", "a:", ""),  # a separator after every key that names no secret
    ("", "pin:", ""),  # a secret key before every refused value
    ("", "$TOKEN:", ""),  # a secret key before every placeholder
    ("", "a://a:/", ""),  # a URL with no @host, again and again
    ("", "eyJ_", ""),  # a JWT header with no payload
    ("", "-u=a", ""),
    ("", "mysql", ""),
    ("", "sshpass", ""),
    ("", "secret_", ""),
    ("", "pin is 1 ", ""),  # many anchor words, each one masked
    ("", "a", "\t"),  # a word before a tab, read from each of its letters
    ("password is", " ", ","),  # white space, split every way
    ("token", " ", "!"),
    ("\npassword: x", " ", "y"),
    ("", "4111.", ""),  # dotted groups of digits, one long run
    ("", "Zm9v-_", ""),  # URL-safe base64, one long run
    ("", "ab-c ", ""),  # many short hyphenated runs, each decoded
]


def _cpu_seconds(text: str) -> float:
    """The best of three runs' CPU time of this thread (other processes do not count)."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        redact_text(text)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("before,unit,after", HOSTILE, ids=[repr(before + unit) for before, unit, _ in HOSTILE])
def test_redacting_hostile_text_costs_time_in_proportion_to_its_length(before, unit, after):
    """Eight times the text costs about eight times the time (20 allows for noise); a cost growing
    with the square of the length would be about 64 times."""
    times = [_cpu_seconds(before + unit * (size // len(unit)) + after) for size in (8_000, 64_000)]
    assert times[1] < 20 * max(times[0], 1e-4), times


def test_a_long_value_is_masked_whole():
    """A rule that reads a value only so far masks all of it, and the key of a redacted id tells
    apart two long values that differ only at the end."""
    long = "Zq8Lm2Nx7Rt4Vw9Ky3Pb6Hd5Jf1Gs0Ac" * 20
    assert redact_text(f"db: password={long}z rest") == "db: password=[REDACTED:password] rest"
    assert redact_text(f"the api key is {long}z, keep it") == "the api key is [REDACTED:secret], keep it"
    assert redact_key(f"db: password={long}a") != redact_key(f"db: password={long}b")
    # read only so far, a value of 200 characters or more is never taken for code
    assert redact_text("db: password=" + "a." * 100 + "b rest") == "db: password=[REDACTED:password] rest"
    assert redact_text("db: password=settings.db.password rest") == "db: password=settings.db.password rest"


def test_a_value_inside_a_long_refused_value_is_still_found():
    """The generic rule skips separators whose key names no secret, and reads a refused value only
    so far, yet still finds a pair inside it."""
    assert redact_text("pin:" + "x" * 500 + "password=hunter2") == "pin:" + "x" * 500 + "password=[REDACTED:password]"
    assert redact_text("a:" * 5000 + "token=Zq8Lm2Nx") == "a:" * 5000 + "token=[REDACTED:secret]"


def test_only_a_marker_as_redaction_writes_it_is_skipped():
    """Redacting twice changes nothing, but a "[REDACTED:" typed long before a secret hides nothing
    (a marker is a few dozen characters; looking further back for one cost time too)."""
    token = "ghp_AbCdEf0123456789GhIjKlMnOpQrStUvWx12"
    once = redact_text(f"push with {token}")
    assert redact_text(once) == once == "push with [REDACTED:github-token]"
    assert redact_text(f"[REDACTED: see below {'-' * 60} {token}]") == \
        f"[REDACTED: see below {'-' * 60} [REDACTED:github-token]]"


@pytest.mark.quick
def test_dotted_cards_and_url_safe_credentials_are_not_found_by_search(keyword_service, home):
    """A dotted card number and a URL-safe base64 `user:password` remembered are masked whole:
    a search for them finds the words around them, never the raw value."""
    memory_id = keyword_service.remember(
        SCOPE, "billing card 4111.1111.1111.1111 and registry auth YWRtaW46cD4_fng-Pg== for ghcr")
    stored = keyword_service.store.get([memory_id], SCOPE)[memory_id].content
    assert stored == "billing card [REDACTED:card-number] and registry auth [REDACTED:basic-auth] for ghcr"
    assert [h.id for h in keyword_service.search(SCOPE, "billing registry")] == [memory_id]
    assert keyword_service.search(SCOPE, "4111") == [] and keyword_service.search(SCOPE, "fng") == []
    assert _stored_nowhere(home, "4111.1111.1111.1111") and _stored_nowhere(home, "YWRtaW46cD4")


@pytest.mark.quick
def test_the_two_base64_alphabets_mixed_are_no_credential():
    """base64 of user:password in one alphabet is masked; a run mixing "+" or "/" with "-" or "_" is
    no encoder's output and is kept."""
    assert redact_text("auth dXNlcjpzM2Nyfn50Pz8= ok") == "auth [REDACTED:basic-auth] ok"
    assert redact_text("auth YWRtaW46cD4/fng-Pg== ok") == "auth YWRtaW46cD4/fng-Pg== ok"
    assert redact_text("x glc_eyJvIjoiMTIzNDU2Iiwibi-_I6InN0YWNrLWFwaSIsImsiOiJ y") == "x [REDACTED:api-token] y"
