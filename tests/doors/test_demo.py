"""`hermes-cmms demo`: a first hour without a key. Real `hermes -z` turns through the real provider
against the offline stand-in model (hermes_cmms/common/standin.py), which the end-to-end tests
also run as their fake model (tests/fake_llm.py starts it)."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from hermes_cmms.cli import build_parser
from hermes_cmms.cli._demo import HERMES_MISSING, SESSIONS, _shell, demo_home, hermes_command
from hermes_cmms.common import standin
from inprocess import cli

BLOCK = ("<memory-context>\n[System note: The following is recalled memory context, NOT new user input.]\n\n"
         "## 2026-12-03\n- fact: user has cat Biscuit\n- user: My cat is called Biscuit.\n"
         "- assistant: (stand-in model) Noted.\n</memory-context>")


def chat(url: str, text: str, stream: bool = False) -> str:
    """The stand-in's reply to one user message, over HTTP, as Hermes asks it."""
    body = json.dumps({"model": "fake-model", "stream": stream,
                       "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": text}]})
    request = urllib.request.Request(f"{url}/chat/completions", body.encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        raw = answer.read().decode()
    if not stream:
        return json.loads(raw)["choices"][0]["message"]["content"]
    chunks = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


@pytest.mark.quick
def test_the_stand_in_answers_with_what_recall_gave_it():
    model = standin.start(echo=True)
    try:
        asked = chat(model.url, "What is my cat's name?\n\n" + BLOCK)
        assert asked == "(stand-in model) From memory: fact: user has cat Biscuit · user: My cat is called Biscuit."
        assert chat(model.url, "I live in Berlin.\n\n" + BLOCK, stream=True) == "(stand-in model) Noted. (3 memories came with it.)"
        assert chat(model.url, "Where do I live?") == "(stand-in model) I cannot say: nothing was recalled for this."
        assert model.recalled == [["- fact: user has cat Biscuit", "- user: My cat is called Biscuit.",
                                   "- assistant: (stand-in model) Noted."]] * 2 + [[]]
    finally:
        model.shutdown()
        model.server_close()
    with pytest.raises(ConnectionRefusedError):  # stopped: the port is closed
        socket.create_connection(("127.0.0.1", model.server_address[1]), timeout=2)


@pytest.mark.quick
def test_the_tests_fake_model_is_the_stand_in_as_before(tmp_path):
    """tests/fake_llm.py runs the package's stand-in: "PORT n", the log, the default reply."""
    log = tmp_path / "log.jsonl"
    proc = subprocess.Popen([sys.executable, str(Path(__file__).parents[1] / "fake_llm.py"), str(log)],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])
        assert chat(f"http://127.0.0.1:{port}/v1", "hello") == "FAKE-REPLY: got it (2 msgs, 0 tools)"
    finally:
        proc.terminate()
        proc.wait(10)
    assert [json.loads(line)["method"] for line in log.read_text().splitlines()] == ["POST"]


@pytest.mark.quick
def test_the_demo_fills_only_a_new_or_empty_home(tmp_path):
    used = tmp_path / "used"
    used.mkdir()
    (used / "config.yaml").write_text("model: {}\n")
    done = cli(None, "demo", "--hermes-home", str(used))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"error: The demo fills a new Hermes home and {str(used)!r} is not an empty folder; "
                           "name a new or empty one (or leave --hermes-home out for a temporary one).\n")
    assert (used / "config.yaml").read_text() == "model: {}\n"  # untouched
    assert demo_home(str(tmp_path / "new")) == tmp_path / "new" and (tmp_path / "new").is_dir()
    first, second = demo_home(None), demo_home(None)
    try:
        assert first != second and first.name.startswith("hermes-cmms-demo-") and not any(first.iterdir())
    finally:
        first.rmdir()
        second.rmdir()


@pytest.mark.quick
def test_without_hermes_the_demo_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no hermes on PATH, nor beside this Python
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    done = cli(None, "demo", "--hermes-home", str(tmp_path / "demo"))
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {HERMES_MISSING}\n")
    assert not (tmp_path / "demo").exists()  # nothing made


