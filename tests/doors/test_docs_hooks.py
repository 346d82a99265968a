"""docs/hooks.md agrees with the hookspecs, and its examples run."""
from __future__ import annotations

import re
import tomllib
import types
from pathlib import Path

import pytest

from hermes_cmms.cli import main
from hermes_cmms.common.plugins import ALLOW_ENV, ENTRY_POINT_GROUP, make_plugin_manager, run_redactors

DOC = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
HOOK_NAME = re.compile(r"[a-z_][a-z0-9_]*")
SCOPE = "test:docs-hooks"


def sections(text: str) -> dict[str, str]:
    """`## heading` -> the text up to the next heading of any level."""
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    return {head[3:].strip(): body for head, body in zip(parts[1::2], parts[2::2])
            if head.startswith("## ")}


def code_blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced blocks tagged `lang`, in order."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", text, flags=re.M | re.S)
    return [body for tag, body in blocks if tag == lang]


def hook_specs() -> dict:
    """Hook name -> pluggy HookSpec (argnames, opts), from the real plugin manager."""
    relay = make_plugin_manager().hook
    return {name: caller.spec for name, caller in vars(relay).items()
            if getattr(caller, "spec", None) is not None}


DOC_TEXT = DOC.read_text()
DOC_SECTIONS = sections(DOC_TEXT)
SPECS = hook_specs()


@pytest.mark.quick
def test_the_specs_are_found():
    assert {"redact", "retain", "recall", "session_flush"} <= set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_hook_has_a_heading_with_its_exact_signature(name):
    assert name in DOC_SECTIONS, f"docs/hooks.md has no '## {name}' heading"
    first_line = DOC_SECTIONS[name].strip().splitlines()[0]
    signature = f"`{name}({', '.join(SPECS[name].argnames)})`"
    assert first_line == signature, f"'## {name}' should start with {signature}, not {first_line}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_hook_says_whether_it_is_firstresult(name):
    said = re.search(r"\*\*firstresult:\*\* (yes|no)\b", DOC_SECTIONS.get(name, ""))
    assert said, f"'## {name}' does not say whether it is firstresult"
    assert (said.group(1) == "yes") == bool(SPECS[name].opts.get("firstresult"))


def test_no_heading_for_a_hook_that_does_not_exist():
    hooks_part = DOC_TEXT.split("\n# Hooks\n", 1)[1]
    documented = set(sections(hooks_part)) | {h for h in DOC_SECTIONS if HOOK_NAME.fullmatch(h)}
    assert documented - set(SPECS) == set()


def load_example() -> types.ModuleType:
    """The doc's example plugin, executed as a module."""
    [source] = code_blocks(DOC_SECTIONS["Example: a custom redactor"], "python")
    module = types.ModuleType("docs_example_redactor")
    exec(compile(source, f"{DOC}:example", "exec"), module.__dict__)
    return module


def test_example_redactor_runs_with_the_builtin_on_a_plugin_manager():
    pm = make_plugin_manager(load_entry_points=False)
    pm.register(load_example(), name="acme-redactor")
    assert "redact" in [h.name for h in pm.get_hookcallers(pm.get_plugin("acme-redactor"))]
    assert run_redactors(pm, "ticket ACME-482913 and password: hunter22", SCOPE) == \
        "ticket [REDACTED:acme-ticket] and password: [REDACTED:password]"


def test_example_redactor_gives_the_stored_text_the_doc_shows(keyword_service):
    said = re.search(r"`([^`]+)` is stored as\s+`([^`]+)`", DOC_SECTIONS["Example: a custom redactor"])
    keyword_service.pm.register(load_example(), name="acme-redactor")
    memory_id = keyword_service.remember(SCOPE, said.group(1))
    assert keyword_service.store.get([memory_id], SCOPE)[memory_id].content == said.group(2)


def test_entry_point_snippet_uses_the_real_group_and_allow_list_variable():
    [snippet] = code_blocks(DOC_SECTIONS["Writing a plugin"], "toml")
    assert list(tomllib.loads(snippet)["project"]["entry-points"]) == [ENTRY_POINT_GROUP]
    assert f"`{ALLOW_ENV}`" in DOC_SECTIONS["Writing a plugin"]


def test_plugins_command_output_matches_the_doc(monkeypatch, capsys):
    monkeypatch.setenv(ALLOW_ENV, "")
    assert main(["plugins"]) == 0
    [shown] = code_blocks(DOC_SECTIONS["Writing a plugin"], "text")
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(shown.splitlines())
