"""rawbm25: a baseline Hermes MemoryProvider. Every message line is stored raw in SQLite FTS5
(porter/unicode61) under $HERMES_HOME/rawbm25/; prefetch ranks lines by bm25() against the
question's words (OR-ed) and packs the best whole lines, dated, into CMMS_RECALL_TOKENS (600).
Installed by benchmarks/baselines/install.py, which copies rawlines.py next to this file."""
from .rawlines import RawLinesProvider


class RawBM25Provider(RawLinesProvider):  # a MemoryProvider
    NAME = "rawbm25"
    DB_NAME = "lines.sqlite"


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(RawBM25Provider())
