"""Memory that is off says so: a store that cannot be written reaches the person at the chat
through what Hermes gives a provider (0.19's warning line, the prompt block the model reads, the
tool results), and the command line answers in one sentence, not with a driver's error."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import SERVER, embedded_only, refuse_writes
from hermes_cmms import MemoryService, Settings
from hermes_cmms.hermes.host import HOST_SAYS_UNAVAILABLE
from hermes_cmms.install import install
from inprocess import cli

pytestmark = pytest.mark.store

OFF = "cmms memory is off, so nothing of this session will be remembered: "


def _one_line(text: str) -> None:
    assert text.count("\n") <= 1 and "Traceback" not in text and "sqlalche.me" not in text, text


@pytest.mark.quick
@pytest.mark.skipif(HOST_SAYS_UNAVAILABLE, reason="Hermes 0.20+ shows unavailable_reason() itself")
def test_a_store_that_cannot_be_written_is_said_at_session_start_and_to_the_model(kw_home, monkeypatch):
    """Hermes 0.19 builds an agent as agent_init does: the provider only if is_available(), then
    initialize_all with the CLI's warning line. Before, cmms was left out without a word."""
    from agent.memory_manager import MemoryManager
    from plugins.memory import load_memory_provider

    install(kw_home)
    MemoryService(Settings.load(kw_home), scheduler=False).close()  # a store Hermes used before
    refuse_writes(kw_home)
    monkeypatch.delitem(sys.modules, "_hermes_user_memory.cmms", raising=False)
    provider, told, manager = load_memory_provider("cmms"), [], MemoryManager()
    if provider.is_available():
        manager.add_provider(provider)
    assert manager.providers == [provider]  # kept, to say why memory is off
    manager.initialize_all(session_id="s1", hermes_home=str(kw_home), platform="cli", agent_context="primary",
                           agent_identity="default", warning_callback=told.append)
    try:
        [notice] = told
        assert notice.startswith(OFF) and notice.endswith(".") and "\n" not in notice, notice
        why = notice[len(OFF):]
        assert ("read-only" in why) if SERVER else why.startswith(f"The memory store cannot be written at {kw_home / 'cmms'}")
        assert f"Long-term memory (cmms) is OFF in this session: {why} Nothing said here" in manager.build_system_prompt()
        answer = json.loads(manager.handle_tool_call("cmms_remember", {"content": "I keep bees."}))
        assert answer == {"error": f"cmms memory is not open ({why})."}
        manager.sync_all("I keep bees on the roof.", "Nice.", session_id="s1")
        manager.flush_pending(timeout=10)
        assert told == [notice]  # said once at the start, not again each turn
    finally:
        manager.shutdown_all()


def test_commands_on_a_read_only_store_answer_in_one_sentence(kw_home, monkeypatch):
    """Reading commands on a store that cannot be written said "(Background on this error at:
    https://sqlalche.me/...)" (PostgreSQL), writing ones printed a traceback with the SQL."""
    MemoryService(Settings.load(kw_home), scheduler=False).close()
    if SERVER:
        refuse_writes(kw_home)
        for reading in (("status",), ("search", "bees")):
            done = cli(kw_home, *reading)
            assert done.returncode == 1 and done.stdout == "", done.stderr
            _one_line(done.stderr)
            assert done.stderr.startswith("error: Cannot open the memory store at postgresql")
            assert done.stderr.endswith(": cannot execute CREATE TABLE in a read-only transaction.\n"), done.stderr
        return
    db = kw_home / "cmms" / "cmms.db"  # opened read-only by its URL: it reads, and refuses writes
    monkeypatch.setenv("CMMS_DATABASE_URL", f"sqlite:///file:{db}?mode=ro&uri=true")
    monkeypatch.chdir(kw_home)
    assert cli(kw_home, "status").returncode == 0
    for writing in (("beliefs", "set", "Bees are calm."), ("forget", "--scope", "local:default", "--all")):
        done = cli(kw_home, *writing)
        assert done.returncode == 1 and done.stdout == "", done.stderr
        _one_line(done.stderr)
        assert done.stderr == (f"error: The memory store is read-only (sqlite:///file%3A{db}?mode=ro&uri=true): "
                               "attempt to write a readonly database; nothing was written.\n")


@pytest.mark.slow
@embedded_only
def test_status_and_search_on_a_read_only_home_answer_in_one_sentence(kw_home):
    """As a user without root's override of permissions (CAP_DAC_OVERRIDE dropped) runs them."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: root would write through the permission bits")
    as_user = [setpriv, "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    MemoryService(Settings.load(kw_home), scheduler=False).close()
    for path in (kw_home / "cmms" / "cmms.db", kw_home / "cmms", kw_home):
        path.chmod(0o444 if path.is_file() else 0o555)
    try:
        for command in (("status",), ("search", "bees")):
            done = subprocess.run([*as_user, sys.executable, "-m", "hermes_cmms.cli", *command], capture_output=True,
                                  text=True, timeout=120, env={**os.environ, "HERMES_HOME": str(kw_home)})
            assert done.returncode == 1 and done.stdout == "", done.stderr
            _one_line(done.stderr)
            assert done.stderr == (f"error: Cannot open the memory store at sqlite:///{kw_home / 'cmms' / 'cmms.db'}: "
                                   "attempt to write a readonly database.\n")
        doctor = subprocess.run([*as_user, sys.executable, "-m", "hermes_cmms.cli", "doctor"], capture_output=True,
                                text=True, timeout=120, env={**os.environ, "HERMES_HOME": str(kw_home)})
        writable = [line for line in doctor.stdout.splitlines() if "writable" in line]
        assert writable == [f"FAIL writable: The memory store cannot be written at {kw_home / 'cmms'}: "
                            "Permission denied. Hermes will not use cmms until this is fixed."], doctor.stdout  # the directory, not the probe file in it
    finally:
        for path in (kw_home, kw_home / "cmms", kw_home / "cmms" / "cmms.db"):
            path.chmod(0o644 if path.is_file() else 0o755)


@pytest.mark.quick
@pytest.mark.parametrize("muted", ["around a tool call", "for the whole run (hermes -z)"])
def test_a_warning_goes_to_the_warning_line_unless_hermes_muted_stderr_from_the_start(kw_home, capfd, muted):
    """Hermes' code_execution_tool sends sys.stderr to the null device around each tool call;
    `hermes -z` does for the whole run, the provider's initialize included."""
    from hermes_cmms.provider import CmmsMemoryProvider

    said, provider, kept = [], CmmsMemoryProvider(), sys.stderr
    init = dict(platform="cli", agent_context="primary", agent_identity="default")
    line = "cmms did not store this memory entry: the store refused it."
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        try:
            if muted.startswith("for the whole run"):
                sys.stderr = devnull
            provider.initialize("s1", hermes_home=str(kw_home), warning_callback=said.append, **init)
            sys.stderr = devnull  # (a tool call, or still the whole run)
            provider._tell(line)  # (as a write the store refused says it: _not_stored)
        finally:
            sys.stderr = kept
            provider.shutdown()
    printed = capfd.readouterr().err
    if muted.startswith("for the whole run"):
        assert said == [] and printed.count(line) == 1, (said, printed)  # the only way to the person
    else:
        assert said == [line] and line not in printed, (said, printed)
