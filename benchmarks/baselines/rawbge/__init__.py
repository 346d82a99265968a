"""rawbge: a baseline Hermes MemoryProvider. As rawhybrid, with bge-small-en-v1.5 int8 (ONNX, CLS
pooling, L2-normalised; hermes_cmms.vectors.embedders.load_embedder("bge-small"), its files put in
place once by `hermes-cmms embedder fetch bge-small`) in place of MiniLM, queries prefixed with
the model's retrieval instruction. Installed by benchmarks/baselines/install.py."""
from .rawlines import HybridLinesProvider

QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


class RawBgeProvider(HybridLinesProvider):
    NAME = "rawbge"
    EMBEDDER = "bge-small"

    def initialize(self, session_id: str, **kwargs) -> None:
        super().initialize(session_id, **kwargs)
        embed = self._embedder.embed
        self._embedder = type("Prefixed", (), {"embed": staticmethod(embed), "embed_query": staticmethod(
            lambda texts: embed([QUERY_PREFIX + t for t in texts]))})()


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(RawBgeProvider())
