"""rawhybrid: a baseline Hermes MemoryProvider. As rawbm25, plus an all-MiniLM-L6-v2 vector per
line (loaded offline by hermes_cmms.vectors.embedders.load_embedder("auto"), never downloaded); prefetch
fuses the BM25 ranking with the cosine ranking over all lines by reciprocal rank (k=60).
Installed by benchmarks/baselines/install.py, which copies rawlines.py next to this file."""
from .rawlines import HybridLinesProvider


class RawHybridProvider(HybridLinesProvider):
    NAME = "rawhybrid"


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(RawHybridProvider())
