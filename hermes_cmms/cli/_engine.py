"""The engine a `hermes-cmms` command works on, opened from its --hermes-home."""
from __future__ import annotations

from ..common.config import Settings

VECTORS_WAIT_S = 30.0  # a command that searches waits this long for the embedder and the index


def _service(args, vectors: bool = False, **overrides):
    """A MemoryService for the command's home, without the background scheduler, whose
    embedder and vector index load only if the command needs them (a write, a drain), or at
    once and waited for with `vectors` (a search: a command, unlike a chat turn, waits for its
    vector ranking); `overrides` beat the settings (e.g. embedder="none")."""
    from ..service import MemoryService

    service = MemoryService(settings_for(args, **overrides), scheduler=False, start_indexer=False)
    if vectors:
        service.wait_vectors(VECTORS_WAIT_S)
    return service


def settings_for(args, **overrides) -> Settings:
    """The command's settings, once it may open the store (store.availability.door_settings):
    a command with a --create option may start a store, the others need one there."""
    from ..service import door_settings

    return door_settings(args.hermes_home, getattr(args, "create", None), **overrides)


def may_create(parser) -> None:
    """Give a command that adds to the store the --create option (see settings_for)."""
    parser.add_argument("--create", action="store_true",
                        help="Start a new store if there is none, even where Hermes has never run.")
