"""The default install on a fresh machine: `pip install '<repo>[hermes]'` into a new venv.

Reports the venv's size on disk (MiB, and its largest packages), the resolved packages
(`name==version`, written to a file), the wall time of each step, and a smoke check inside
the venv: `hermes-cmms install-hermes-plugin` (which prepares the model once) and
`hermes-cmms doctor` in a fresh Hermes home,
then a store + vector search round trip with the default embedder, with `torch` neither
installed nor in `sys.modules`, and Hermes 0.20+'s entry point there. Exits 1 if a check fails.

    python benchmarks/install.py [--extras hermes] [--packages FILE] [--json OUT] [--keep DIR]

pip runs `--isolated` by default (this machine's pip config, its local wheels, indexes and
constraints, are ignored: plain PyPI, as on a user's machine; `--machine-pip-config` keeps them)
and with the venv's own pip, as the README's Run command does. The model is prepared into the
temp dir's cache (XDG_CACHE_HOME), as on a machine that never had it.
`resolve()` (a dry run with the newest pip) is what tests/quality/test_install_deps.py checks.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
HEAVY = re.compile(r"torch|triton|pytorch-triton|nvidia-.+|cuda-.+")  # what the default must not pull
UNREACHABLE = re.compile(r"Failed to establish a new connection|Temporary failure in name "
                         r"resolution|Name or service not known|Network is unreachable|No route to host|"
                         r"ConnectTimeoutError|Connection refused|Read timed out")
QUIET = ["--disable-pip-version-check", "--no-input", "--retries", "2"]

# Runs inside the new venv: the default embedder, one store + vector search round trip, no torch.
SMOKE = r"""
import importlib.metadata as md, importlib.util, json, sys, time
from hermes_cmms import MemoryService, Settings
t0 = time.perf_counter()
with MemoryService(Settings.load(sys.argv[1]), scheduler=False) as service:
    mid = service.remember("local:default", "My cat is called Biscuit and she sleeps on the piano.")
    drained = service.indexer.drain(120)
    hits = service.semantic_search("local:default", "What is the name of my pet?", top_k=3)
    embedder = service.status()["embedder"]
points = [ep.value for ep in md.entry_points(group="hermes_agent.memory_providers") if ep.name == "cmms"]
print(json.dumps({"embedder": embedder, "indexed": drained, "found": bool(hits) and hits[0].id == mid,
                  "similarity": round(hits[0].similarity, 3) if hits else None, "seconds": round(time.perf_counter() - t0, 2),
                  "torch_imported": "torch" in sys.modules, "torch_installed": importlib.util.find_spec("torch") is not None,
                  "entry_point": points}))
"""


class RegistryUnreachable(RuntimeError):
    """pip could not reach the package registry (no network, no DNS, refused, timed out)."""


class PipFailed(RuntimeError):
    """pip answered, and said no."""


# -- pip ----------------------------------------------------------------------------------


def pip(command: list[str], *args: str, isolated: bool = True, timeout: float = 1200) -> str:
    """Run `command` (a pip) with `args`; its stdout, or RegistryUnreachable / PipFailed."""
    flags = QUIET + (["--isolated"] if isolated else []) + _cert(isolated)
    done = subprocess.run([*command, args[0], *flags, *args[1:]], capture_output=True, text=True, timeout=timeout)
    if done.returncode == 0:
        return done.stdout
    network = UNREACHABLE.search(done.stderr)
    if network:
        said = done.stderr[network.start():].splitlines()[0][:120].rstrip("')\" :")
        raise RegistryUnreachable(f"pip {args[0]} could not reach the package registry ({said}).")
    raise PipFailed(f"pip {args[0]} failed: {done.stderr[-3000:].strip()}")


def _cert(isolated: bool) -> list[str]:
    """--isolated drops PIP_CERT too: keep a CA bundle the machine names (TLS, not package choice)."""
    cert = os.environ.get("PIP_CERT")
    return ["--cert", cert] if isolated and cert and Path(cert).is_file() else []


def newest_pip(workdir: Path) -> list[str]:
    """The newest pip from the registry, run from its wheel (`python pip.whl/pip`): its resolver
    is about twice as fast as that of the pip 23 a python3.11 venv starts with."""
    workdir.mkdir(parents=True, exist_ok=True)
    pip([sys.executable, "-m", "pip"], "download", "--no-deps", "--only-binary", ":all:", "-d", str(workdir), "pip")
    wheel = max(workdir.glob("pip-*.whl"))
    return [sys.executable, str(wheel / "pip")]


def resolve(repo: Path, extras: str, workdir: Path) -> dict:
    """pip's report of what `pip install '<repo>[extras]'` installs on a fresh machine: a dry run
    that ignores what is installed and (isolated) this machine's pip config."""
    report = workdir / "report.json"
    pip(newest_pip(workdir / "pip"), "install", "--dry-run", "--ignore-installed", "--quiet",
        "--report", str(report), f"{repo}[{extras}]")
    return json.loads(report.read_text(encoding="utf-8"))


