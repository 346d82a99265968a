"""rawbge: a baseline Hermes MemoryProvider. As rawhybrid, with bge-small-en-v1.5 int8 (ONNX, CLS
pooling, L2-normalised; rawlines.BgeSmall, its two files put in place once by fetch_bge.py) in
place of MiniLM, queries prefixed with the model's retrieval instruction. Installed by
benchmarks/baselines/install.py."""
from .rawlines import BgeSmall, HybridLinesProvider, bge_dir


class RawBgeProvider(HybridLinesProvider):
    NAME = "rawbge"

    def is_available(self) -> bool:
        return (bge_dir() / "model_quantized.onnx").is_file() and super().is_available()

    def embedder(self):
        return BgeSmall()


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(RawBgeProvider())