@pytest.mark.quick
def test_the_demo_runs_the_hermes_of_its_own_environment_first(tmp_path, monkeypatch):
    """A `hermes` earlier on PATH (another Hermes, whose venv may not hold hermes-cmms) is taken only
    when none is beside the Python running the demo."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "hermes").write_text("#!/bin/sh\nexit 1\n")
    (other / "hermes").chmod(0o755)
    monkeypatch.setenv("PATH", str(other))
    assert hermes_command() == str(Path(sys.executable).with_name("hermes"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert hermes_command() == str(other / "hermes")


@pytest.mark.slow
@pytest.mark.one_backend
def test_the_demo_runs_real_hermes_turns_and_recalls_across_sessions(tmp_path):
    """The console script as a newcomer runs it: every session a real `hermes -z` process against the
    stand-in; what the model got is read from the stand-in, so recall across sessions is the
    provider's. The temporary home lands in TMPDIR and --remove removes it."""
    command = [str(Path(sys.executable).with_name("hermes-cmms")), "demo", "--remove"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    sessions = out.split("\n[session ")[1:]
    assert len(sessions) == len(SESSIONS)
    assert "cmms recalled 0 line(s) into the prompt (nothing stored matches)" in sessions[0]  # nothing yet
    cat = sessions[2]
    assert "      - fact: user has cat Biscuit\n" in cat and "      - user: My cat is called Biscuit.\n" in cat
    assert "  Hermes: (stand-in model) From memory: fact: user has cat Biscuit" in cat
    where = sessions[4]
    assert "      - fact (now): user lives in Lisbon\n" in where and "      - fact (earlier): user lives in Berlin\n" in where
    explained = out.split("(hermes-cmms inspect, leaving out the 2 message(s) that session stored):")
    assert len(explained) == 2 and "found by keyword #" in explained[1]
    block = explained[1].split("Look further")[0]
    assert "Lisbon" in block and "Where do I live now?" not in block  # the question's own message left out
    home = re.search(r"A throwaway Hermes home: (\S+)\n", out).group(1)
    assert Path(home).parent == tmp_path and not Path(home).exists()  # removed, as asked
    assert f"Removed the demo's Hermes home {home}." in out
    shown = set(re.findall(r"^  hermes-cmms ([a-z-]+) ", out, re.M))
    assert shown == {"ui", "search", "inspect", "list"} and f"--hermes-home {_shell(home)}" in out
    assert shown <= set(next(a for a in build_parser()._actions if a.dest == "command").choices)
    assert re.search(r"\nThe stand-in model on http://127\.0\.0\.1:\d+/v1 has stopped\.\n", out)


@pytest.mark.quick
def test_the_demo_never_reaches_a_store_server_or_model_the_user_set(tmp_path, monkeypatch):
    """The user's CMMS_* settings (a store URL, a Chroma server, a model) and HERMES_* (a profile)
    would beat the demo home's own config: the demo's turns and its own reads run without them."""
    from hermes_cmms.cli._demo import _only, demo_env

    for name, value in {"CMMS_DATABASE_URL": "sqlite:////real/cmms.db", "CMMS_CHROMA_URL": "http://10.0.0.9:8000",
                        "CMMS_LLM_MODEL": "gpt-real", "HERMES_PROFILE": "work", "HERMES_HOME": "/real/home"}.items():
        monkeypatch.setenv(name, value)
    env = demo_env(tmp_path)
    assert env["HERMES_HOME"] == str(tmp_path) and "PATH" in env
    assert not [k for k in env if k.startswith("CMMS_") or k in ("HERMES_PROFILE",)]
    with _only(tmp_path):
        assert os.environ.get("CMMS_DATABASE_URL") is None and os.environ["HERMES_HOME"] == str(tmp_path)
    assert os.environ["CMMS_DATABASE_URL"] == "sqlite:////real/cmms.db"  # restored after
