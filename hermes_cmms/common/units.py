"""A memory's sentences, each embedded on its own: a question matches the one sentence that
answers it better than a whole message about several things (LoCoMo dev: ev_key +0.013,
multi-hop +0.03; docs/benchmarks.md). A transcript line keeps its speaker on every sentence."""
from __future__ import annotations

import math
import re

from .text import SPEAKER

MAX_UNITS = 12  # a long memory's sentences are grouped into this many runs at most
MIN_CHARS = 4  # "Ok." alone says nothing to search for
MAX_CHARS = 24_000  # of a long memory, the sentences this far in (recall looks for matches as far)
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def units(text: str) -> list[str]:
    """The sentences of `text` (its first MAX_CHARS) to embed one by one (runs of them in a long
    text); [] when the text is one sentence, whose vector is the memory's own."""
    text = text[:MAX_CHARS]
    found = SPEAKER.match(text)
    prefix, body = (found.group(0), text[found.end():]) if found else ("", text)
    sentences = [x.strip() for x in SENTENCE_BREAK.split(" ".join(body.split())) if len(x.strip()) >= MIN_CHARS]
    if len(sentences) < 2:
        return []
    size = math.ceil(len(sentences) / MAX_UNITS)
    return [prefix + " ".join(sentences[i:i + size]) for i in range(0, len(sentences), size)]