def packages(report: dict) -> list[str]:
    """`name==version` of every package a pip report installs, sorted by name."""
    found = [(item["metadata"]["name"], item["metadata"]["version"]) for item in report["install"]]
    return [f"{name}=={version}" for name, version in sorted(found, key=lambda nv: nv[0].lower())]


def heavy(report: dict) -> list[str]:
    """The torch / CUDA / triton packages among those a pip report installs."""
    return [line for line in packages(report) if HEAVY.fullmatch(_canonical(line.split("==")[0]))]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# -- the fresh venv -----------------------------------------------------------------------


def mib(path: Path) -> float:
    """Disk use of everything under `path` (allocated blocks, links not followed), in MiB."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total / 2**20


def largest(site: Path, count: int = 8) -> list[tuple[str, float]]:
    """The `count` largest entries of site-packages, with their MiB."""
    sizes = [(entry.name, mib(entry) if entry.is_dir() else entry.lstat().st_blocks * 512 / 2**20)
             for entry in site.iterdir() if not entry.name.endswith(".dist-info")]
    return [(name, round(size, 1)) for name, size in sorted(sizes, key=lambda s: -s[1])[:count]]


class Timer:
    def __init__(self) -> None:
        self.steps: dict[str, float] = {}

    def run(self, name: str, fn, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.steps[name] = round(time.perf_counter() - t0, 2)
            print(f"  {name:<28} {self.steps[name]:7.2f} s", flush=True)


def smoke_env(work: Path) -> dict:
    """A fresh Hermes home and model cache in `work`; no hub, nothing of this shell's venv."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMMS_", "VIRTUAL_ENV", "PYTHON"))}
    return {**env, "HERMES_HOME": str(work / "hermes_home"), "XDG_CACHE_HOME": str(work / "cache"),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def run_in(venv_dir: Path, env: dict, *argv: str) -> str:
    """Run one of the venv's commands from outside the repo; its stdout, or PipFailed's sibling."""
    exe = argv[0] if argv[0].startswith("/") else str(venv_dir / "bin" / argv[0])
    done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, env=env, cwd=env["HERMES_HOME"],
                          timeout=600)
    if done.returncode != 0:
        raise SmokeFailed(f"`{' '.join(argv[:2])}` exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}")
    return done.stdout


class SmokeFailed(RuntimeError):
    """A command of the smoke check failed inside the new venv."""


def smoke(venv_dir: Path, work: Path, timer: Timer) -> dict:
    """The checks inside the new venv (see the module's docstring)."""
    env = smoke_env(work)
    Path(env["HERMES_HOME"]).mkdir()
    installed = timer.run("install-hermes-plugin", run_in, venv_dir, env, "hermes-cmms", "install-hermes-plugin")
    doctor = timer.run("hermes-cmms doctor", run_in, venv_dir, env, "hermes-cmms", "doctor")
    result = json.loads(timer.run("store + vector search", run_in, venv_dir, env, "python", "-c", SMOKE,
                                  env["HERMES_HOME"]).strip().splitlines()[-1])
    search = timer.run("hermes-cmms search", run_in, venv_dir, env, "hermes-cmms", "search", "cat piano")
    result.update(doctor=doctor.strip().splitlines(), search_finds_it="Biscuit" in search,
                  model_prepared_by_install="prepared the embedding model" in installed)
    return result


