"""Attacks on `hermes memory setup` / save_config: values a form or a hand-edited
config.yaml really hands over, through Hermes' own setup code (run in this process; the real
`hermes memory setup` command runs in test_hermes_setup) and the real YAML files."""
from __future__ import annotations

import io

import pytest
import yaml

from hermes_cmms import Settings
from hermes_cmms.common.config import SETTINGS
from hermes_cmms.install import install
from hermes_cmms.provider import CmmsMemoryProvider


def own_section(home) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))["memory"]["cmms"]


@pytest.mark.quick
def test_setup_with_a_broken_saved_setting_says_so_in_one_sentence(home, monkeypatch, capsys):
    """A value already in config.yaml that no longer passes the checks (kept with Enter) made
    `hermes memory setup` end in a traceback; it says why nothing was saved instead (through
    Hermes' cmd_setup_provider, which `hermes memory setup cmms` runs: it raises nothing)."""
    from hermes_cli import memory_setup

    install(home)
    path = home / "config.yaml"
    path.write_text(path.read_text().replace("  cmms:\n", "  cmms:\n    llm: bogus\n"), encoding="utf-8")
    before = path.read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO("\n" * len(SETTINGS)))
    capsys.readouterr()
    memory_setup.cmd_setup_provider("cmms")
    out = capsys.readouterr().out
    assert "  Not saved: Unknown llm 'bogus'; choose off, hermes, or the http(s) URL of an " \
           "OpenAI-compatible endpoint.\n" in out, out[-2000:]
    assert path.read_text() == before


def test_an_emptied_number_or_switch_goes_back_to_its_default(home):
    """A form field the user clears arrives as '' (or None): the setting is removed, as for a
    text field, instead of 'must be a whole number, not '''."""
    (home / "config.yaml").write_text("memory:\n  cmms:\n    recall_tokens: 700\n    scheduler: false\n"
                                      "    inbox: /tmp/in\n")
    CmmsMemoryProvider().save_config({"recall_tokens": "", "scheduler": None, "inbox": " "}, str(home))
    assert own_section(home) is None or own_section(home) == {}
    settings = Settings.load(home)
    assert (settings.recall_tokens, settings.scheduler, settings.inbox) == (600, "on", "")


def test_text_that_yaml_reads_as_a_boolean_is_saved_as_text(home):
    """`on`, `no`, `Yes`... written bare were read back (PyYAML, Hermes' own reader too) as
    booleans: a model named "on" became "True"."""
    provider = CmmsMemoryProvider()
    for word in ("on", "no", "Yes", "OFF", "true", "null", "~"):
        provider.save_config({"llm_model": word, "inbox": f"{word}"}, str(home))
        settings = Settings.load(home)
        assert (settings.llm_model, settings.inbox) == (word, word), word
        assert own_section(home) == {"llm_model": word, "inbox": word}
    provider.save_config({"llm_model": "line one\nline: two", "inbox": "it's"}, str(home))
    assert own_section(home) == {"llm_model": "line one\nline: two", "inbox": "it's"}


def test_an_empty_switch_in_config_yaml_is_offered_as_its_default(home, monkeypatch, capsys):
    """`scheduler:` left empty by hand means the default (on), as Settings reads it: the wizard
    offers [on], not [None] or [off], and Enter keeps it."""
    from hermes_cmms.hermes.setup import run_wizard

    (home / "config.yaml").write_text("memory:\n  cmms:\n    scheduler:\n    mirror: ''\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("\n" * len(SETTINGS)))
    run_wizard(str(home), yaml.safe_load((home / "config.yaml").read_text()))
    out = capsys.readouterr().out
    assert "Background jobs (TTL sweep, decay, consolidation) (on/off) [on]:" in out
    assert "Mirror MEMORY.md / USER.md into memory (on/off) [on]:" in out
    assert Settings.load(home).scheduler == "on"
