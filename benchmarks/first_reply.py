"""The first reply of a fresh `hermes` process, with and without cmms (issue 17).

Two Hermes homes with the same layout and the same model block, pointing at the fake
OpenAI-compatible LLM (tests/fake_llm.py) on 127.0.0.1: "plain" has no memory provider, "cmms"
has the plugin installed by the project's installer and a store seeded with `--memories`
memories whose vectors are indexed. Each run starts the real CLI, `hermes chat -Q -q QUESTION`,
and times, from the spawn: the reply on stdout ("start-up to first reply") and the process'
end after it ("exit"), and the CPU seconds the process had used by the reply (all its threads,
from /proc: a figure the other programs of a busy machine inflate less than wall time) and in
all. Runs alternate plain / cmms after one warm-up run of each; the medians are reported. With
`--against COMMIT` the package as it was at that commit of this checkout answers in the same cmms
home too (on PYTHONPATH, before the editable install), its runs alternating with this one's, so
both meet the same load.

Every `hermes` keeps its compiled bytecode (in a cache of the run's own, PYTHONPYCACHEPREFIX),
as an installed package has it: with PYTHONDONTWRITEBYTECODE set (as on this project's machines)
each run would compile hermes_cmms from source again, a cost no user pays after the first start.

For cmms it also reads the request the fake LLM received: whether it carried a memory block
and whether that block holds the seeded fact. The question shares no word with the fact nor
with the filler memories, so finding the fact means the first turn's recall used vectors.

    python benchmarks/first_reply.py [--runs 7] [--memories 300] [--against COMMIT] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from chat import Chat  # noqa: E402

FACT = "Biscuit, my tabby kitten, sleeps on the keyboard all afternoon."
QUESTION = "Which feline lives with me?"
QUIET_ENV = {"TIRITH_ENABLED": "false", "PYTHONUNBUFFERED": "1"}  # no scanner download; lines as printed


def start_llm(work: Path) -> tuple[subprocess.Popen, int, Path]:
    log = work / "llm_requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(HERE.parent / "tests" / "fake_llm.py"), str(log)],
                            stdout=subprocess.PIPE, text=True)
    first = proc.stdout.readline().split()
    if first[:1] != ["PORT"]:
        raise SystemExit(f"the fake LLM did not start: {first!r}")
    return proc, int(first[1]), log


def make_home(path: Path, port: int, with_cmms: bool) -> Path:
    import yaml

    path.mkdir(parents=True)
    model = {"default": "fake-model", "provider": "custom", "base_url": f"http://127.0.0.1:{port}/v1",
             "api_key": "sk-fake"}
    (path / "config.yaml").write_text(yaml.safe_dump({"model": model}), encoding="utf-8")
    if with_cmms:
        from hermes_cmms.install import install

        install(path)
    return path


def fillers(count: int) -> list[tuple[str, str]]:
    """Synthetic turns that share no word with QUESTION."""
    banned = set(re.findall(r"\w+", QUESTION.lower()))
    turns, chat = [], Chat(seed=17)
    while len(turns) < count:
        user, assistant = chat.turn()[:2]
        if not banned & set(re.findall(r"\w+", f"{user} {assistant}".lower())):
            turns.append((user, assistant))
    return turns


def seed(home: Path, memories: int) -> dict:
    """Store the fact and filler turns in the profile's scope, and index their vectors."""
    from hermes_cmms import MemoryService, Settings

    service = MemoryService(Settings.load(home), scheduler=False)
    try:
        service.retain_turn("local:default", "seed", FACT, "Noted.")
        for user, assistant in fillers(max(0, memories - 2) // 2):
            service.retain_turn("local:default", "seed", user, assistant)
        service.indexer.drain(600)
        return service.status()
    finally:
        service.close()


def tree_at(commit: str, into: Path) -> Path:
    """The package as installed (hooks/, mcp_bridge/, install/ inside it) from `commit` of this
    checkout, for PYTHONPATH: it goes before the editable install of this one."""
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", commit, "hermes_cmms", "hooks", "mcp_bridge",
                              "install"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for part in ("hooks", "mcp_bridge", "install"):
        shutil.move(str(into / part), str(into / "hermes_cmms" / part))
    return into


def run_once(home: Path, log: Path, tree: Path | None = None) -> dict:
    """One fresh `hermes chat -q` (with the package from `tree`, if given): seconds to the reply
    line, then to the process' end."""
    log.unlink(missing_ok=True)
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPYCACHEPREFIX=str(log.parent / "bytecode"), **QUIET_ENV)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    hermes = str(Path(sys.executable).with_name("hermes"))
    started = time.monotonic()
    proc = subprocess.Popen([hermes, "chat", "-Q", "-q", QUESTION], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    reply, reply_cpu, output = None, None, []
    for line in proc.stdout:
        output.append(line)
        if reply is None and "FAKE-REPLY" in line:
            reply, reply_cpu = time.monotonic() - started, cpu_seconds(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic() - started
    if reply is None or status != 0:
        raise SystemExit(f"hermes failed (status {status}):\n{''.join(output)[-3000:]}")
    return {"reply_s": round(reply, 3), "exit_s": round(ended - reply, 3), "reply_cpu_s": reply_cpu,
            "total_cpu_s": round(usage.ru_utime + usage.ru_stime, 3), **recall_seen(log)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (Linux /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 3)


def recall_seen(log: Path) -> dict:
    """What the turn's request to the LLM carried: a memory block, and the fact in it."""
    bodies = [json.loads(line)["body"] for line in log.read_text(encoding="utf-8").splitlines()
              if '"POST"' in line]
    users = [m.get("content") for b in bodies for m in b.get("messages", []) if m.get("role") == "user"]
    text = " ".join(u for u in users if isinstance(u, str))
    return {"memory_block": "<memory-context>" in text, "vector_hit": "Biscuit" in text}


def summary(runs: list[dict]) -> dict:
    out = {"runs": len(runs)}
    for key in ("reply_s", "exit_s", "reply_cpu_s", "total_cpu_s"):
        values = [r[key] for r in runs]
        out[key] = {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}
    if "vector_hit" in runs[0]:
        out["vector_hit"] = sum(r["vector_hit"] for r in runs)
        out["memory_block"] = sum(r["memory_block"] for r in runs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="Measured runs of each home (default 7).")
    parser.add_argument("--memories", type=int, default=300, help="Memories seeded in the cmms store.")
    parser.add_argument("--against", metavar="COMMIT", help="Also run the package at this commit, alternating.")
    parser.add_argument("--json", help="Also write every run to this JSON file.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cmms-first-reply-"))
    llm, port, log = start_llm(work)
    try:
        homes = {"plain": make_home(work / "plain", port, False), "cmms": make_home(work / "cmms", port, True)}
        seeded = seed(homes["cmms"], args.memories)
        print(f"seeded: {seeded['memories']} memories, {seeded['indexed']} indexed, embedder {seeded['embedder']}")
        runners = {"plain": (homes["plain"], None), "cmms": (homes["cmms"], None)}
        if args.against:
            (work / "against").mkdir()
            runners = {"plain": runners["plain"], f"cmms {args.against}": (homes["cmms"], tree_at(args.against,
                       work / "against")), "cmms": runners["cmms"]}
        for home, tree in runners.values():
            run_once(home, log, tree)  # warm-up: Hermes' first-run files, the bytecode, the page cache
        runs: dict[str, list] = {name: [] for name in runners}
        for _ in range(args.runs):
            for name, (home, tree) in runners.items():
                runs[name].append(run_once(home, log, tree))
        result = {name: summary(r) for name, r in runs.items()}
        result["load_before"] = os.getloadavg()
        report(result)
        if args.json:
            Path(args.json).write_text(json.dumps({"summary": result, "runs": runs}, indent=2), encoding="utf-8")
    finally:
        llm.terminate()
        llm.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(result: dict) -> None:
    plain = result["plain"]
    for name in [n for n in result if n.startswith("cmms")]:
        cmms = result[name]
        print(f"-- {name}")
        for key, label in (("reply_s", "start-up to first reply"), ("exit_s", "exit after the reply"),
                           ("reply_cpu_s", "CPU s by the reply"), ("total_cpu_s", "CPU s in all")):
            print(f"{label:<24} plain {plain[key]['median']:6.2f} s   cmms {cmms[key]['median']:6.2f} s   "
                  f"difference {cmms[key]['median'] - plain[key]['median']:+.2f} s  (medians of {plain['runs']})")
        print(f"cmms first turns with the fact recalled by vectors: {cmms['vector_hit']} of {cmms['runs']} "
              f"(a memory block in {cmms['memory_block']})")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
