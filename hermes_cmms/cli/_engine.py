"""The engine a `hermes-cmms` command works on, opened from its --hermes-home."""
from __future__ import annotations

from ..common.config import Settings, used_by_hermes
from ..common.errors import StoreUnavailable

VECTORS_WAIT_S = 30.0  # a command that searches waits this long for the embedder and the index


def _service(args, vectors: bool = False, **overrides):
    """A MemoryService for the command's home, without the background scheduler, whose
    embedder and vector index load only if the command needs them (a write, a drain), or at
    once and waited for with `vectors` (a search: a command, unlike a chat turn, waits for its
    vector ranking); `overrides` beat the settings (e.g. embedder="none")."""
    from ..service import MemoryService

    service = MemoryService(settings_for(args, **overrides), scheduler=False, start_indexer=False)
    if vectors:
        service.indexer.ready.wait(VECTORS_WAIT_S)
    return service


def settings_for(args, **overrides) -> Settings:
    """The command's settings, once it may open the store: a command that reads (or changes what
    is stored) needs one there; a command that adds to it (one with a --create option) may start
    it in a home Hermes has used, or anywhere with --create. A typo in --hermes-home or
    $HERMES_HOME then creates nothing."""
    from ..store.availability import store_file

    settings = Settings.load(args.hermes_home, **overrides)
    where = store_file(settings)  # None: a database server's, which is there once named
    create = getattr(args, "create", None)  # None: the command has no --create
    if where is None or where.exists() or create:
        return settings
    hermes_ran = used_by_hermes(settings.home)
    if create is None and hermes_ran:  # the right home, before its first chat (as doctor says)
        raise StoreUnavailable(f"No cmms store at {where} yet: Hermes makes it at its first chat with cmms "
                               "(nothing was created).")
    if create is None:
        raise StoreUnavailable(f"No cmms store at {where}; check --hermes-home or $HERMES_HOME "
                               "(nothing was created).")
    if not hermes_ran:
        raise StoreUnavailable(f"No cmms store at {where}, and {settings.home} is not a Hermes home; check "
                               "--hermes-home or $HERMES_HOME, or pass --create to start a new store there.")
    return settings


def may_create(parser) -> None:
    """Give a command that adds to the store the --create option (see settings_for)."""
    parser.add_argument("--create", action="store_true",
                        help="Start a new store if there is none, even where Hermes has never run.")
