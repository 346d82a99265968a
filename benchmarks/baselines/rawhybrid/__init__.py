"""rawhybrid: a baseline Hermes MemoryProvider. As rawbm25, plus an all-MiniLM-L6-v2 vector per
line (loaded offline by hermes_cmms.vectors.embedders.load_embedder("auto"), never downloaded); prefetch
fuses the BM25 ranking with the cosine ranking over all lines by reciprocal rank (k=60).
Installed by benchmarks/baselines/install.py, which copies rawlines.py next to this file."""
import threading
from typing import List, Optional

import numpy as np

from .rawlines import CANDIDATES, RawLinesProvider, rrf


class RawHybridProvider(RawLinesProvider):  # a MemoryProvider
    NAME = "rawhybrid"
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
            from hermes_cmms.vectors.embedders import packaged_minilm_path, chroma_onnx_on_disk
        except ImportError:
            return False
        return super().is_available() and (packaged_minilm_path() is not None or chroma_onnx_on_disk())

    def initialize(self, session_id: str, **kwargs) -> None:
        super().initialize(session_id, **kwargs)
        from hermes_cmms.vectors.embedders import load_embedder
        self._embedder = load_embedder("auto")
        if self._embedder is None:
            raise RuntimeError("rawhybrid: no offline all-MiniLM-L6-v2 (install hermes-cmms[local-model])")
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
        q = np.asarray(self._embedder.embed([query])[0], dtype=np.float32)
        sims = matrix @ q  # vectors are normalised: the dot product is the cosine
        n = min(CANDIDATES, len(ids))
        top = np.argpartition(-sims, n - 1)[:n]
        return [ids[j] for j in top[np.argsort(-sims[top])]]

    def ranking(self, query: str) -> List[int]:
        return rrf(self.bm25_ranking(query), self.dense_ranking(query))


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(RawHybridProvider())
