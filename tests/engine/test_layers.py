"""The floor plan holds: import-linter's contracts (pyproject.toml [tool.importlinter]) pass over
the package as installed, and an import pointing up would be caught."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")
REPO = Path(__file__).resolve().parents[2]


def lint(env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([str(REPO / ".ci" / "lint-layers"), sys.executable], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.quick
def test_every_contract_is_kept():
    done = lint()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout and " kept" in done.stdout


@pytest.mark.parametrize("line", [
    "from ..service import MemoryService\n",  # module level
    "def f():\n    from ..knowledge import graph\n",  # function level counts too
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..hermes.provider import CmmsMemoryProvider\n",
])
def test_an_import_pointing_up_from_the_store_is_caught(tmp_path, line):
    planted = tmp_path / "planted_upward.py"
    planted.write_text(line)
    done = lint({"CMMS_LAYERS_PLANT": f"{planted}:store"})
    assert done.returncode != 0
    assert "hermes_cmms.store.planted_upward ->" in done.stdout


@pytest.mark.parametrize("folder, line, caught", [
    ("cli", "def f():\n    from ..store.store import Store\n", "hermes_cmms.cli.planted_door -> hermes_cmms.store"),
    ("hermes", "from ..recall.shape import hit_dict\n", "hermes_cmms.hermes.planted_door -> hermes_cmms.recall"),
    ("cli", "from ..engine import Engine\n", "hermes_cmms.cli.planted_door -> hermes_cmms.engine"),
])
def test_a_door_reaching_past_the_facade_is_caught(tmp_path, folder, line, caught):
    planted = tmp_path / "planted_door.py"
    planted.write_text(line)
    done = lint({"CMMS_LAYERS_PLANT": f"{planted}:{folder}"})
    assert done.returncode != 0
    assert "A door goes through the facade" in done.stdout and caught in done.stdout


@pytest.mark.parametrize("folder", ["recall", "knowledge", "hermes"])
def test_sql_outside_the_store_is_caught(tmp_path, folder):
    planted = tmp_path / "planted_sql.py"
    planted.write_text("def f():\n    from sqlalchemy import select\n    return select\n")
    done = lint({"CMMS_LAYERS_PLANT": f"{planted}:{folder}"})
    assert done.returncode != 0
    assert f"hermes_cmms.{folder}.planted_sql -> sqlalchemy" in done.stdout


def test_the_architecture_page_lists_every_module_where_it_lives():
    """docs/architecture.md's table of folders is the code's: each module it names exists in its
    folder, and each module of a folder is named."""
    import re
    doc = (REPO / "docs" / "architecture.md").read_text()
    table = doc[doc.index("## Where each part lives"):doc.index("### Paths that stay")]
    rows = re.findall(r"^\| `([\w/.]+)`(?: \(top-level dir\))? \| ([^|]+) \|", table, re.M)
    assert len(rows) >= 14
    for place, names in rows:
        base = REPO / place if place.split("/")[0] in ("mcp_bridge", "install", "hooks") else REPO / "hermes_cmms" / place
        named = {n.strip().strip("`").rstrip("/") for n in names.split(",")} - {"Engine", "MemoryService"}
        if base.suffix == ".py":
            assert base.is_file(), place
            continue
        on_disk = {p.stem for p in base.glob("*.py") if p.stem != "__init__"} | {
            p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
        assert named == on_disk, (place, named ^ on_disk)


def test_a_wheel_ships_every_folder():
    """pyproject's explicit `packages` names every package folder: an editable install finds a
    folder left out, a wheel (what users install) would ship without it."""
    import tomllib
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "hermes_cmms").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert folders <= listed, folders - listed


@pytest.mark.one_backend
def test_the_paths_people_use_keep_their_faces(tmp_path):
    """The installed Hermes shims, the gateway hook, the console script and extractor plugins
    import these paths: each is the moved module itself (so a patch through either name holds)."""
    import importlib
    import os
    (tmp_path / "config.yaml").write_text("memory:\n  provider: cmms\n")  # a Hermes home: the dev server opens its store on import
    env = {**os.environ, "HERMES_HOME": str(tmp_path)}
    code = (
        "import importlib, hermes_cmms.provider as p, hermes_cmms.hermes.provider as q; assert p is q\n"
        "import hermes_cmms.extract._facts as a, hermes_cmms.knowledge.extract._facts as b; assert a is b\n"
        "from hermes_cmms.extract import Item; from hermes_cmms.knowledge.extract import Item as I; assert Item is I\n"
        "from hermes_cmms.cli import main; from hermes_cmms.hooks.specs import hookimpl; import hermes_cmms.mcp_bridge.dev_server\n"
        "from hermes_cmms import MemoryService, Settings, NewMemory, hookimpl as h; assert h is hookimpl\n"
        "from hermes_cmms.provider import CmmsMemoryProvider, on_gateway_event, on_session_finalize\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/", env=env)
    assert done.returncode == 0, done.stderr
    cli = subprocess.run([sys.executable, "-m", "hermes_cmms.cli", "--help"], capture_output=True, text=True,
                         timeout=120, cwd="/", env=env)
    assert cli.returncode == 0 and "install-hermes-plugin" in cli.stdout
    assert importlib.import_module("hermes_cmms.cli").main.__module__.startswith("hermes_cmms.cli.")
