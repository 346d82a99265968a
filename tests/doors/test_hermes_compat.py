"""What Hermes 0.20+ asks of a memory provider, checked on the Hermes 0.19 installed here: the
entry point it loads providers from, recall_status, unavailable_reason, initialize_for_inspection,
the newer hook kwargs, and trivial prompts that skip recall."""
from __future__ import annotations

import importlib.util
import re
import inspect
import threading
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from agent.memory_provider import MemoryProvider

from hermes_cmms.hermes.host import HOST_SAYS_UNAVAILABLE, HOST_SHOWS_RECALL, is_trivial_prompt
from hermes_cmms.provider import CmmsMemoryProvider

FACT = "The deploy key for the staging cluster rotates every Monday."

# What Hermes sees of the provider, on both backends: the counts it shows come from recall.
pytestmark = pytest.mark.store


def provider_from_entry_point(target) -> MemoryProvider:
    """What Hermes 0.20+ does with what an entry point names: a module with register(ctx) (fed
    0.19's own collector), a MemoryProvider subclass or instance, or a factory."""
    from plugins.memory import _ProviderCollector

    if inspect.ismodule(target) and hasattr(target, "register"):
        collector = _ProviderCollector()
        target.register(collector)
        return collector.provider
    if isinstance(target, MemoryProvider):
        return target
    if isinstance(target, type) and issubclass(target, MemoryProvider):
        return target()
    if callable(target):
        return target()
    raise AssertionError(f"Hermes could not make a provider of {target!r}")


def _provider(home, session="s1", **kw) -> CmmsMemoryProvider:
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), platform="cli", agent_context="primary",
                 agent_identity="default", **kw)
    return p


@pytest.fixture
def kw_home(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    return home


# -- the entry point ------------------------------------------------------------------------


@pytest.mark.quick
def test_the_entry_point_gives_hermes_a_working_cmms_provider(kw_home):
    found = {ep.name: ep for ep in entry_points(group="hermes_agent.memory_providers")}
    assert "cmms" in found, "pip metadata has no hermes_agent.memory_providers entry point"
    provider = provider_from_entry_point(found["cmms"].load())
    assert isinstance(provider, CmmsMemoryProvider) and provider.name == "cmms"
    provider.initialize("s1", hermes_home=str(kw_home), platform="cli", agent_context="primary")
    try:
        provider.sync_turn(FACT, "Noted.", session_id="s1")
        assert FACT in provider.prefetch("When does the deploy key rotate?")
    finally:
        provider.shutdown()


def test_the_entry_points_directory_holds_the_cli_hermes_looks_for():
    """0.20+ looks for cli.py beside the entry point's package; load it as 0.19's
    discover_plugin_cli_commands loads a provider's cli.py (by path) and build its parser."""
    import argparse

    module = entry_points(group="hermes_agent.memory_providers")["cmms"].load()
    cli_file = Path(module.__file__).parent / "cli.py"
    spec = importlib.util.spec_from_file_location("_probe_cmms_cli", cli_file)
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    parser = argparse.ArgumentParser(prog="hermes cmms")
    cli.register_cli(parser)
    args = parser.parse_args(["search", "deploy key", "--limit", "3"])
    assert (args.query, args.limit, args.func) == ("deploy key", 3, cli.cmms_command)


# -- recall_status ----------------------------------------------------------------------------


def test_recall_status_counts_what_the_last_prefetch_injected(kw_home):
    writer = _provider(kw_home, session="old")
    writer.sync_turn(FACT, "Noted.", session_id="old")
    writer.handle_tool_call("cmms_remember", {"content": "The staging cluster is in Frankfurt."})
    writer.shutdown()
    p = _provider(kw_home, session="new")
    try:
        assert p.recall_status() is None  # no prefetch yet
        block = p.prefetch("staging cluster")
        status = p.recall_status()
        assert (status.provider_label, status.glyph) == ("cmms", "🧠")
        assert FACT in block and "Frankfurt" in block
        assert status.count == len([line for line in block.splitlines() if line.startswith("- ")]) == 3
        assert p.prefetch("zebra migration patterns") == ""
        assert p.recall_status() is None  # describes only the last prefetch
        p.prefetch("staging cluster")
        p.on_turn_start(2, "ok", remaining_tokens=90_000, model="m", platform="cli", tool_count=12)
        assert p.recall_status() is None  # a new turn has recalled nothing yet
    finally:
        p.shutdown()


def test_on_hermes_0_19_the_cli_status_line_says_what_was_recalled(kw_home):
    """0.19 has no recall line; its CLI hands providers status_callback (agent._emit_status)."""
    assert not HOST_SHOWS_RECALL
    writer = _provider(kw_home, session="old")
    writer.handle_tool_call("cmms_remember", {"content": FACT})
    writer.shutdown()
    said = []
    p = _provider(kw_home, session="new", status_callback=said.append)
    try:
        p.prefetch("When does the deploy key rotate?")
        p.prefetch("zebra migration patterns")
        p.prefetch("thanks!")
    finally:
        p.shutdown()
    assert said == ["🧠 cmms recalled 1 memory"]


# -- unavailable_reason, inspection, backup ---------------------------------------------------


def test_unavailable_reason_says_why_in_one_sentence(home, monkeypatch):
    assert CmmsMemoryProvider().unavailable_reason() == ""
    monkeypatch.setenv("CMMS_DATABASE_URL", f"sqlite:///file:{home}/ro.db?mode=ro&uri=true")
    reason = CmmsMemoryProvider().unavailable_reason()
    assert reason and reason.endswith(".") and "\n" not in reason
    # Hermes 0.20+ shows the reason and leaves cmms out; 0.19 would drop it without a word, so
    # there cmms loads and says itself that memory is off (tests/doors/test_memory_off.py)
    assert CmmsMemoryProvider().is_available() is not HOST_SAYS_UNAVAILABLE


def test_initialize_for_inspection_opens_nothing_and_starts_no_thread(home):
    before = set(threading.enumerate())
    p = CmmsMemoryProvider()
    p.initialize_for_inspection("s1", hermes_home=str(home), platform="telegram", user_id="42")
    assert p.scope == "user:telegram:42" and p.service is None
    assert "cmms_recall" in p.system_prompt_block()
    assert {s["name"] for s in p.get_tool_schemas()} >= {"cmms_recall", "cmms_remember"}
    assert set(threading.enumerate()) == before, "a thread started"
    assert not (home / "cmms").exists(), "the store was opened"
    assert p.prefetch("anything at all") == ""
    p.shutdown()


def test_backup_paths_work_without_initialize(home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere" / "memories.db"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"")  # backup_paths names what exists outside the Hermes home
    monkeypatch.setenv("CMMS_DATABASE_URL", f"sqlite:///{elsewhere}")
    assert str(elsewhere) in CmmsMemoryProvider().backup_paths()
    assert not (home / "cmms").exists()  # nothing opened


def test_on_memory_write_takes_the_0_20_metadata(kw_home):
    p = _provider(kw_home)
    try:
        p.on_memory_write("add", "memory", "The user prefers tea.", metadata={
            "write_origin": "assistant_tool", "execution_context": "foreground", "session_id": "s1",
            "platform": "cli", "tool_name": "memory"}, task_id="t1")
        assert "tea" in p.prefetch("What does the user like to drink?")
    finally:
        p.shutdown()


# -- trivial prompts --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "/help", "/model gpt", "ok", "OK.", "thanks!", "Thank you",
                                  "hi", "continue", "next?", "lgtm", "yes", "got it!!", "k"])
