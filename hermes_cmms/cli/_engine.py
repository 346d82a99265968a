"""The engine a `hermes-cmms` command works on, opened from its --hermes-home."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..common.config import Settings

VECTORS_WAIT_S = 30.0  # a command that searches waits this long for the embedder and the index


class _Owner:
    """The default of --scope: the scope the provider gives the owner of the command's home
    (common.scopes.local_scope: local:default, or local:work in the profile `work`), worked out
    once the home is known (owner_default)."""

    def __repr__(self) -> str:
        return "local:<profile>"


OWNER = _Owner()
SCOPE_HELP = ("The scope (default: the Hermes CLI user's of this home, local:<profile>: local:default, "
              "or local:work in the profile work).")


def owner_scope(args) -> str:
    """The scope the provider gives the owner of the command's --hermes-home."""
    from ..common.config import hermes_home
    from ..common.scopes import local_scope

    return local_scope(hermes_home(args.hermes_home))


def owner_default(args) -> None:
    """Put the owner's scope where --scope was left at its default (OWNER); `owner_scoped` says
    it was (`tag` reads a --hermes-home after its id, and then works the default out again)."""
    args.owner_scoped = getattr(args, "scope", None) is OWNER
    if args.owner_scoped:
        args.scope = owner_scope(args)


def _service(args, vectors: bool = False, **overrides):
    """A MemoryService for the command's home, without the background scheduler, whose
    embedder and vector index load only if the command needs them (a write, a drain), or at
    once and waited for with `vectors` (a search: a command, unlike a chat turn, waits for its
    vector ranking; it only reads the index, never embeds what is queued for it); `overrides`
    beat the settings (e.g. embedder="none"). On a terminal, each wait is said (Steps)."""
    steps = Steps(args)
    with steps.step("opening the memory store"):
        from ..service import MemoryService

        service = MemoryService(settings_for(args, **overrides), scheduler=False, start_indexer=False)
    if vectors:
        with steps.step("loading the embedding model and opening the vector index"):
            service.upkeep.wait_vectors(VECTORS_WAIT_S, read_only=True)
    return service


class Steps:
    """What a command is waiting on, said on standard error while it waits: a line a step (a
    tqdm status line with the time it has taken, redrawn in place and cleared when the step
    ends). Nothing when standard error is not a terminal (a pipe, a file: `--json` and scripts
    see nothing) or with --quiet; standard output is never written."""

    TICK_S = 0.25  # how often the line's time is redrawn

    def __init__(self, args=None) -> None:
        import sys

        self.shown = not getattr(args, "quiet", False) and sys.stderr.isatty()

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        if not self.shown:
            yield
            return
        import sys
        import threading

        from tqdm import tqdm

        line = tqdm(total=None, desc=what, bar_format="{desc}… {elapsed}", file=sys.stderr, leave=False)
        done = threading.Event()

        def tick() -> None:  # (tqdm redraws on an update; a step has none to give)
            while not done.wait(self.TICK_S):
                line.refresh()

        ticker = threading.Thread(target=tick, name="cmms-steps", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            line.close()


def storing_only(args) -> dict:
    """The overrides of a command that only stores vectors (`import --wait`, `reindex`): the
    int8 MiniLM memories are stored with alone, without the float32 one queries use (about
    100 MB less), where the embedder chosen is the default ONNX one; else none."""
    from ..common.config import hermes_home

    if Settings.load(hermes_home(args.hermes_home)).embedder not in ("auto", "onnx"):
        return {}
    from ..service import packaged_int8_minilm

    return {"embedder": "onnx:int8"} if packaged_int8_minilm() is not None else {}


def settings_for(args, **overrides) -> Settings:
    """The command's settings, once it may open the store (store.availability.door_settings):
    a command with a --create option may start a store, the others need one there."""
    from ..service import door_settings

    return door_settings(args.hermes_home, getattr(args, "create", None), **overrides)


def may_create(parser) -> None:
    """Give a command that adds to the store the --create option (see settings_for)."""
    parser.add_argument("--create", action="store_true",
                        help="Start a new store if there is none, even where Hermes has never run.")


class VectorBar:
    """A progress bar on standard error (rate and ETA) of the vector index catching up, fed
    the outbox rows left (service.upkeep.drain / reindex's `progress`); none when standard error is
    not a terminal or --quiet is given. Rows queued meanwhile (a second repair pass) add to
    its total."""

    def __init__(self, args, description: str = "indexing") -> None:
        import sys

        self.description, self.left, self.bar = description, None, None
        self.shown = not getattr(args, "quiet", False) and sys.stderr.isatty()

    def __call__(self, left: int) -> None:
        if not self.shown or (self.bar is None and not left):  # nothing to wait for: no bar
            return
        if self.bar is None:
            import sys

            from tqdm import tqdm

            self.bar = tqdm(total=left, desc=self.description, unit=" memories", file=sys.stderr, leave=False)
        elif left > self.left:
            self.bar.total += left - self.left
            self.bar.refresh()
        else:
            self.bar.update(self.left - left)
        self.left = left

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
