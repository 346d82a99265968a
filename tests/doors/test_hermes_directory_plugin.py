"""The directory plugin (install/templates/plugin/) as Hermes 0.23 takes it, and as 0.19 does.

Hermes 0.19's own loader (plugins.memory), config-schema loader and Dashboard writer run here;
0.23 through the double tests/hermes023.py, built from HERMES-0.23.md. The install into a fresh
venv is tests/quality/test_plugin_install.py."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import hermes023
import hermes_cmms
from hermes_cmms import Settings
from hermes_cmms.common.config import PANEL_SOURCE, SETTINGS
from hermes_cmms.hermes import setup as cmms_setup
from hermes_cmms.provider import CmmsMemoryProvider

from conftest import REPO

PLUGIN = REPO / "install" / "templates" / "plugin"
HEAVY = ("sqlalchemy", "sqlmodel", "chromadb", "numpy", "onnxruntime", "tiktoken")
PUBLIC = {"agent.memory_provider", "plugins.memory.config_schema"}  # item 6: what our modules import at their top
HERMES_PACKAGES = ("agent", "plugins", "hermes_cli", "gateway", "hermes_constants", "tools", "utils", "run_agent")
KINDS = {"integer": "number", "number": "number", "boolean": "bool", "text": "text"}


def installed(home: Path) -> Path:
    """The plugin where `hermes plugins install` puts it: $HERMES_HOME/plugins/cmms/."""
    target = home / "plugins" / "cmms"
    shutil.copytree(PLUGIN, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture
def fresh_modules(monkeypatch):
    """Loading the plugin registers _hermes_user_memory.* modules: gone after the test."""
    for name in [n for n in sys.modules if n.startswith(("_hermes_user_memory", "_hermes_memory_config_schema"))]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in [n for n in sys.modules if n.startswith(("_hermes_user_memory", "_hermes_memory_config_schema"))]:
        del sys.modules[name]


# -- validation: a bare import loads nothing heavy ------------------------------------------

LOAD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import hermes023
heavy = lambda: sorted(m for m in {HEAVY} if m in sys.modules)
module = hermes023.import_plugin(sys.argv[2])
bare = heavy()
provider, ctx = hermes023.load_provider(sys.argv[2])
print(json.dumps({{"bare": bare, "constructed": heavy(), "class": type(provider).__name__, "calls": ctx.calls}}))
"""


