"""The Engine: the parts every feature is handed, and `open_engine`, which builds them for the facade."""
from __future__ import annotations

from concurrent.futures import Executor
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

import pluggy

from .common.config import Settings
from .store.store import Store
from .vectors.indexer import Indexer

# The question is embedded and the vector views queried on a worker thread while the keyword
# rankings run: ONNX Runtime, Chroma and SQLite all release the GIL, so on two cores the
# vector half costs little wall time beside the keyword half. A few workers, for a gateway
# whose users ask at the same time.
VECTOR_WORKERS = 4


@dataclass
class Engine:
    """Settings, plugin manager, store, vector indexer and the query thread pool of one service.

    `in_hermes` is set by the Hermes provider (Hermes' own model can be asked); `summariser`
    writes consolidation's summaries with an LLM (None: extractive); `service` is the facade,
    only for firing the hooks whose contract passes `service=` (docs/hooks.md); `recalled` is set
    once the service has made a recall block (the scheduler's first jobs wait for the first).
    """

    settings: Settings
    pm: pluggy.PluginManager
    store: Store
    indexer: Indexer
    pool: Executor
    in_hermes: bool = False
    summariser: Any = None
    service: Any = None
    recalled: threading.Event = field(default_factory=threading.Event)  # set by the first recall


def open_engine(settings: Settings, pm: pluggy.PluginManager, start_indexer: bool = True,
                service: Any = None) -> Engine:
    """The parts of one service, built: the store, the vector indexer (its embedder and index
    loaded on its own thread; with `start_indexer` False only when something first needs them)
    and the query pool; a service that will recall gets the token counter ready before its
    first block."""
    from .common import tokens

    store = Store(settings.database_url)
    owner = store.identity() if settings.chroma_url else None  # (read now: a blip later costs no vectors)
    home = store.location() if settings.chroma_url else None
    indexer = Indexer(store, lambda: _embedder(settings), lambda: _vector_index(settings, owner, home),
                      lock_path=settings.data_dir / "indexer.lock", start=start_indexer, threads=settings.threads)
    engine = Engine(settings, pm, store, indexer, settings.threads.pool(VECTOR_WORKERS, "cmms-query"),
                    service=service)
    if start_indexer:
        engine.pool.submit(tokens.encoding)
    return engine


def _embedder(settings: Settings):
    """The configured embedder, loaded on the indexer thread (embedders brings numpy and the model)."""
    from .vectors.embedders import load_embedder

    return load_embedder(settings.embedder, settings.embedder_dtype)


def _vector_index(settings: Settings, owner: Optional[str], home: Optional[str]):
    """The vector index of the store `owner` (its id) living at `home` (Store.location), opened on
    the indexer thread (Chroma's client loads on first use; a server's database must be this
    store's, and not a copy's elsewhere)."""
    from .vectors.chroma import VectorIndex

    return VectorIndex(settings, owner=owner, home=home)
