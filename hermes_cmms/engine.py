"""The Engine: the parts every feature is handed (the facade in service.py builds it)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pluggy

from .common.config import Settings
from .store.store import Store
from .vectors.indexer import Indexer


@dataclass
class Engine:
    """Settings, plugin manager, store, vector indexer and the query thread pool of one service.

    `in_hermes` is set by the Hermes provider (Hermes' own model can be asked); `summariser`
    writes consolidation's summaries with an LLM (None: extractive); `service` is the facade,
    only for firing the hooks whose contract passes `service=` (docs/hooks.md).
    """

    settings: Settings
    pm: pluggy.PluginManager
    store: Store
    indexer: Indexer
    pool: ThreadPoolExecutor
    in_hermes: bool = False
    summariser: Any = None
    service: Any = None
