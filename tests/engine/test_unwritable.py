"""No silent loss: a store that cannot be written makes cmms unavailable with a reason (Hermes'
loader, `hermes memory status`, `hermes-cmms doctor`), and every write Hermes hands a provider
whose store is not writable fails loudly, each time, in one sentence. A cut turn says so."""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys

import pytest

from conftest import SERVER, embedded_only, hermes_bin, refuse_writes, subprocess_env
from db import sql
from hermes_cmms import MemoryService, Settings, StoreUnavailable
from hermes_cmms.ops import doctor
from hermes_cmms.install import install
from hermes_cmms.hermes.host import HOST_SAYS_UNAVAILABLE
from hermes_cmms.provider import CmmsMemoryProvider



def _permission_bits_bind() -> bool:
    """Whether a directory without write permission stops this process (not for root, unless
    it runs without CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        os.chmod(where, 0o555)
        try:
            open(os.path.join(where, "probe"), "w").close()
        except PermissionError:
            return True
        finally:
            os.chmod(where, 0o755)
    return False


pytestmark = pytest.mark.store

PERMISSIONS_BIND = _permission_bits_bind()
INIT = dict(platform="cli", agent_context="primary", agent_identity="default")
# Hermes 0.20+ shows unavailable_reason() and leaves cmms out; 0.19 would drop it without a word,
# so there cmms loads and says itself that memory is off, and `hermes memory status` says so too
OFF = "" if HOST_SAYS_UNAVAILABLE else " Memory is off until this is fixed; each chat says so."


def _hermes_loader(home, monkeypatch):
    """The provider as Hermes' own loader returns it from the installed plugin."""
    install(home)
    monkeypatch.delitem(sys.modules, "_hermes_user_memory.cmms", raising=False)
    from plugins.memory import load_memory_provider

    provider = load_memory_provider("cmms")
    assert isinstance(provider, CmmsMemoryProvider)
    return provider


def _manager(provider, home):
    """Hermes' MemoryManager driving the provider as an agent does, initialize included."""
    from agent.memory_manager import MemoryManager

    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(session_id="s1", hermes_home=str(home), **INIT)
    return manager


def _one_sentence(message: str) -> None:
    assert "\n" not in message and message.endswith(".") and "Traceback" not in message, message


# -- unavailable, with a reason ---------------------------------------------------------------


@pytest.mark.quick
@embedded_only
def test_an_unwritable_home_makes_cmms_unavailable_with_a_reason(kw_home, monkeypatch):
    provider = _hermes_loader(kw_home, monkeypatch)
    assert provider.is_available() and provider.unavailable_reason() == ""
    refuse_writes(kw_home)
    assert provider.is_available() is not HOST_SAYS_UNAVAILABLE  # 0.19: loaded, to say memory is off
    reason = provider.unavailable_reason()
    _one_sentence(reason)
    assert "cannot be written" in reason and str(kw_home / "cmms") in reason
    assert provider.get_status_config({})["store"] == f"NOT WRITABLE: {reason}{OFF}"
    checks = {name: (status, detail) for status, name, detail in doctor.run_checks(kw_home)}
    assert checks["writable"][0] == "FAIL" and reason in checks["writable"][1]


@embedded_only
def test_a_read_only_database_url_makes_cmms_unavailable(kw_home, monkeypatch):
    MemoryService(Settings.load(kw_home), scheduler=False).close()
    monkeypatch.setenv("CMMS_DATABASE_URL", f"sqlite:///file:{kw_home / 'cmms' / 'cmms.db'}?mode=ro&uri=true")
    provider = CmmsMemoryProvider()
    assert provider.is_available() is not HOST_SAYS_UNAVAILABLE and "read-only" in provider.unavailable_reason()


@embedded_only
def test_hermes_memory_status_says_why_cmms_is_not_available(kw_home):
    install(kw_home)
    refuse_writes(kw_home)
    out = subprocess.run([hermes_bin(), "memory", "status"], capture_output=True, text=True, timeout=120,
                         env=subprocess_env(kw_home, TIRITH_ENABLED="false")).stdout
    assert ("not available" in out) is HOST_SAYS_UNAVAILABLE, out
    assert re.search(r"store: NOT WRITABLE: The memory store cannot be written at .*cmms", out), out
    assert OFF in out, out


@pytest.mark.skipif(not PERMISSIONS_BIND, reason="root writes through permission bits (the file-in-the-way "
                                                 "and read-only database tests cover root)")
def test_a_read_only_home_by_permissions_makes_cmms_unavailable_and_turns_fail_loudly(kw_home, monkeypatch):
    provider = _hermes_loader(kw_home, monkeypatch)
    kw_home.chmod(0o555)
    try:
        if not SERVER:  # a database server does not need the home to be writable
            assert provider.is_available() is not HOST_SAYS_UNAVAILABLE
            assert "Permission denied" in provider.unavailable_reason()
            with pytest.raises(Exception):
                provider.initialize("s1", hermes_home=str(kw_home), **INIT)
            with pytest.raises(StoreUnavailable, match="cmms did not store this turn"):
                provider.sync_turn("I keep bees on the roof.", "Nice.", session_id="s1")
    finally:
        kw_home.chmod(0o755)