def test_trivial_prompts_are_trivial(text):
    assert is_trivial_prompt(text)


@pytest.mark.parametrize("text", ["ok, when does the deploy key rotate?", "thanks for the deploy key",
                                  "next Monday", "hi there, what is my cat called?"])
def test_prompts_with_content_are_not(text):
    assert not is_trivial_prompt(text)


def test_a_trivial_prompt_skips_recall_that_a_real_one_gets(kw_home):
    writer = _provider(kw_home, session="old")
    writer.sync_turn("ok thanks, next the deploy key: continue with the Monday rotation", "Noted.",
                     session_id="old")
    writer.shutdown()
    p = _provider(kw_home, session="new")
    try:
        for text in ("ok", "thanks!", "next", "continue.", "/deploy key"):
            assert p.prefetch(text) == "", text
        assert "Monday rotation" in p.prefetch("ok, and the deploy key?")
    finally:
        p.shutdown()


# -- the recall line in a real Hermes 0.19 CLI agent --------------------------------------------


@pytest.mark.slow
@pytest.mark.one_backend  # (a real Hermes process; the recall counts above run on both backends)
def test_a_real_hermes_cli_agent_prints_the_recall_line(home, tmp_path):
    """AIAgent built as the CLI builds it (platform cli: Hermes hands the provider its
    status_callback) prints "🧠 cmms recalled N memories" on the turn that recalled something."""
    import json
    import subprocess
    import sys

    from test_hermes_e2e import AGENT_DRIVER, CAT, QUESTION, QUIET_ENV, FakeLLM, configure
    from conftest import subprocess_env

    log = tmp_path / "llm.jsonl"
    server = subprocess.Popen([sys.executable, str(Path(__file__).parents[1] / "fake_llm.py"), str(log)],
                              stdout=subprocess.PIPE, text=True)
    try:
        llm = FakeLLM(server, int(server.stdout.readline().split()[1]), log)
        configure(home, llm)
        script = tmp_path / "driver.py"
        script.write_text(AGENT_DRIVER, encoding="utf-8")
        agent = {"base_url": llm.base_url, "api_key": "sk-fake", "provider": "custom",
                 "model": "fake-model", "platform": "cli"}
        outs = [subprocess.run([sys.executable, str(script), json.dumps({"agent": agent, "messages": [text]})],
                               env=subprocess_env(home, CMMS_EMBEDDER="none", **QUIET_ENV), capture_output=True,
                               text=True, timeout=120).stdout for text in (CAT, QUESTION)]
    finally:
        server.terminate()
        server.wait(10)
    assert "🧠 cmms recalled" not in outs[0]  # nothing to recall in the first session
    assert re.search(r"🧠 cmms recalled \d+ memor(y|ies)", outs[1]), outs[1][-2000:]
