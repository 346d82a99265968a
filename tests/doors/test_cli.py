"""The hermes-cmms command line: its commands through main(argv) in this process; what a
fresh process imports, its exit code, and the installed console script end to end."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_cmms import MemoryService, Settings
from inprocess import cli

CLI = str(Path(sys.executable).with_name("hermes-cmms"))


def run(home, *args, **env):
    """`hermes-cmms ARGS` in this process, keyword-only (CMMS_EMBEDDER=none), with `env`."""
    return cli(home, *args, env={"CMMS_EMBEDDER": "none", **env})


@pytest.mark.store
def test_doctor_fails_before_install_and_passes_after(home):
    before = run(home, "doctor")
    assert before.returncode == 1
    assert "FAIL plugin files" in before.stdout and "FAIL config" in before.stdout
    assert run(home, "install-hermes-plugin").returncode == 0
    MemoryService(Settings.load(home), scheduler=False).close()  # as Hermes' first chat with cmms does
    after = run(home, "doctor")
    assert after.returncode == 0, after.stdout
    lines = after.stdout.splitlines()
    assert {line.split()[0] for line in lines} <= {"ok", "warn"}
    assert any(line.startswith("ok   database:") for line in lines)
    assert any(line.startswith("warn embedder: none") for line in lines)  # CMMS_EMBEDDER=none


@pytest.mark.one_backend  # a Chroma server that is not there
def test_doctor_says_when_the_chroma_server_does_not_answer(home):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert run(home, "install-hermes-plugin").returncode == 0
    MemoryService(Settings.load(home, embedder="none"), scheduler=False).close()
    done = run(home, "doctor", CMMS_EMBEDDER="auto", CMMS_CHROMA_URL=url)
    said = [line for line in done.stdout.splitlines() if line.startswith("warn vectors:")]
    assert said and f"the Chroma server at {url} does not answer" in said[0], done.stdout
    assert "keyword-only" in said[0] and done.returncode == 0  # recall degrades; Hermes still uses cmms
    assert not [line for line in run(home, "doctor").stdout.splitlines() if "vectors:" in line]  # embedded: no line
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        database = f"postgresql+psycopg://cmms@127.0.0.1:{sock.getsockname()[1]}/cmms"
    down = run(home, "doctor", CMMS_EMBEDDER="auto", CMMS_CHROMA_URL=url, CMMS_DATABASE_URL=database)
    assert "FAIL database" in down.stdout and "vectors:" not in down.stdout  # the store is what is down


@pytest.mark.quick
@pytest.mark.store
def test_status_and_search_read_the_store(home):
    svc = MemoryService(Settings.load(home, embedder="none"))
    svc.retain_turn("local:default", "s1", "The boat is moored at Pier 9.", "Noted.")
    svc.close()
    status = json.loads(run(home, "status", "--json").stdout)
    assert (status["memories"], status["sessions"], status["embedder"]) == (2, 1, "none (keyword-only)")
    found = run(home, "search", "where is the boat moored", "--json")
    assert [r["content"] for r in json.loads(found.stdout)["results"]][0] == "The boat is moored at Pier 9."
    other = run(home, "search", "boat", "--scope", "user:telegram:7")
    assert "No memories match 'boat' in scope 'user:telegram:7'." in other.stdout


@pytest.mark.parametrize("args, message", [
    (("search", "boat", "--limit", "0"), "'limit' must be between 1 and 50"),
    (("install-hermes-plugin", "--purge"), "--purge only makes sense with --uninstall."),
])
@pytest.mark.quick
def test_bad_input_is_one_clean_sentence(home, args, message):
    result = run(home, *args)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_setting_is_reported_not_raised(home):
    result = run(home, "status", CMMS_RECALL_TOKENS="lots")
    assert result.returncode == 1
    assert result.stderr.strip() == "error: Setting recall_tokens must be a whole number, not 'lots'."


def test_plugins_lists_the_built_ins_and_their_hooks(home):
    out = run(home, "plugins").stdout
    assert "hermes_cmms.hooks.auto_recall: recall" in out
    assert "hermes_cmms.redact: redact" in out


@pytest.mark.store
def test_a_deeply_nested_import_line_is_one_sentence_naming_the_line(home, tmp_path):
    header = {"type": "header", "format": "hermes-cmms-export", "version": 1, "scope": "local:default",
              "counts": {}}
    for depth in (70, 5000):  # past the bound; past what Python's json parser can take
        lines = tmp_path / f"deep-{depth}.jsonl"
        lines.write_text(json.dumps(header) + "\n" + '{"type": "memory", "tags": ' + "[" * depth + "]" * depth + "}\n")
        result = run(home, "import", str(lines), "--create")
        assert result.returncode == 1
        assert result.stderr == (f"error: {str(lines)!r}, line 2: it nests lists or objects deeper than 64 levels; "
                                 "nothing was imported.\n")


ENGINE_THREAD_IN_NATIVE_CODE = """
import sys, threading
import torch
from hermes_cmms.cli import main

weights = torch.randn(600, 600)

def embed_forever():  # what the indexer does while it loads the model or embeds a batch
    while True:
        weights @ weights