# -- every write fails loudly -----------------------------------------------------------------


def test_every_turn_fails_loudly_when_initialize_could_not_open_the_store(kw_home, monkeypatch, caplog):
    provider = _hermes_loader(kw_home, monkeypatch)
    refuse_writes(kw_home)
    caplog.set_level(logging.WARNING)
    manager = _manager(provider, kw_home)  # Hermes logs that initialize failed, and goes on
    assert "Memory provider 'cmms' initialize failed" in caplog.text
    caplog.clear()
    for turn in ("I keep bees on the roof.", "The bees swarmed in May."):
        manager.sync_all(turn, "Noted.", session_id="s1")
        manager.flush_pending(timeout=10)
    failures = [r.getMessage() for r in caplog.records if "sync_turn failed" in r.getMessage()]
    assert len(failures) == 2, caplog.text  # each turn, not once
    sentence = failures[0].split("sync_turn failed: ", 1)[1]
    _one_sentence(sentence)
    assert sentence.startswith("cmms did not store this turn: the memory store is not open (")
    with pytest.raises(StoreUnavailable, match="did not store this memory entry"):
        provider.on_memory_write("add", "user", "User prefers tea.")
    with pytest.raises(StoreUnavailable, match="did not store this delegation result"):
        provider.on_delegation("Summarise", "Revenue grew 12%.")
    assert "cmms memory is not open (" in json.loads(provider.handle_tool_call("cmms_recall", {"query": "x"}))["error"]
    manager.shutdown_all()


def test_a_store_that_refuses_writes_fails_each_turn_loudly_and_tells_the_person_once(kw_home, monkeypatch,
                                                                                     tmp_path):
    MemoryService(Settings.load(kw_home), scheduler=False).close()  # created and migrated
    told, provider = [], CmmsMemoryProvider()
    if SERVER:  # the database turns read-only under a running provider (a failover to a replica)
        provider.initialize("s1", hermes_home=str(kw_home), warning_callback=told.append, **INIT)
        refuse_writes(kw_home)
        sql(kw_home, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = 'hermes-cmms' AND datname = current_database()")
    else:  # SQLite named read-only by its URL: refused before it is opened, and the person told why
        db = kw_home / "cmms" / "cmms.db"
        monkeypatch.setenv("CMMS_DATABASE_URL", f"sqlite:///file:{db}?mode=ro&uri=true")
        (tmp_path / "cwd").mkdir()
        monkeypatch.chdir(tmp_path / "cwd")  # a `file:` URI names a path: nothing is made here
        with pytest.raises(StoreUnavailable, match="read-only"):
            provider.initialize("s1", hermes_home=str(kw_home), warning_callback=told.append, **INIT)
        assert told == ["cmms memory is off, so nothing of this session will be remembered: "
                        f"The memory store file:{db} is opened read-only (by its database URL)."]
    try:
        for turn in ("I keep bees on the roof.", "The bees swarmed in May."):
            with pytest.raises(StoreUnavailable, match="cmms did not store this turn: ") as failed:
                provider.sync_turn(turn, "Noted.", session_id="s1")
            _one_sentence(str(failed.value))
            assert "read-only" in str(failed.value) or "readonly" in str(failed.value)
        with pytest.raises(StoreUnavailable, match="did not store this memory entry"):
            provider.on_memory_write("add", "user", "User prefers tea.")
        if SERVER:
            with pytest.raises(StoreUnavailable, match="cmms did not store the end of this session: "):
                provider.shutdown()  # the session's flush cannot be written either; the store is let go
            # said on the person's warning line once for each thing not stored, not once a turn
            assert [line.split(":")[0] for line in told] == [
                "cmms did not store this turn", "cmms did not store this memory entry",
                "cmms did not store the end of this session"], told
            assert all("read-only" in line for line in told), told
        assert len(told) == (3 if SERVER else 1)
    finally:
        provider.shutdown()
    assert sql(kw_home, "SELECT count(*) FROM memories") == [(0,)]  # reading is allowed
    assert SERVER or list((tmp_path / "cwd").iterdir()) == []  # no `file:/...` tree in the cwd


# -- a cut turn says so -----------------------------------------------------------------------


def test_a_turn_over_the_limit_is_marked_and_logged(kw_home, monkeypatch, caplog):
    from hermes_cmms.retain import admission

    monkeypatch.setattr(admission, "MAX_CONTENT_CHARS", 1_000)
    provider = CmmsMemoryProvider()
    provider.initialize("s1", hermes_home=str(kw_home), **INIT)
    caplog.set_level(logging.WARNING)
    provider.sync_turn("zeppelin " * 200, "Short answer.", session_id="s1")
    provider.shutdown()
    [(content,)] = sql(kw_home, "SELECT content FROM memories WHERE role = 'user'")
    assert content.startswith("zeppelin ") and content.endswith("… [truncated: 800 characters not kept]")
    assert len(content) == 1_000 + len("… [truncated: 800 characters not kept]")
    assert "a 1,800-character message in scope local:default was cut to 1,000 characters" in caplog.text