def failures(result: dict) -> list[str]:
    """What the smoke check found wrong, one phrase each."""
    checks = {"torch is installed in the default venv": result["torch_installed"],
              "torch was imported": result["torch_imported"],
              "the vector search did not find the memory": not result["found"],
              "the indexer did not finish": not result["indexed"],
              "the embedder is not the default ONNX one": "onnx" not in str(result["embedder"]).lower(),
              "`hermes-cmms search` did not find it": not result["search_finds_it"],
              "no hermes_agent.memory_providers entry point named cmms": not result["entry_point"]}
    return [text for text, failed in checks.items() if failed]


def measure(args, work: Path) -> dict:
    timer, venv_dir = Timer(), work / "venv"
    timer.run("python -m venv", lambda: venv.create(venv_dir, symlinks=True, with_pip=True))
    own_pip = [str(venv_dir / "bin" / "python"), "-m", "pip"]
    report = work / "report.json"
    timer.run(f"pip install .[{args.extras}]", pip, own_pip, "install", "--quiet", "--report", str(report),
              f"{REPO}[{args.extras}]", isolated=not args.machine_pip_config)
    resolved = packages(json.loads(report.read_text(encoding="utf-8")))
    site = next((venv_dir / "lib").glob("python3*/site-packages"))
    result = {"extras": args.extras, "isolated": not args.machine_pip_config,
              "pip": subprocess.run([*own_pip, "--version"], capture_output=True, text=True).stdout.split()[1], "python": sys.version.split()[0],
              "venv_mib": round(mib(venv_dir), 1), "largest_mib": largest(site), "packages": len(resolved),
              "heavy": heavy(json.loads(report.read_text(encoding="utf-8")))}
    args.packages.write_text("\n".join(resolved) + "\n", encoding="utf-8")
    result["smoke"] = smoke(venv_dir, work, timer)
    result["seconds"] = timer.steps
    result["failures"] = (["torch or CUDA resolved: " + ", ".join(result["heavy"])] if result["heavy"] else []) \
        + failures(result["smoke"])
    return result


def report_lines(result: dict, packages_file: Optional[Path]) -> list[str]:
    smoke_result = result["smoke"]
    listed = f"list: {packages_file}" if packages_file else "--packages FILE keeps the list"
    return [f"venv: {result['venv_mib']} MiB on disk; {result['packages']} packages ({listed})",
            "largest: " + ", ".join(f"{name} {size}" for name, size in result["largest_mib"]),
            f"pip {result['pip']}, Python {result['python']}, isolated={result['isolated']}",
            f"embedder {smoke_result['embedder']}; similarity {smoke_result['similarity']}; "
            f"torch installed={smoke_result['torch_installed']} imported={smoke_result['torch_imported']}; "
            f"entry point {smoke_result['entry_point']}",
            *(f"  {line}" for line in smoke_result["doctor"]),
            "OK" if not result["failures"] else "FAILED: " + "; ".join(result["failures"])]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="hermes", help="The extras to install (default: hermes, the default install).")
    parser.add_argument("--packages", type=Path, help="Write the resolved name==version list here (default: in the temp dir).")
    parser.add_argument("--json", type=Path, help="Write the figures here as JSON.")
    parser.add_argument("--keep", type=Path, help="Build in this (new) directory and keep it.")
    parser.add_argument("--machine-pip-config", action="store_true", help="Use this machine's pip config (not --isolated).")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cmms-install-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        kept = args.keep or args.packages
        args.packages = (args.packages or work / "packages.txt").resolve()
        try:
            result = measure(args, work)
        except (RegistryUnreachable, PipFailed, SmokeFailed) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print("\n".join(report_lines(result, args.packages if kept else None)))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
