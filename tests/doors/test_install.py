"""install-hermes-plugin against real Hermes: its memory loader, CLI, plugin manager and gateway hooks.

Hermes' plugin manager and gateway hook registry run in this process (fresh instances, as a
starting Hermes makes them); `hermes memory status` and `hermes plugins list` run as the real
command, once each."""
from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import hermes_cmms
from hermes_cmms import InvalidInput, MemoryService, Settings
from hermes_cmms.install import install, uninstall
from hermes_cmms.provider import CmmsMemoryProvider

from conftest import REPO, hermes_bin, subprocess_env
from db import on_postgres, sql

TEMPLATES = REPO / "install" / "templates"
PLUGIN = TEMPLATES / "plugin"  # the directory plugin: what the catalog points at, what install writes

COMMENTED_CONFIG = """\
# my Hermes setup
model:
  default: gpt-5  # the good one
memory:
  memory_enabled: true
  # picked after a long evening
  provider: holographic
plugins:
  enabled:
    - disk-cleanup
"""


def tree(home: Path) -> dict[str, bytes | None]:
    """Every path under `home` with its bytes (None for directories)."""
    return {str(p.relative_to(home)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(home.rglob("*"))}


def run(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, env=subprocess_env(home, CMMS_EMBEDDER="none", **env),
                            capture_output=True, text=True, timeout=120, cwd=home)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def open_session(home: Path, scope: str, session_id: str) -> None:
    service = MemoryService(Settings.load(home, embedder="none"))
    try:
        service.retain_turn(scope, session_id, "hi", "hello")
        assert service.store.unflushed_sessions(scope=scope) == [(scope, session_id)]
    finally:
        service.close()


def unflushed(home: Path, scope: str) -> list:
    service = MemoryService(Settings.load(home, embedder="none"))
    try:
        return service.store.unflushed_sessions(scope=scope)
    finally:
        service.close()


# -- the package's own files ---------------------------------------------------------------


def test_manifest_satisfies_hermes():
    manifest = yaml.safe_load((PLUGIN / "plugin.yaml").read_text(encoding="utf-8"))
    assert manifest["name"] == "cmms" and manifest["kind"] == "standalone"
    assert manifest["version"] == hermes_cmms.__version__
    assert manifest["hooks"] == ["on_session_finalize"]
    assert "pip_dependencies" not in manifest  # pyproject.toml declares them
    assert "MemoryProvider" in (PLUGIN / "__init__.py").read_text(encoding="utf-8")[:8192]


@pytest.mark.quick
def test_install_writes_the_directory_plugin_as_it_is(home):
    install(home)
    ours = {str(p.relative_to(PLUGIN)): p.read_bytes() for p in PLUGIN.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    assert {"__init__.py", "plugin.yaml", "cli.py", "config_schema.py", "pyproject.toml",
            "dashboard/plugin_api.py"} <= set(ours)
    written = home / "plugins" / "cmms"
    assert {str(p.relative_to(written)): p.read_bytes() for p in written.rglob("*") if p.is_file()} == ours


# -- real Hermes sees what install wrote -----------------------------------------------------


def test_hermes_memory_loader_returns_our_provider(home, monkeypatch):
    install(home)
    monkeypatch.delitem(sys.modules, "_hermes_user_memory.cmms", raising=False)
    from plugins.memory import find_provider_dir, load_memory_provider

    assert find_provider_dir("cmms") == home / "plugins" / "cmms"
    assert isinstance(load_memory_provider("cmms"), CmmsMemoryProvider)


def test_hermes_memory_status_reports_cmms_active_and_available(home):
    install(home)
    out = run(home, hermes_bin(), "memory", "status").stdout
    assert re.search(r"Provider:\s+cmms\n", out), out
    assert re.search(r"Plugin:\s+installed ✓", out), out
    assert re.search(r"Status:\s+available ✓", out), out
    assert re.search(r"• cmms\s+\(local\) ← active", out), out


@pytest.mark.store
def test_general_plugin_manager_loads_the_finalize_hook_and_it_flushes(home, monkeypatch):
    from hermes_cli import plugins

    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    install(home)
    open_session(home, "local:default", "s1")
    manager = plugins.PluginManager()
    manager.discover_and_load()
    info = next(p for p in manager.list_plugins() if p["key"] == "cmms")
    assert (info["kind"], info["source"], info["enabled"], info["error"]) == ("standalone", "user", True, None)
    assert manager.has_hook("on_session_finalize") and info["hooks"] == 1
    manager.invoke_hook("on_session_finalize", session_id="s1", platform="cli", reason="shutdown")
    assert unflushed(home, "local:default") == []
    listing = run(home, hermes_bin(), "plugins", "list", "--plain", "--no-bundled").stdout
    assert re.search(r"^enabled\s+user\s+0\.1\.0\s+cmms$", listing, re.M), listing


@pytest.mark.store
def test_gateway_hook_loads_and_session_end_flushes_that_user(home, monkeypatch, capsys, caplog):
    from gateway import hooks
    from gateway.hooks import HookRegistry

    # gateway.hooks reads HERMES_HOME once, when first imported (in the gateway's process, after
    # HERMES_HOME is set): the directory it would have read for this home
    monkeypatch.setattr(hooks, "HOOKS_DIR", home / "hooks")
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    install(home)
    open_session(home, "user:telegram:42", "s1")
    open_session(home, "user:telegram:7", "s2")
    capsys.readouterr()
    registry = HookRegistry()
    with caplog.at_level(logging.WARNING):
        registry.discover_and_load()
        asyncio.run(registry.emit("session:end", {"platform": "telegram", "user_id": "42", "session_key": "k"}))
    out = capsys.readouterr()
    assert "[hooks] Loaded hook 'cmms-session-flush' for events: ['session:end', 'session:reset']" in out.out
    assert "Error" not in out.out and "flush failed" not in out.err + caplog.text, out.out + out.err + caplog.text
    assert unflushed(home, "user:telegram:42") == []
    assert unflushed(home, "user:telegram:7") == [("user:telegram:7", "s2")]


# -- config.yaml, idempotence, dry run, uninstall ---------------------------------------------


@pytest.mark.quick
def test_install_keeps_comments_and_uninstall_restores_the_previous_provider(home):
    config = home / "config.yaml"
    config.write_text(COMMENTED_CONFIG, encoding="utf-8")
    lines = install(home)
    assert any("was holographic" in line for line in lines)
    text = config.read_text(encoding="utf-8")
    assert "# my Hermes setup" in text and "# the good one" in text and "# picked after" in text
    data = yaml.safe_load(text)
    assert data["memory"]["provider"] == "cmms" and data["memory"]["memory_enabled"] is True
    assert data["plugins"]["enabled"] == ["disk-cleanup", "cmms"]
    assert data["model"] == {"default": "gpt-5"}

    lines = uninstall(home)
    assert "restored memory.provider: holographic in config.yaml" in lines
    assert config.read_text(encoding="utf-8") == COMMENTED_CONFIG
    assert not (home / "plugins" / "cmms").exists()
    assert not (home / "hooks" / "cmms-session-flush").exists()


def test_uninstall_without_a_previous_provider_turns_memory_off(home):
    install(home)
    uninstall(home)
    data = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    assert data["memory"] == {"provider": ""}
    assert data["plugins"]["enabled"] == []


def test_second_install_changes_nothing(home):
    (home / "config.yaml").write_text(COMMENTED_CONFIG, encoding="utf-8")
    install(home)
    before = tree(home)
    lines = install(home)
    assert tree(home) == before
    assert lines[0] == f"hermes-cmms is already installed in {home}: nothing to do."
    assert lines[-1].startswith("Next step:")


def test_dry_runs_write_nothing(home):
    (home / "config.yaml").write_text(COMMENTED_CONFIG, encoding="utf-8")
    before = tree(home)
    lines = install(home, dry_run=True)
    assert tree(home) == before
    assert lines[0] == "Dry run: nothing is written."
    assert "would set memory.provider: cmms in config.yaml (was holographic; uninstall restores it)" in lines

    install(home)
    (home / "cmms").mkdir()
    installed = tree(home)
    lines = uninstall(home, purge=True, dry_run=True)
    assert tree(home) == installed
    assert f"would delete {home / 'cmms'}" in lines


@pytest.mark.store
def test_uninstall_keeps_memories_unless_purged(home):
    install(home)
    open_session(home, "local:default", "s1")
    lines = uninstall(home)
    assert sql(home, "SELECT content FROM memories ORDER BY seq") == [("hi",), ("hello",)]
    if not on_postgres(home):  # the embedded default keeps them in $HERMES_HOME/cmms, and says so
        assert (home / "cmms" / "cmms.db").exists()
        assert any(line.startswith("kept your memories in") for line in lines)

    install(home)
    lines = uninstall(home, purge=True)
    if not on_postgres(home):
        assert f"deleted {home / 'cmms'}" in lines
    else:  # purge deletes $HERMES_HOME/cmms only, and says the servers' data is kept
        assert any(line.startswith("note: memories stored at postgresql") for line in lines)
        assert any(line.startswith("note: vectors on the Chroma server") for line in lines)
        assert sql(home, "SELECT content FROM memories ORDER BY seq") == [("hi",), ("hello",)]
    assert not (home / "cmms").exists()


def test_uninstall_where_nothing_is_installed_changes_nothing(home):
    (home / "config.yaml").write_text(COMMENTED_CONFIG, encoding="utf-8")
    before = tree(home)
    assert uninstall(home) == [f"hermes-cmms is not installed in {home}: nothing to do."]
    assert tree(home) == before


def test_user_settings_survive_reinstall_and_go_only_with_purge(home):
    install(home)
    CmmsMemoryProvider().save_config({"recall_tokens": "300"}, str(home))
    uninstall(home)
    assert yaml.safe_load((home / "config.yaml").read_text())["memory"]["cmms"] == {"recall_tokens": 300}
    install(home)
    uninstall(home, purge=True)
    assert "cmms" not in yaml.safe_load((home / "config.yaml").read_text())["memory"]


# -- unusable input -------------------------------------------------------------------------


@pytest.mark.parametrize("text, fragment", [
    ("memory:\n  provider: [oops\n", "is not valid YAML"),
    ("plugins:\n  - a\n  - b\n", "config.yaml key 'plugins' holds"),
    ("plugins:\n  enabled: 3\n", "config.yaml key plugins.enabled holds 3"),
])
def test_unusable_config_is_refused_before_anything_is_written(home, text, fragment):
    (home / "config.yaml").write_text(text, encoding="utf-8")
    before = tree(home)
    with pytest.raises(InvalidInput) as error:
        install(home)
    assert fragment in str(error.value) and "\n" not in str(error.value)
    assert tree(home) == before


def test_a_file_is_not_a_hermes_home(tmp_path):
    (tmp_path / "home").write_text("")
    with pytest.raises(InvalidInput, match="is a file, not a directory"):
        install(tmp_path / "home")


def test_install_prepares_the_embedding_model_once(home, tmp_path, monkeypatch):
    """The first Hermes session then loads the model in a fraction of a second."""
    from hermes_cmms.install.installer import install
    from hermes_cmms.vectors import embedders

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lines = install(home)
    prepared = embedders.prepared_minilm(embedders.packaged_int8_minilm())
    assert f"prepared the embedding model in {prepared}" in lines and prepared.stat().st_size > 20 * 2**20
    storing = embedders.prepared_minilm(embedders.packaged_int8_minilm(), int8=True)  # what memories are stored with
    assert f"prepared the embedding model in {storing}" in lines and storing != prepared
    assert not any("prepared" in line for line in install(home, dry_run=True))