threading.Thread(target=embed_forever, name="cmms-indexer", daemon=True).start()
sys.argv = ["hermes-cmms", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.slow
def test_the_cli_exits_with_its_code_while_an_engine_thread_is_inside_native_code(home):
    pytest.importorskip("torch")
    import os

    env = dict(os.environ, HERMES_HOME=str(home), CMMS_EMBEDDER="none")
    for args, code, stderr in ((["search", ""], 1, "error: Argument 'query' must hold 1 to 10,000 characters.\n"),
                               (["plugins"], 0, "")):
        done = subprocess.run([sys.executable, "-c", ENGINE_THREAD_IN_NATIVE_CODE, *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (code, stderr)  # not SIGABRT (-6) after the error


@pytest.mark.slow
@pytest.mark.one_backend  # how the command line meets a closed pipe; doctor opens the store
@pytest.mark.parametrize("args", [["doctor"], ["plugins"], ["export"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(home, args):
    """`hermes-cmms doctor | head`: the pipe's reader gone before the first line is written.
    (export writes its records to standard output's bytes: it exited 1 there.)"""
    import os

    if args == ["export"]:
        made = cli(home, "learn", "--create", "The spare key hangs by the door.", env={"CMMS_EMBEDDER": "none"})
        assert made.returncode == 0, made.stderr
    reader, writer = os.pipe()
    os.close(reader)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "hermes_cmms.cli", *args], stdout=writer,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env=dict(os.environ, HERMES_HOME=str(home), CMMS_EMBEDDER="none"))
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (141, "")  # no BrokenPipeError traceback, then or at exit


# What an inspection command loads: modules it must not import to print a few lines.
HEAVY = ("chromadb", "onnxruntime", "torch", "sentence_transformers", "numpy", "tiktoken",
         "hermes_cmms.vectors.embedders", "prometheus_client", "hermes_cmms.knowledge.extract")
VECTORS = ("chromadb", "onnxruntime", "numpy", "hermes_cmms.vectors.embedders")  # what a search by meaning needs
LOADED = '''
import json, sys
from hermes_cmms.cli.commands import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # argparse, after --help
    code = exc.code
print("LOADED " + json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules],
                              "sql": "sqlalchemy" in sys.modules,
                              "encoded": "hermes_cmms.common.tokens" in sys.modules
                                         and sys.modules["hermes_cmms.common.tokens"].encoding.cache_info().currsize > 0}))
''' % (HEAVY,)


def loaded(home, *args) -> dict:
    """Run one hermes-cmms command in a fresh process; what it had imported when it ended."""
    import os

    env = dict(os.environ, HERMES_HOME=str(home))
    env.pop("CMMS_EMBEDDER", None)  # the default embedder: the one that would cost seconds
    proc = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(home))  # (not the checkout: the installed package)
    line = [x for x in proc.stdout.splitlines() if x.startswith("LOADED ")]
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(line[-1][len("LOADED "):])


@pytest.fixture
def stored_home(home):
    svc = MemoryService(Settings.load(home))
    svc.retain_turn("local:default", "s1", "The boat is moored at Pier 9.", "Noted.")
    assert svc.upkeep.drain(120)
    svc.close()
    return home


@pytest.mark.slow
@pytest.mark.store
@pytest.mark.parametrize("args", [("status",), ("status", "--json"), ("audit-log",), ("beliefs", "list")])
def test_inspection_commands_load_no_model_no_vector_index(stored_home, args):
    assert loaded(stored_home, *args) == {"code": 0, "heavy": [], "sql": True, "encoded": False}


@pytest.mark.slow
@pytest.mark.store
def test_doctor_checks_the_model_and_the_tokenizer_without_loading_them(stored_home):
    """(It reads the prepared model's file and the tokenizer's: not the runtime, not numpy, and
    it builds no encoding.)"""
    found = loaded(stored_home, "doctor")
    assert [m for m in found["heavy"] if m not in ("tiktoken", "hermes_cmms.vectors.embedders")] == []
    assert not found["encoded"]


@pytest.mark.slow
@pytest.mark.store
def test_search_loads_the_model_and_the_index_and_nothing_else_heavy(stored_home):
    """A search by meaning needs the model and the vector index, not the metrics, the extraction
    rules, the token counter or torch."""
    found = loaded(stored_home, "search", "boat")
    assert found["code"] == 0 and set(found["heavy"]) == set(VECTORS) and not found["encoded"]


@pytest.mark.slow
def test_help_loads_not_even_the_store(home):
    assert loaded(home, "--help") == {"code": 0, "heavy": [], "sql": False, "encoded": False}


@pytest.mark.slow
@pytest.mark.store
def test_status_names_the_embedder_without_loading_it_and_counts_vectors_when_asked(stored_home):
    """`--vectors` in a process of its own: the count is read from the index on disk, not from
    what this test process already holds."""
    import os

    plain = cli(stored_home, "status", env={"CMMS_EMBEDDER": None}).stdout
    assert "embedder: auto (not loaded by this command)" in plain and "memories: 2" in plain
    assert "None" not in plain and "indexed" not in plain and "index_error" not in plain
    env = {k: v for k, v in os.environ.items() if k != "CMMS_EMBEDDER"}
    counted = json.loads(subprocess.run([CLI, "status", "--vectors", "--json"], capture_output=True, text=True,
                                        timeout=120, env=dict(env, HERMES_HOME=str(stored_home))).stdout)
    assert (counted["indexed"], counted["index_error"]) == (2, None)
    assert counted["embedder"] not in ("loading", "auto (not loaded by this command)")


@pytest.mark.slow
@pytest.mark.store
def test_search_ranks_by_vectors_even_though_the_model_loads_after_the_command_starts(stored_home):
    """A command waits for the vector index it needs (a chat turn would fall back to keywords):
    the installed console script, a process of its own whose model loads after it starts."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "CMMS_EMBEDDER"}
    found = subprocess.run([CLI, "search", "which vessel sits by the dock", "--json"], capture_output=True,
                           text=True, timeout=120, env=dict(env, HERMES_HOME=str(stored_home)))
    assert [r["content"] for r in json.loads(found.stdout)["results"]][:1] == ["The boat is moored at Pier 9."]
