"""The Chroma vector index (derived data): one collection per scope, vectors computed by us."""
from __future__ import annotations

import hashlib
import threading
from typing import Iterator, Sequence
from urllib.parse import urlparse

from .config import Settings

SPACE = {"hnsw:space": "cosine"}


VIEWS = {"content": "cmms_", "context": "cmmsc_"}  # what was embedded: the text, or it in context


def collection_name(scope: str, view: str = "content") -> str:
    """A Chroma-safe, fixed-length collection name for a scope and view."""
    return VIEWS[view] + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:40]


class VectorIndex:
    """Upsert, delete and query vectors of one store, isolated per scope."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._collections: dict[str, object] = {}
        self._lock = threading.Lock()
        self.embedded = not settings.chroma_url
        self.client = self._connect()

    def _connect(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        settings = self._settings
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if settings.chroma_url:
            url = urlparse(settings.chroma_url)
            self.client = chromadb.HttpClient(host=url.hostname or "127.0.0.1", port=url.port or 8000,
                                              ssl=url.scheme == "https", settings=chroma_settings)
            self.location = settings.chroma_url
        else:
            settings.chroma_path.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(settings.chroma_path),
                                                    settings=chroma_settings)
            self.location = str(settings.chroma_path)
        return self.client

    def reopen(self) -> None:
        """Drop the embedded client and open a new one, which reads the index from disk again
        (an open client never sees vectors another process added)."""
        with self._lock:
            old, self._collections = self.client, {}
            old.close()
            self.client = self._connect()

    def _collection(self, scope: str, create: bool, view: str = "content"):
        name = collection_name(scope, view)
        with self._lock:
            if name not in self._collections:
                if create:
                    self._collections[name] = self.client.get_or_create_collection(
                        name, embedding_function=None, metadata=SPACE)
                else:
                    try:
                        self._collections[name] = self.client.get_collection(name, embedding_function=None)
                    except Exception:  # noqa: BLE001 - chroma raises several types for "missing"
                        return None
            return self._collections[name]

    def _retrying(self, operation):
        """Run `operation()`; if the client was re-opened under it (another thread's refresh),
        run it once more on the new client."""
        client = self.client
        try:
            return operation()
        except Exception:
            with self._lock:  # wait out a re-open in progress
                pass
            if self.client is client:
                raise
            return operation()

    def upsert(self, scope: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[dict], view: str = "content") -> None:
        self._retrying(lambda: self._collection(scope, create=True, view=view).upsert(
            ids=list(ids), embeddings=[list(v) for v in vectors], metadatas=list(metadatas)))

    def get(self, scope: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """The content-view vectors stored for `ids` (those that exist)."""
        def get():
            collection = self._collection(scope, create=False)
            if collection is None or not ids:
                return {}
            found = collection.get(ids=list(ids), include=["embeddings"])
            return {i: list(map(float, v)) for i, v in zip(found["ids"], found["embeddings"])}
        return self._retrying(get)

    def delete(self, scope: str, ids: Sequence[str]) -> None:
        """Remove the ids from every view of the scope."""
        def delete():
            for view in VIEWS:
                collection = self._collection(scope, create=False, view=view)
                if collection is not None and ids:
                    collection.delete(ids=list(ids))
        self._retrying(delete)

    def query(self, scope: str, vector: Sequence[float], limit: int,
              view: str = "content") -> list[tuple[str, float]]:
        """(memory id, cosine similarity) pairs, most similar first."""
        return self.query_many(scope, [vector], limit, view)[0]

    def query_many(self, scope: str, vectors: Sequence[Sequence[float]], limit: int,
                   view: str = "content") -> list[list[tuple[str, float]]]:
        """`query` for many vectors in one call: a list of (id, similarity) lists, in order."""
        def query():
            collection = self._collection(scope, create=False, view=view)
            if collection is None or not vectors:
                return [[] for _ in vectors]
            found = collection.query(query_embeddings=[list(v) for v in vectors], n_results=limit,
                                     include=["distances"])
            return [[(i, 1.0 - d) for i, d in zip(ids, distances)]
                    for ids, distances in zip(found["ids"], found["distances"])]
        return self._retrying(query)

    def present(self, scope: str, ids: Sequence[str], view: str = "content") -> set[str]:
        """Which of `ids` have a vector in the scope's `view` (for the audit)."""
        def present():
            collection = self._collection(scope, create=False, view=view)
            if collection is None or not ids:
                return set()
            return set(collection.get(ids=list(ids), include=[])["ids"])
        return self._retrying(present)

    def ids(self, scope: str, view: str = "content", batch: int = 1000) -> Iterator[list[str]]:
        """Every id in the scope's `view`, a page at a time (for the audit; a page may shift
        while the index is written)."""
        offset = 0
        while page := self._retrying(lambda: self._page(scope, view, batch, offset)):
            yield page
            offset += len(page)

    def _page(self, scope: str, view: str, limit: int, offset: int) -> list[str]:
        collection = self._collection(scope, create=False, view=view)
        return collection.get(include=[], limit=limit, offset=offset)["ids"] if collection is not None else []

    def collection_counts(self) -> dict[str, int]:
        """Vectors per collection of every view and scope (for the audit)."""
        prefixes = tuple(VIEWS.values())
        return self._retrying(lambda: {c.name: c.count() for c in self.client.list_collections()
                                       if c.name.startswith(prefixes)})

    def count(self) -> int:
        """Vectors of the content view (one per indexed memory)."""
        return self._retrying(lambda: sum(c.count() for c in self.client.list_collections()
                                          if c.name.startswith("cmms_")))
