"""Third-party hook implementations change the engine's behaviour, in-process and via entry points."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hermes_cmms import hookimpl
from hermes_cmms.provider import CmmsMemoryProvider

SCOPE = "test:hooks"
PLUGIN_DIR = Path(__file__).parents[1] / "plugin_fixture"


class AcmeRedactor:
    """Masks the company's internal ticket secrets, which the built-in knows nothing about."""

    @hookimpl
    def redact(self, text):
        return re.sub(r"ACME-[0-9]{6}", "[REDACTED:acme]", text)


class FixedRecall:
    @hookimpl(tryfirst=True)
    def recall(self, query, budget_tokens):
        return f"FIXED BLOCK for {query!r} within {budget_tokens} tokens"


class DeferringRecall:
    calls: list = []

    @hookimpl(tryfirst=True)
    def recall(self, scope, query):
        self.calls.append((scope, query))
        return None


@pytest.mark.quick
def test_registered_redactor_masks_its_pattern_and_the_builtin_still_runs(keyword_service):
    keyword_service.pm.register(AcmeRedactor(), name="acme")
    memory_id = keyword_service.remember(
        SCOPE, "door code ACME-482913, api token sk-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe")
    stored = keyword_service.store.get([memory_id], SCOPE)[memory_id].content
    assert stored == "door code [REDACTED:acme], api token [REDACTED:openai-key]"
    assert keyword_service.search(SCOPE, "482913") == []


def test_without_the_plugin_the_custom_pattern_is_kept(keyword_service):
    memory_id = keyword_service.remember(SCOPE, "door code ACME-482913")
    assert keyword_service.store.get([memory_id], SCOPE)[memory_id].content == "door code ACME-482913"


def test_tryfirst_recall_overrides_the_builtin_block(keyword_service):
    keyword_service.remember(SCOPE, "The ferry leaves at seven")
    assert "ferry" in keyword_service.recall(SCOPE, "ferry")
    keyword_service.pm.register(FixedRecall())
    assert keyword_service.recall(SCOPE, "ferry", budget_tokens=99) == \
        "FIXED BLOCK for 'ferry' within 99 tokens"


def test_recall_impl_returning_none_defers_to_the_builtin(keyword_service):
    keyword_service.remember(SCOPE, "The ferry leaves at seven")
    keyword_service.pm.register(DeferringRecall())
    block = keyword_service.recall(SCOPE, "ferry")
    assert "The ferry leaves at seven" in block
    assert DeferringRecall.calls[-1] == (SCOPE, "ferry")


@pytest.mark.store
def test_provider_prefetch_goes_through_the_hook(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    provider = CmmsMemoryProvider()
    provider.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary")
    try:
        provider.sync_turn("Remind me the ferry leaves at seven", "Noted.")
        assert "ferry leaves at seven" in provider.prefetch("ferry")
        provider.service.pm.register(FixedRecall())
        assert provider.prefetch("ferry").startswith("FIXED BLOCK for 'ferry'")
    finally:
        provider.shutdown()


# -- entry points, for real: a dist-info on sys.path ------------------------------------------

def _probe(home: Path) -> dict:
    """The plugins a new plugin manager finds through entry points, and what a service using
    it stores of a note holding an ACME secret."""
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.common.plugins import describe, make_plugin_manager

    pm = make_plugin_manager()
    service = MemoryService(Settings.load(home, embedder="none"), pm=pm)
    try:
        memory_id = service.remember("probe", "badge ACME-123456 issued")
        stored = service.store.get([memory_id], "probe")[memory_id].content
    finally:
        service.close()
    return {"plugins": describe(pm), "stored": stored}


@pytest.fixture
def clean_env(monkeypatch):
    """No allow-list, and the plugin's dist-info on sys.path (as an installed plugin's is)."""
    monkeypatch.delenv("CMMS_PLUGINS", raising=False)
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))


@pytest.mark.store
def test_entry_point_plugin_is_loaded_listed_and_fires(home, clean_env):
    found = _probe(home)
    plugins = {p["name"]: p["hooks"] for p in found["plugins"]}
    assert plugins["acme"] == ["redact"]
    assert "hermes_cmms.redact" in plugins and "hermes_cmms.hooks.auto_retain" in plugins
    assert "broken" not in plugins  # a plugin that fails to import is skipped, not fatal
    assert found["stored"] == "badge [REDACTED:acme] issued"


@pytest.mark.store
@pytest.mark.parametrize("allow,loaded", [("acme", True), ("", False), ("other,broken", False)])
def test_allow_list_decides_which_entry_points_load(home, clean_env, monkeypatch, allow, loaded):
    monkeypatch.setenv("CMMS_PLUGINS", allow)
    found = _probe(home)
    names = {p["name"] for p in found["plugins"]}
    assert ("acme" in names) is loaded
    assert "hermes_cmms.redact" in names  # built-ins are not subject to the allow-list
    expected = "badge [REDACTED:acme] issued" if loaded else "badge ACME-123456 issued"
    assert found["stored"] == expected


def test_a_recall_and_a_session_flush_enter_the_facade_once(keyword_service):
    """The built-in hooks work on the engine's parts: a recall or a flush that came in through the
    facade never calls the facade's verbs back (a trip back up, issue 28)."""
    keyword_service.retain_turn("test:once", "s1", "I live in Lisbon", "Noted.")
    entered = []
    for verb in ("search", "extract_session", "consolidate", "store_note", "remember", "learn", "retain_turn"):
        setattr(keyword_service, verb, lambda *a, _verb=verb, **k: entered.append(_verb))
    block = keyword_service.recall("test:once", "Where do I live? Lisbon", session_id="s1")
    keyword_service.flush_session("test:once", "s1")
    assert entered == []
    assert "I live in Lisbon" in block
    assert ("test:once", "s1") not in keyword_service.store.unflushed_sessions(scope="test:once")
    learned = keyword_service.page("test:once", tier="semantic")[0]
    assert [m.content for m in learned if m.kind == "fact"] == ["user lives in Lisbon"]
