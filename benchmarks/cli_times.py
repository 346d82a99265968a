"""Wall times of the `hermes-cmms` inspection commands on a store with some memories (issue 17).

Seeds a fresh Hermes home (the plugin installed, `--memories` memories whose vectors are
indexed), then runs each command as a fresh process `--runs` times, round robin, and reports
the median, min and max wall time per command. Goal: each within 1.5 s on 2 cores. With
`--against COMMIT`, the package as it was at that commit of this checkout is timed too, run for
run alternating with this one on the same home, so both meet the same load.

    python benchmarks/cli_times.py [--runs 5] [--memories 300] [--against main] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from chat import Chat  # noqa: E402

COMMANDS = {
    "--help": ["--help"],
    "status": ["status"],
    "doctor": ["doctor"],
    "search": ["search", "trip to Lisbon"],
    "audit-log": ["audit-log"],
    "plugins": ["plugins"],
    "metrics": ["metrics"],
    "beliefs list": ["beliefs", "list"],
    "graph search": ["graph", "search", "Lisbon"],
}
GOAL_S = 1.5


def seed(home: Path, memories: int) -> dict:
    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.install import install

    home.mkdir(parents=True)
    (home / "config.yaml").write_text("{}\n", encoding="utf-8")
    install(home)
    service = MemoryService(Settings.load(home), scheduler=False)
    try:
        chat = Chat(seed=17)
        for n in range(memories // 2):
            user, assistant = chat.turn()[:2]
            service.retain_turn("local:default", f"s{n // 20}", user, assistant)
        service.indexer.drain(600)
        return service.status()
    finally:
        service.close()


def tree_at(commit: str, into: Path) -> Path:
    """The package as installed (hooks/, mcp_bridge/, install/ inside it) from `commit` of this
    checkout, for PYTHONPATH: it goes before the editable install of this one."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "hermes_cmms", "hooks", "mcp_bridge",
                              "install"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for part in ("hooks", "mcp_bridge", "install"):
        shutil.move(str(into / part), str(into / "hermes_cmms" / part))
    return into


def time_command(home: Path, argv: list[str], tree: Path | None = None) -> float:
    env = dict(os.environ, HERMES_HOME=str(home), **({"PYTHONPATH": str(tree)} if tree else {}))
    cli = str(Path(sys.executable).with_name("hermes-cmms"))
    started = time.monotonic()
    proc = subprocess.run([cli, *argv], env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    if proc.returncode not in (0, 3):  # 3: `audit` found something
        raise SystemExit(f"hermes-cmms {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return round(took, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs of each command (default 5).")
    parser.add_argument("--memories", type=int, default=300, help="Memories in the store (default 300).")
    parser.add_argument("--only", action="append", choices=sorted(COMMANDS), help="Only these commands.")
    parser.add_argument("--against", metavar="COMMIT", help="Also time the package at this commit, alternating.")
    parser.add_argument("--json", help="Also write every time to this JSON file.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cmms-cli-times-"))
    trees = {"": None}
    try:
        if args.against:
            (work / "against").mkdir()
            trees = {f"{args.against}: ": tree_at(args.against, work / "against"), "this: ": None}
        seeded = seed(work / "home", args.memories)
        print(f"seeded: {seeded['memories']} memories, {seeded['indexed']} indexed, embedder {seeded['embedder']}")
        names = args.only or list(COMMANDS)
        times: dict[str, list[float]] = {label + name: [] for name in names for label in trees}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for name in names:
                for label, tree in trees.items():
                    times[label + name].append(time_command(work / "home", COMMANDS[name], tree))
            loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<22} median {median:5.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
              f"{'' if median <= GOAL_S else '  over the goal'}")
    print(f"load average (1 min) over the runs: {min(loads):.2f} to {max(loads):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"times": times, "load": loads}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
