"""The engine a `hermes-cmms` command works on, opened from its --hermes-home."""
from __future__ import annotations


VECTORS_WAIT_S = 30.0  # a command that searches waits this long for the embedder and the index


def _service(args, vectors: bool = False, **overrides):
    """A MemoryService for the command's home, without the background scheduler, whose
    embedder and vector index load only if the command needs them (a write, a drain), or at
    once and waited for with `vectors` (a search: a command, unlike a chat turn, waits for its
    vector ranking); `overrides` beat the settings (e.g. embedder="none")."""
    from ..common.config import Settings
    from ..service import MemoryService

    service = MemoryService(Settings.load(args.hermes_home, **overrides), scheduler=False, start_indexer=False)
    if vectors:
        service.indexer.ready.wait(VECTORS_WAIT_S)
    return service
