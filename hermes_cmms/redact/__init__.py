"""Built-in redactor: secrets never reach the store or the logs.

`redact_text` masks every secret shape of the corpus in `_rules.py` (vendor tokens, PEM private
keys, JWTs, credentials in URLs and HTTP headers, base64 of `user:password`, `.pgpass` lines,
`.env` / YAML / JSON lines whose key names a secret whatever its prefix, card numbers that fit a
network's prefix and length and pass Luhn, random-looking values next to a secret word) as
`[REDACTED:<label>]`, keeping the words around it. `redact_key` does the same for identifiers
(session ids in an import file) with a digest of the secret in the marker, so two different
secrets still give two different, stable keys. The store applies `redact_text` at
its boundary (memory rows, audit rows) and a filter applies it to every `hermes_cmms` log record.

Why a hand corpus and not a library: Yelp's detect-secrets (1.5.0, last released May 2024), the
one well-known Python scanner, was tried. It scans files for findings (it reports a value per
line, with no position in it, and keeps its settings in a process-wide singleton); ad hoc it
takes about 4 ms for one 500-character line (this module: about 90 µs of CPU); its entropy
plugins flag git commit hashes, SHA-256 digests, UUIDs and plain words; and it has no
rule for card numbers, Hugging Face, Anthropic, Vault, Shopify, DigitalOcean, Datadog, Mailgun or
Google keys. gitleaks, the maintained reference rule set, is a Go program, not a library: its
rule shapes and keyword prefilter are what `_rules.py` follows.
"""
from __future__ import annotations

from ..hooks.specs import hookimpl
from ._core import MARKER, redact_key, redact_text  # noqa: F401 - MARKER: re-exported
from ._logs import install_log_filter

__all__ = ["install_log_filter", "redact", "redact_key", "redact_text"]


@hookimpl
def redact(text):
    return redact_text(text)