@pytest.mark.quick
def test_bare_import_and_constructing_the_provider_load_no_engine(home):
    """`hermes plugins validate` imports the plugin bare, and Hermes' start-up registers (constructs)
    the provider: neither loads SQLAlchemy, SQLModel, Chroma, numpy, ONNX Runtime or tiktoken."""
    plugin = installed(home)
    done = subprocess.run([sys.executable, "-c", LOAD.format(HEAVY=set(HEAVY)), str(REPO / "tests"), str(plugin)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HERMES_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"bare": [], "constructed": [], "class": "CmmsMemoryProvider", "calls": []}


def top_level_imports(path: Path) -> set[str]:
    """The modules `path` imports when it is imported (not those inside its functions)."""
    tree, found = ast.parse(path.read_text(encoding="utf-8")), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_our_modules_import_only_public_hermes_surfaces_at_their_top():
    """Item 6: internal paths were removed in 0.23; a module-level import of one would break
    the plugin's import (and validation). Private helpers are imported inside functions, guarded."""
    sources = [*(REPO / "hermes_cmms").rglob("*.py"), *PLUGIN.rglob("*.py")]
    hermes = {name for path in sources for name in top_level_imports(path)
              if name.split(".")[0] in HERMES_PACKAGES}
    assert hermes and hermes <= PUBLIC, hermes - PUBLIC


# -- discovery and loading: 0.19's own loader, and the 0.23 double ---------------------------


def test_hermes_019_loader_finds_and_loads_the_directory_plugin(home, fresh_modules):
    from plugins.memory import discover_memory_providers, find_provider_dir, load_memory_provider

    plugin = installed(home)
    assert find_provider_dir("cmms") == plugin
    assert isinstance(load_memory_provider("cmms"), CmmsMemoryProvider)
    assert ("cmms", True) in [(name, available) for name, _, available in discover_memory_providers()]


def test_hermes_023_double_discovers_in_clash_order_and_loads(home, fresh_modules):
    plugin = installed(home)
    entry_point = Path(hermes_cmms.__file__).parent / "hermes_plugin"
    assert hermes023.is_memory_provider_dir(plugin)
    found = hermes023.provider_dirs(user=[plugin], entry_points=[("cmms", entry_point)])
    assert found["cmms"] == ("user", plugin)  # the directory plugin wins over the pip entry point
    assert hermes023.provider_dirs(entry_points=[("cmms", entry_point)])["cmms"] == ("entry point", entry_point)
    provider, ctx = hermes023.load_provider(plugin)
    assert isinstance(provider, CmmsMemoryProvider) and ctx.calls == []
    assert sys.modules["_hermes_user_memory.cmms"].__file__ == str(plugin / "__init__.py")


def test_a_plugin_past_8_kib_of_preamble_is_not_a_memory_provider_to_the_double(tmp_path):
    """The double's first-8-KiB rule is the one our __init__.py passes (not vacuous)."""
    late = tmp_path / "late"
    late.mkdir()
    (late / "__init__.py").write_text("#" * 8200 + "\nregister_memory_provider\n", encoding="utf-8")
    assert not hermes023.is_memory_provider_dir(late)


# -- declared dependencies (item 3) ----------------------------------------------------------


def test_the_plugin_declares_hermes_cmms_pinned_exactly_and_exempt_from_quarantine():
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert hermes023.declared_dependencies(PLUGIN) == [f"hermes-cmms=={hermes_cmms.__version__}"]
    assert project["version"] == hermes_cmms.__version__
    assert hermes023.dependency_problems(PLUGIN) == []
    assert hermes023.fresh_release_admitted(PLUGIN, "hermes-cmms")


def test_the_double_refuses_an_unbounded_dependency(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndependencies = ["hermes-cmms>=0.1", "chromadb==1.5.9"]\n'
        '[tool.uv.exclude-newer-package]\nhermes-cmms = false\n', encoding="utf-8")
    assert hermes023.dependency_problems(tmp_path) == ["hermes-cmms: no upper bound"]
    assert not hermes023.fresh_release_admitted(tmp_path, "hermes-cmms")


# -- the config panel (item 5) ---------------------------------------------------------------


def test_config_schema_declares_every_setting_typed(home, fresh_modules):
    schema = hermes023.config_schema(installed(home))  # loaded by path, importing only plugins.memory.config_schema
    ours = {field["key"]: field for field in cmms_setup.config_schema()}
    fields = {field.key: field for field in schema.fields}
    assert schema.name == "cmms" and list(fields) == list(SETTINGS) == list(ours)
    for key, field in fields.items():
        kind = "select" if "choices" in ours[key] else KINDS[ours[key]["type"]]
        assert field.kind == kind, key
        assert field.default == ("true" if ours[key]["default"] is True else str(ours[key]["default"])), key
        assert [option.value for option in field.options] == ours[key].get("choices", []), key
    entry_point_copy = Path(hermes_cmms.__file__).parent / "hermes_plugin" / "config_schema.py"
    assert entry_point_copy.read_bytes() == (PLUGIN / "config_schema.py").read_bytes()


def test_config_schema_importing_anything_else_is_refused_by_the_double(tmp_path):
    (tmp_path / "config_schema.py").write_text("import hermes_cmms\nCONFIG_SCHEMA = None\n", encoding="utf-8")
    with pytest.raises(ImportError, match="may import only plugins.memory.config_schema"):
        hermes023.config_schema(tmp_path)


SAVE_PANEL = """
from hermes_cli.web_server import _update_memory_provider_config
from plugins.memory.config_schema import get_provider_config_schema
schema = get_provider_config_schema("cmms")
_update_memory_provider_config(schema, {"recall_tokens": "900", "mirror": "false", "embedder": "none"})
print(schema.name, len(schema.fields))
"""


def test_hermes_019_reads_the_schema_and_cmms_uses_what_its_panel_saves(home, fresh_modules):
    """The Dashboard's declared panel (0.19's web server: `get_provider_config_schema`, then its
    writer) saves to $HERMES_HOME/cmms/config.json: cmms reads it there, and a later
    `hermes memory setup` (memory.cmms in config.yaml) wins over it again."""
    installed(home)
    # Hermes' web server, in a process of its own (importing it here would fix its state for the
    # dashboard tests): the schema by name, then the panel's save
    done = subprocess.run([sys.executable, "-c", SAVE_PANEL], capture_output=True, text=True, timeout=120,
                          cwd=home, env={**os.environ, "HERMES_HOME": str(home)})
    assert done.returncode == 0 and done.stdout.split() == ["cmms", str(len(SETTINGS))], done.stderr  # every setting
    settings = Settings.load(home)
    assert (settings.recall_tokens, settings.mirror, settings.embedder) == (900, "off", "none")
    assert settings.sources["recall_tokens"] == PANEL_SOURCE
    cmms_setup.save(home, {"recall_tokens": 1200})
    settings = Settings.load(home)
    assert (settings.recall_tokens, settings.mirror) == (1200, "off")
    assert settings.sources["recall_tokens"] == "config.yaml memory.cmms"


# -- the catalog entry (item 7) --------------------------------------------------------------

CATALOG = REPO / "packaging" / "catalog"


def pin_script(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CATALOG / "pin.py"), *argv], capture_output=True, text=True, timeout=60)


def test_the_pinned_catalog_entry_meets_the_catalog_rules():
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    done = pin_script("--repository", "https://github.com/example/hermes-cmms")
    assert done.returncode == 0, done.stderr
    entry = __import__("yaml").safe_load(done.stdout)
    assert hermes023.catalog_problems(entry, taken=["honcho", "hindsight", "mem0", "holographic"]) == []
    assert (entry["name"], entry["category"], entry["commit"]) == ("cmms", "memory", head)
    assert hermes023.is_memory_provider_dir(REPO / entry["subdirectory"])
    floor = next(r for r in tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["hermes"] if r.startswith("hermes-agent"))
    assert entry["requires_hermes"].replace(" ", "") == floor.removeprefix("hermes-agent") + ".0"
    assert "network use: none" in entry["disclosure"].lower()


def test_the_unpinned_entry_and_a_short_pin_are_refused():
    entry = hermes023.load_catalog_entry(CATALOG / "cmms.yaml")
    assert set(hermes023.catalog_problems(entry)) == {"commit: not a full SHA", "repository: not an https URL"}
    done = pin_script("--repository", "https://github.com/example/hermes-cmms", "--commit", "abc123")
    assert done.returncode == 2 and "full 40-character commit SHA" in done.stderr
