"""Wall times of the `hermes-cmms` inspection commands on a store with some memories (issue 17).

Seeds a fresh Hermes home (the plugin installed, `--memories` memories whose vectors are
indexed), or takes an existing one (`--home`, e.g. one benchmarks/import_bulk.py --dir made),
then runs each command as a fresh process `--runs` times, round robin, and reports the median,
min and max wall time per command, with the median CPU seconds (user + system, the figure load
inflates least) and peak RSS from os.wait4. Goals (issue 42, quiet machine): status and doctor
0.7 s, search 1.2 s at 1k memories and 1.5 s at 50k; the others 1.5 s. With `--against COMMIT`,
the package as it was at that commit of this checkout is timed too, run for run alternating
with this one on the same home, so both meet the same load. Both trees are byte-compiled first,
as an install from a wheel is (where PYTHONDONTWRITEBYTECODE is set, as on this project's
machines, an editable checkout would otherwise compile every module of the package each run).

    python benchmarks/cli_times.py [--runs 5] [--memories 300] [--home DIR] [--against main] [--json OUT]
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
GOALS_S = {"status": 0.7, "doctor": 0.7, "search": 1.2}  # issue 42 (search: 1.5 s at 50k memories)


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


def compiled(tree: Path) -> None:
    """Byte-compile the package in `tree` (hooks/, mcp_bridge/, install/ inside it or beside it)."""
    import compileall

    for part in ("hermes_cmms", "hooks", "mcp_bridge", "install"):
        if (tree / part).is_dir():
            compileall.compile_dir(str(tree / part), quiet=1)


def time_command(home: Path, argv: list[str], tree: Path | None = None) -> tuple[float, float, float]:
    """One run: (wall s, CPU s, peak RSS MiB)."""
    env = dict(os.environ, HERMES_HOME=str(home), **({"PYTHONPATH": str(tree)} if tree else {}))
    cli = str(Path(sys.executable).with_name("hermes-cmms"))
    started = time.monotonic()
    proc = subprocess.Popen([cli, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):  # 1: a `doctor` check failed (a seeded home has no Hermes config); 3: `audit` found something
        raise SystemExit(f"hermes-cmms {' '.join(argv)} failed ({code}):\n{proc.stderr.read().decode()[-2000:]}")
    return round(took, 3), round(usage.ru_utime + usage.ru_stime, 3), round(usage.ru_maxrss / 1024, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs of each command (default 5).")
    parser.add_argument("--memories", type=int, default=300, help="Memories in the store (default 300).")
    parser.add_argument("--home", help="Time on this Hermes home (kept as it is) instead of seeding one.")
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
        for tree in trees.values():
            compiled(tree or ROOT)
        home = Path(args.home) if args.home else work / "home"
        if not args.home:
            seeded = seed(home, args.memories)
            print(f"seeded: {seeded['memories']} memories, {seeded['indexed']} indexed, embedder {seeded['embedder']}")
        names = args.only or list(COMMANDS)
        runs: dict[str, list[tuple[float, float, float]]] = {label + name: [] for name in names for label in trees}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for name in names:
                for label, tree in trees.items():
                    runs[label + name].append(time_command(home, COMMANDS[name], tree))
            loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, values in runs.items():
        wall, cpu, rss = ([run[n] for run in values] for n in range(3))
        median, goal = statistics.median(wall), GOALS_S.get(name.rpartition(": ")[2], GOAL_S)
        print(f"{name:<22} median {median:5.2f} s  (min {min(wall):.2f}, max {max(wall):.2f})  "
              f"CPU {statistics.median(cpu):5.2f} s  peak {max(rss):5.0f} MiB"
              f"{'' if median <= goal else f'  over the goal ({goal} s)'}")
    print(f"load average (1 min) over the runs: {min(loads):.2f} to {max(loads):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "load": loads}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
