"""The directory plugin installed the way Hermes' plugin package manager installs it: its
declared dependencies (pyproject.toml beside plugin.yaml: hermes-cmms, pinned) resolved by pip
into a fresh venv that sees Hermes' venv, then the plugin cloned by Hermes' own
`hermes plugins install` and loaded by its 0.19 loader and by the 0.23 double.

The fresh venv sees every package of this test venv (Hermes 0.19 and its dependencies: what
Hermes' core pins) except hermes-cmms itself, so pip really resolves the declared dependency: it
installs hermes-cmms from a wheel of this checkout and finds every dependency of it already
satisfied there. Nothing else may be installed: a dependency Hermes' venv holds at a version
hermes-cmms refuses would show up as an upgrade. About 15 s; no network but the pip registry
(the machine's, for a build dependency of nothing: everything it needs is local)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO, SERVER

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SERVER, reason="the install is the same on every backend: checked in the embedded pass")]

PLUGIN = REPO / "install" / "templates" / "plugin"
SUBDIR = "install/templates/plugin"  # the catalog entry's subdirectory
HEAVY = ("sqlalchemy", "sqlmodel", "chromadb", "numpy", "onnxruntime", "tiktoken")

LOAD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import hermes023
from plugins.memory import load_memory_provider
plugin = sys.argv[2]
hermes023.import_plugin(plugin)
bare = sorted(m for m in {HEAVY} if m in sys.modules)
double, ctx = hermes023.load_provider(plugin)
real = load_memory_provider("cmms")
import hermes_cmms
print(json.dumps({{"bare": bare, "double": type(double).__module__, "real": type(real).__module__,
                  "same_class": type(real) is type(double), "package": hermes_cmms.__file__}}))
"""


def run(*argv: str, env: dict | None = None, timeout: float = 300) -> str:
    """Run `argv` away from the checkout (`python -m` puts the working directory on sys.path)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd="/")
    assert done.returncode == 0, f"{argv[:4]}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def hermes_venv_without_us(tmp: Path) -> Path:
    """A fresh venv whose Python sees this venv's packages (Hermes' venv), hermes-cmms excepted."""
    site = Path(sysconfig.get_paths()["purelib"])
    view = tmp / "hermes-site"
    view.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith(("hermes_cmms", "__editable__")):
            (view / entry.name).symlink_to(entry)
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    (own,) = (venv / "lib").glob("python3*/site-packages")
    (own / "_hermes_venv.pth").write_text(f"import site; site.addsitedir({str(view)!r})\n", encoding="utf-8")
    return venv


def test_declared_dependencies_resolve_into_hermes_venv_and_hermes_loads_the_plugin(tmp_path):
    pip = [sys.executable, "-m", "pip"]
    keep = {"hermes_cmms", "hooks", "mcp_bridge", "install", "pyproject.toml", "README.md"}
    checkout = tmp_path / "checkout"  # the wheel is built from a copy: the build writes beside its source
    shutil.copytree(REPO, checkout, ignore=lambda folder, names: [
        name for name in names if name == "__pycache__" or (folder == str(REPO) and name not in keep)])
    run(*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheels"), str(checkout))
    venv = hermes_venv_without_us(tmp_path)
    python = str(venv / "bin" / "python")
    source = tmp_path / "plugin-source"  # pip builds in its source folder: a copy
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("__pycache__"))
    report = tmp_path / "report.json"
    run(*pip, "--python", python, "install", "--quiet", "--no-build-isolation", "--report", str(report),
        "--find-links", str(tmp_path / "wheels"), str(source))
    installed = {item["metadata"]["name"]: item["metadata"]["version"]
                 for item in json.loads(report.read_text(encoding="utf-8"))["install"]}
    assert installed == {"hermes-cmms": "0.1.0", "hermes-cmms-plugin": "0.1.0"}  # nothing of Hermes' venv changed
    assert "No broken requirements" in run(*pip, "--python", python, "check")

    repo, home = tmp_path / "repo", tmp_path / "home"  # the repository a catalog entry names
    shutil.copytree(PLUGIN, repo / SUBDIR, ignore=shutil.ignore_patterns("__pycache__"))
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "cmms"]):
        run("git", "-C", str(repo), *argv)
    env = {**os.environ, "HERMES_HOME": str(home), "CMMS_EMBEDDER": "none"}
    run(python, "-m", "hermes_cli.main", "plugins", "install", f"file://{repo}#{SUBDIR}", "--enable", env=env)
    assert "set memory.provider: cmms" in run(str(venv / "bin" / "hermes-cmms"), "install-hermes-plugin", env=env)
    status = run(python, "-m", "hermes_cli.main", "memory", "status", env=env)
    assert re.search(r"Provider:\s+cmms\n", status) and re.search(r"Status:\s+available ✓", status), status

    loaded = json.loads(run(python, "-c", LOAD.format(HEAVY=set(HEAVY)), str(REPO / "tests"),
                            str(home / "plugins" / "cmms"), env=env))
    assert loaded["bare"] == [] and loaded["same_class"]
    assert loaded["real"] == loaded["double"] == "hermes_cmms.hermes.provider"
    assert loaded["package"].startswith(str(venv))  # the wheel pip installed, not this checkout
