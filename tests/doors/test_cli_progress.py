"""The long commands that wait for the vector index (`reindex`, `import --wait`) show a progress
bar with its rate on a terminal, and none when standard error is a file or pipe: real processes on
a real pseudo-terminal, a real store and the default embedder. No timing is asserted."""
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conftest import terminal_output
from db import scalar
from inprocess import cli

CLI = str(Path(sys.executable).with_name("hermes-cmms"))
IMPORTS = Path(__file__).parents[1] / "data" / "imports"
CHATGPT = IMPORTS / "chatgpt" / "conversations.json"
MEMORY_JSON = IMPORTS / "memory-json" / "memory.json"


def _on_terminal(home, *args) -> tuple[int, str, str]:
    """`hermes-cmms ARGS` with standard error on a pseudo-terminal (standard output a pipe): its
    exit code, standard output and what it wrote on the terminal."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # (0 columns: tqdm draws nothing)
    env = dict(os.environ, HERMES_HOME=str(home))
    env.pop("CMMS_EMBEDDER", None)  # the default embedder: the vectors are made for real
    proc = subprocess.Popen([CLI, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=child,
                            env=env, close_fds=True)
    os.close(child)
    seen = terminal_output(main, proc, 300)
    out = proc.communicate(timeout=60)[0]
    os.close(main)
    return proc.returncode, out.decode(), seen.decode("utf-8", "replace")


def _keyword_only(home, *args):
    result = cli(home, *args, env={"CMMS_EMBEDDER": "none"})
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow
@pytest.mark.one_backend
def test_reindex_shows_a_bar_with_its_rate_while_it_waits_for_the_vectors(home):
    _keyword_only(home, "import", "--create", str(CHATGPT))  # stored keyword-only: vectors queued, none made
    code, out, terminal = _on_terminal(home, "reindex")
    assert code == 0, terminal
    assert json.loads(out)["drained"] is True, out
    assert "indexing" in terminal and " memories/s" in terminal and "100%" in terminal, terminal
    _keyword_only(home, "import", str(MEMORY_JSON))  # more to index, but --quiet
    code, out, quiet = _on_terminal(home, "reindex", "--quiet")
    assert code == 0 and json.loads(out)["drained"] is True and "indexing" not in quiet


@pytest.mark.slow
@pytest.mark.one_backend
def test_import_wait_shows_a_bar_and_a_pipe_or_quiet_gets_none(home):
    code, out, terminal = _on_terminal(home, "import", "--create", "--wait", str(CHATGPT))
    assert code == 0 and json.loads(out)["indexed"] is True
    assert "indexing" in terminal and " memories/s" in terminal
    _keyword_only(home, "import", str(MEMORY_JSON))
    code, out, quiet = _on_terminal(home, "import", "--wait", "-q", str(CHATGPT))  # indexes the new ones
    assert code == 0 and json.loads(out)["indexed"] is True and "indexing" not in quiet
    piped = subprocess.run([CLI, "import", "--wait", str(CHATGPT)], capture_output=True, text=True,
                           env=dict(os.environ, HERMES_HOME=str(home)))  # standard error a pipe: no bar
    assert piped.returncode == 0 and "indexing" not in piped.stderr and "\r" not in piped.stderr


@pytest.mark.parametrize("chosen, used", [(None, "onnx:int8"), ("onnx", "onnx:int8"), ("onnx:int8", None),
                                          ("sentence-transformers", None), ("none", None)])
@pytest.mark.quick
def test_a_command_that_only_stores_vectors_loads_only_the_int8_model(home, monkeypatch, chosen, used):
    """`import --wait` and `reindex` embed texts to store only: with the default ONNX embedder they
    load the int8 MiniLM those go through, not the float32 one too; any other choice is kept."""
    import argparse
    from hermes_cmms.cli._engine import storing_only

    monkeypatch.delenv("CMMS_EMBEDDER", raising=False)
    if chosen:
        monkeypatch.setenv("CMMS_EMBEDDER", chosen)
    assert storing_only(argparse.Namespace(hermes_home=str(home))).get("embedder") == used


def _queued(home, memories: int) -> None:
    """`memories` notes stored keyword-only, as an import stores them: their vectors queued, none made."""
    _keyword_only(home, "import", "--create", str(CHATGPT))
    assert scalar(home, "SELECT count(*) FROM outbox") >= memories


@pytest.mark.quick
@pytest.mark.one_backend
def test_a_search_reads_the_vector_index_and_leaves_its_queue_to_the_writer(home, monkeypatch):
    """A search on a store whose vectors are still queued (an import's) used to become the index
    writer and embed them until it exited: seconds a person waited on a search (docs/benchmarks.md,
    "Where search's time goes"). It loads the model and reads the index, and leaves the queue."""
    _queued(home, 4)
    queued = scalar(home, "SELECT count(*) FROM outbox")
    monkeypatch.delenv("CMMS_EMBEDDER", raising=False)  # the default embedder, loaded for real
    found = cli(home, "search", "a name for the sourdough starter", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)["results"], found.stderr
    assert found.stderr == ""  # standard error is no terminal here: no step is said
    assert scalar(home, "SELECT count(*) FROM outbox") == queued  # nothing embedded by the search
    listed = cli(home, "list", "-q", "sourdough starter", "--meaning")  # issue 41: not a bare "No memories match"
    assert listed.returncode == 0, listed.stderr
    waiting = scalar(home, "SELECT count(*) FROM outbox WHERE op = 'upsert' AND scope = 'local:default'")
    assert f"{waiting} memories of this scope wait for the vector index" in listed.stdout, listed.stdout


@pytest.mark.slow
@pytest.mark.one_backend
def test_a_search_says_what_it_waits_for_on_a_terminal_and_nothing_in_a_pipe(home):
    _queued(home, 4)
    code, out, terminal = _on_terminal(home, "search", "a name for the sourdough starter", "--json")
    assert code == 0 and json.loads(out)["results"], terminal  # standard output: the JSON alone
    for step in ("opening the memory store…", "loading the embedding model and opening the vector index…",
                 "searching the ", " memories of scope 'local:default'…"):
        assert step in terminal, terminal
    piped = subprocess.run([CLI, "search", "a name for the sourdough starter"], capture_output=True, text=True,
                           env=dict(os.environ, HERMES_HOME=str(home)))
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
