"""The engine a `hermes-cmms` command works on, opened from its --hermes-home."""
from __future__ import annotations


def _service(args, **overrides):
    """A MemoryService for the command's home, without the background scheduler, whose
    embedder and vector index load only if the command needs them (a search, a write, a
    drain); `overrides` beat the settings (e.g. embedder="none")."""
    from ..common.config import Settings
    from ..service import MemoryService

    return MemoryService(Settings.load(args.hermes_home, **overrides), scheduler=False, start_indexer=False)
