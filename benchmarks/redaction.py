"""What the built-in redactor costs: microseconds per call on a typical 500-character turn
(ordinary talk with numbers, a time, a phone number, "password policy" and "key" in it, so the
generic rules do run), on a 10 KB turn of the same talk, on a short audit word, and on each
pasted secret of tests/data/secrets_corpus.json. Each figure is the best of 7 rounds of the
thread's CPU time (so other processes on a busy machine do not inflate it); a fresh
suffix per call keeps the clean-string memo out of it (except for the short word, which is
what the memo is for). With --hostile N, also the CPU seconds for N characters of each hostile
shape below (10000000: the most a memory or a turn holds; docs/redaction.md, "Cost").

    python benchmarks/redaction.py [--hostile N] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import time
import timeit
from pathlib import Path

from hermes_cmms.redact import redact_text

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "secrets_corpus.json"
TURN = ("Yesterday I moved the staging database to the new cluster and updated the config; the "
        "migration took about 40 minutes because the index rebuild on the events table was slow. "
        "Next week we want to try the read replica in eu-west-1, and Dana asked whether the nightly "
        "backup still runs at 02:00 UTC. I told her to check the cron on host db-2, version 2.14.3, "
        "and to ping me at +44 20 7946 0958 if the password policy blocks her login again. Also: "
        "the ferns need water on Sunday, and the key to the shed is in the blue box.")[:500]


# Shapes that made a rule read the same stretch again from many places (see tests/engine/test_redact.py).
HOSTILE = ["pin:", "$TOKEN:", "password:'x", "\npassword: x", "a:", "secret_"]


def hostile_s(chars: int) -> dict:
    """CPU seconds to redact `chars` characters of each hostile shape."""
    figures = {}
    for unit in HOSTILE:
        text = unit * (chars // len(unit))
        start = time.thread_time()
        redact_text(text)
        figures[unit] = round(time.thread_time() - start, 2)
    return figures


def per_call_us(texts: list[str], rounds: int = 7) -> float:
    """Best-of-`rounds` microseconds per redact_text call over `texts`, each made unique."""
    counter = iter(range(10**9))

    def once():
        for text in texts:
            redact_text(f"{text} {next(counter)}")
    return min(timeit.repeat(once, number=1, repeat=rounds, timer=time.thread_time)) / len(texts) * 1e6


def measure() -> dict:
    secrets = [entry["text"] for entry in json.loads(CORPUS.read_text())["secrets"]]
    big = ((TURN + " ") * 21)[:10_240]
    word = min(timeit.repeat(lambda: redact_text("active"), number=10_000, repeat=7, timer=time.thread_time)) / 10_000 * 1e6
    return {"turn_500_chars_us": round(per_call_us([TURN] * 300), 1),
            "turn_10kb_us": round(per_call_us([big] * 20), 1),
            "short_word_us": round(word, 2),
            "corpus_entry_us": round(per_call_us(secrets), 1), "corpus_entries": len(secrets)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile", type=int, metavar="N", help="Also time N characters of each hostile shape.")
    parser.add_argument("--json", help="Also write the figures to this file.")
    args = parser.parse_args(argv)
    figures = measure()
    if args.hostile:
        figures["hostile_s"] = hostile_s(args.hostile)
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
