"""The doors in this test process: `hermes-cmms` through `main(argv)` and the MCP bridge through
an in-memory client session against the real server object. The same code a user's command or
client reaches, without a process launch (imports and the embedding model are loaded once per
test process). Each door also has a few end-to-end tests that launch it as a user does."""
from __future__ import annotations

import io
import logging
import os
import sys
import warnings
from contextlib import asynccontextmanager, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, TextIO, Union


@dataclass
class Ran:
    """What a command left: its exit code and what it printed (as subprocess.run's result)."""
    args: list
    returncode: int
    stdout: str
    stderr: str


@contextmanager
def environment(changes: Optional[dict]) -> Iterator[None]:
    """os.environ with `changes` (a None value removes the name), as it was afterwards."""
    saved = {name: os.environ.get(name) for name in (changes or {})}
    try:
        for name, value in (changes or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Output(io.TextIOWrapper):
    """A text stream with a bytes `.buffer`, like sys.stdout (export writes bytes there)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)  # strict, as a UTF-8 terminal

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8")


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextmanager
def _as_its_own_process() -> Iterator[None]:
    """Log records and warnings reach standard error as in a process of its own, which configures
    no logging: Python's last-resort handler (WARNING and up) and the default warning filters.
    pytest's capture of both is set aside meanwhile."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers, root.level = [], logging.WARNING
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", quiet)
            warnings.showwarning = _print_warning
            yield
    finally:
        root.handlers, root.level = handlers, level


def cli(home: Optional[Union[str, Path]], *args: str, stdin: Union[str, bytes, None] = None,
        env: Optional[dict] = None, stderr: Optional[TextIO] = None) -> Ran:
    """`hermes-cmms ARGS` run in this process with HERMES_HOME=home (and `env`), on `stdin`;
    standard error captured, or `stderr` when given (a terminal, say: Ran.stderr is then "")."""
    from hermes_cmms.cli import main

    argv = [str(a) for a in args]
    data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
    out, err = _Output(), _Output()
    fake_in = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    changes = {**({"HERMES_HOME": str(home)} if home is not None else {}), **(env or {})}
    saved_in = sys.stdin
    with environment(changes), redirect_stdout(out), redirect_stderr(stderr or err), _as_its_own_process():
        sys.stdin = fake_in
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help; as the interpreter exits
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        finally:
            sys.stdin = saved_in
    return Ran(["hermes-cmms", *argv], code, out.text(), err.text())


@asynccontextmanager
async def memory_bridge(home, *extra: str, env: Optional[dict] = None):
    """A client session of the MCP bridge `hermes-cmms mcp [--scope S]` would serve for `home`,
    connected in memory to the real server object (mcp 1.x and 2.x alike)."""
    import anyio
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from hermes_cmms.common.config import Settings
    from hermes_cmms.mcp_bridge.server import lowlevel, served
    from hermes_cmms.service import MemoryService
    from mcp_client import Bridge

    scope = None
    rest = list(extra)
    if "--scope" in rest:
        scope = rest[rest.index("--scope") + 1]
        del rest[rest.index("--scope"):rest.index("--scope") + 2]
    assert not rest, f"memory_bridge takes only --scope, not {rest}"
    with environment({"HERMES_HOME": str(home), **(env or {})}):
        service = MemoryService(Settings.load(str(home)))
        try:
            inner = lowlevel(served(service, str(home), scope))
            async with create_client_server_memory_streams() as (client_streams, server_streams):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(lambda: inner.run(*server_streams, inner.create_initialization_options()))
                    try:
                        async with ClientSession(*client_streams) as session:
                            yield Bridge(session, await session.initialize())
                    finally:
                        tasks.cancel_scope.cancel()
        finally:
            service.close(drain_timeout=2.0)
