"""`hermes memory setup` / `hermes memory status` with cmms: every setting asked with its type,
saved typed and checked, read back; status shows what an empty setting means. The wizard runs
once through the real `hermes` command; the rest calls the same Hermes functions in this process
(test_install runs `hermes memory status` as the real command)."""
from __future__ import annotations

import io
import subprocess

import pytest
import yaml

from conftest import SERVER, hermes_bin, subprocess_env
from hermes_cmms import InvalidInput, Settings
from hermes_cmms.common.config import FIELD_TYPES, SETTINGS
from hermes_cmms.install import install
from hermes_cmms.provider import CmmsMemoryProvider


def hermes(home, *argv, stdin=""):
    result = subprocess.run([hermes_bin(), *argv], input=stdin, capture_output=True, text=True,
                            timeout=120, cwd=home, env=subprocess_env(home, TIRITH_ENABLED="false"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def own_section(home) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))["memory"]["cmms"]


# Answers for the wizard, one line per prompt, in the order of SETTINGS (on a pipe a choice is
# typed, not picked; a bad answer is asked again).
ANSWERS = {
    "database_url": [""],
    "chroma_url": [""],
    "chroma_buckets": [""],
    "embedder": ["word2vec", "none"],
    "embedder_dtype": [""],
    "recall_tokens": ["lots", "20", "900"],  # not a number, below the minimum, then fine
    "scheduler": ["sometimes", "off"],
    "sweep_interval_s": [""],
    "decay_interval_s": ["7200"],
    "consolidate_interval_s": [""],
    "consolidation_llm": [""],
    "snapshot_days": ["45"],
    "recall_events": [""],
    "llm": ["ftp://nope", "off"],
    "llm_model": [""],
    "mirror": [""],
    "inbox": [""],
}
SAVED = {"embedder": "none", "recall_tokens": 900, "scheduler": False, "decay_interval_s": 7200,
         "snapshot_days": 45}  # llm: "off" is what it was, so it stays unwritten


def test_the_schema_types_every_setting():
    schema = {f["key"]: f for f in CmmsMemoryProvider().get_config_schema()}
    assert list(schema) == list(SETTINGS)
    assert {f["type"] for f in schema.values()} <= {"text", "integer", "number", "boolean"}
    assert schema["recall_tokens"] == {**schema["recall_tokens"], "type": "integer", "default": 600,
                                       "minimum": 50, "maximum": 8000, "step": 50}
    assert schema["scheduler"]["type"] == "boolean" and schema["scheduler"]["default"] is True
    for name, spec in FIELD_TYPES.items():
        assert {k: schema[name][k] for k in spec} == spec
    assert schema["embedder"]["choices"][0] == "auto"


def test_hermes_memory_setup_asks_every_setting_and_saves_them_typed(home):
    assert list(ANSWERS) == list(SETTINGS), "a setting the wizard answers do not cover"
    install(home)
    stdin = "\n".join(line for name in SETTINGS for line in ANSWERS[name]) + "\n"
    out = hermes(home, "memory", "setup", "cmms", stdin=stdin)
    assert "Setting recall_tokens must be a whole number, not 'lots'." in out
    assert "Setting recall_tokens must be between 50 and 8000, not 20." in out
    assert "Unknown llm 'ftp://nope'" in out and "Unknown embedder 'word2vec'" in out
    assert "Setting scheduler must be on or off, not 'sometimes'." in out
    assert "(on/off) [on]" in out and "(auto/onnx/chroma-default/sentence-transformers/none) [auto]" in out
    section = own_section(home)
    assert {k: section[k] for k in SAVED} == SAVED
    assert not set(section) - set(SAVED) - {"plugins_enabled_by_install"}  # Enter kept the rest
    assert all(type(section[k]) is type(v) for k, v in SAVED.items())  # 900, not '900'
    settings = Settings.load(home)
    assert (settings.recall_tokens, settings.scheduler, settings.snapshot_days) == (900, "off", 45)
    assert yaml.safe_load((home / "config.yaml").read_text())["memory"]["provider"] == "cmms"


def test_the_picker_path_of_hermes_memory_setup_reaches_the_same_wizard(home, monkeypatch, capsys):
    """`hermes memory setup` without a name: Hermes' own cmd_setup, its provider picker (which
    returns "cancel" on a pipe, so it is given the answer here) handing over to post_setup."""
    (home / "config.yaml").write_text("memory:\n  provider: ''\n  cmms:\n    recall_tokens: 700\n")
    install(home)
    from hermes_cli import memory_setup

    names = [name for name, _, _ in memory_setup._get_available_providers()]
    monkeypatch.setattr(memory_setup, "_curses_select", lambda title, items, **kw: names.index("cmms"))
    monkeypatch.setattr("sys.stdin", io.StringIO("\n" * len(SETTINGS)))  # Enter at every prompt
    memory_setup.cmd_setup(None)
    out = capsys.readouterr().out
    assert "(50-8000) [700]" in out  # the value already saved is the one offered
    assert own_section(home)["recall_tokens"] == 700
    assert "Settings unchanged" in out


@pytest.mark.quick
def test_save_config_types_a_forms_strings_and_refuses_bad_values(home):
    (home / "config.yaml").write_text("# mine\nmemory:\n  provider: cmms\n")
    provider = CmmsMemoryProvider()
    provider.save_config({"recall_tokens": "1200", "scheduler": "off", "mirror": "True",
                          "snapshot_days": "45", "inbox": "", "unknown": "x"}, str(home))
    assert own_section(home) == {"recall_tokens": 1200, "scheduler": False, "mirror": True, "snapshot_days": 45}
    before = (home / "config.yaml").read_text()
    for values, sentence in (({"recall_tokens": "9000"}, "must be between 50 and 8000, not 9000."),
                             ({"mirror": "maybe"}, "Setting mirror must be on or off, not 'maybe'."),
                             ({"embedder": "word2vec"}, "Unknown embedder 'word2vec'")):
        with pytest.raises(InvalidInput, match=sentence.replace("(", r"\(").replace(".", r"\.")):
            provider.save_config(values, str(home))
    assert (home / "config.yaml").read_text() == before


def test_hermes_memory_status_says_what_each_empty_setting_means(home, capsys):
    """Hermes' own cmd_status, which `hermes memory status` runs."""
    from hermes_cli import memory_setup

    install(home)
    capsys.readouterr()
    memory_setup.cmd_status(None)
    out = capsys.readouterr().out
    assert "(embedded)" not in out
    assert "inbox: (none: no folder is watched)  [default]" in out
    assert "llm_model: (not used: llm is not a URL)  [default]" in out
    if not SERVER:  # (the server backend sets both through the environment)
        assert f"chroma_url: (embedded Chroma in {home / 'cmms' / 'chroma'})  [default]" in out
        assert f"database_url: sqlite:///{home / 'cmms' / 'cmms.db'}  [default]" in out
