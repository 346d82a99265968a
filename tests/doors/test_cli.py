"""The hermes-cmms command line, run as a real subprocess."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_cmms import MemoryService, Settings

CLI = str(Path(sys.executable).with_name("hermes-cmms"))


def run(home, *args, **env):
    import os

    full_env = dict(os.environ, HERMES_HOME=str(home), CMMS_EMBEDDER="none", **env)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=full_env, timeout=120)


def test_doctor_fails_before_install_and_passes_after(home):
    before = run(home, "doctor")
    assert before.returncode == 1
    assert "FAIL plugin files" in before.stdout and "FAIL config" in before.stdout
    assert run(home, "install-hermes-plugin").returncode == 0
    after = run(home, "doctor")
    assert after.returncode == 0, after.stdout
    lines = after.stdout.splitlines()
    assert {line.split()[0] for line in lines} <= {"ok", "warn"}
    assert any(line.startswith("ok   database:") for line in lines)
    assert any(line.startswith("warn embedder: none") for line in lines)  # CMMS_EMBEDDER=none


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


def test_a_deeply_nested_import_line_is_one_sentence_naming_the_line(home, tmp_path):
    header = {"type": "header", "format": "hermes-cmms-export", "version": 1, "scope": "local:default",
              "counts": {}}
    for depth in (70, 5000):  # past the bound; past what Python's json parser can take
        lines = tmp_path / f"deep-{depth}.jsonl"
        lines.write_text(json.dumps(header) + "\n" + '{"type": "memory", "tags": ' + "[" * depth + "]" * depth + "}\n")
        result = run(home, "import", str(lines))
        assert result.returncode == 1
        assert result.stderr == ("error: Line 2: it nests lists or objects deeper than 64 levels; "
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


def test_the_cli_exits_with_its_code_while_an_engine_thread_is_inside_native_code(home):
    pytest.importorskip("torch")
    import os

    env = dict(os.environ, HERMES_HOME=str(home), CMMS_EMBEDDER="none")
    for args, code, stderr in ((["search", ""], 1, "error: Argument 'query' must hold 1 to 10,000 characters.\n"),
                               (["plugins"], 0, "")):
        done = subprocess.run([sys.executable, "-c", ENGINE_THREAD_IN_NATIVE_CODE, *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (code, stderr)  # not SIGABRT (-6) after the error
