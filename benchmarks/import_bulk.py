"""Bulk import speed (issue 29): a realistic ChatGPT export of N turns, imported by the real
`hermes-cmms` command as a user would.

1. Writes conversations.json in ChatGPT's shape (tests/data/imports/chatgpt): conversations of
   2 to 40 turns (a user message and the reply, two memories), varied invented text
   (benchmarks/chat.py), dates spread over a year, a few regenerated replies left off the branch.
2. `hermes-cmms import --create FILE` (embedder none, as import runs): memories/s until the
   import's own commit, when every memory is keyword-searchable.
3. `hermes-cmms import --wait FILE` (the default ONNX embedder): the file is read again, every
   memory is skipped, and the indexer drains the outbox; vectors/s and wall time until every
   memory is in the vector index (the outbox is polled read-only for the progress bar).
Peak RSS of each process from os.wait4's rusage; the load average before and after.

    python benchmarks/import_bulk.py --turns 10000
    python benchmarks/import_bulk.py --turns 100000 --json results.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).parent))
from chat import Chat

YEAR = 365 * 86400.0
START = 1_735_689_600.0  # 2025-01-01


def write_export(path: Path, turns: int, seed: int = 29) -> dict:
    """A ChatGPT conversations.json of `turns` turns on the branch the user ended on; its counts."""
    rng, chat = random.Random(seed), Chat(seed)
    conversations = written = regenerated = 0
    bar = tqdm(total=turns, desc="writing export", unit=" turns", file=sys.stderr)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        while written < turns:
            size = min(rng.randint(2, 40), turns - written)
            when = START + rng.random() * YEAR
            cid = f"{rng.getrandbits(64):016x}-{conversations:06d}"
            root = f"{cid}-root"
            mapping = {root: {"id": root, "message": None, "parent": None, "children": []}}
            parent = root
            for t in range(size):
                user, reply = chat.turn()
                for role, text in (("user", user), ("assistant", reply)):
                    node = f"{cid}-{t}-{role[0]}"
                    when += rng.uniform(5, 240)
                    mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                        "id": node, "author": {"role": role, "name": None, "metadata": {}},
                        "create_time": when, "update_time": None, "status": "finished_successfully",
                        "end_turn": role == "assistant", "weight": 1.0, "recipient": "all", "metadata": {},
                        "content": {"content_type": "text", "parts": [text]}}}
                    mapping[parent]["children"].append(node)
                    if role == "assistant" and rng.random() < 0.03:  # a regenerated reply, off the branch
                        other = node + "-old"
                        mapping[other] = {**mapping[node], "id": other, "children": [],
                                          "message": {**mapping[node]["message"], "id": other}}
                        mapping[parent]["children"].insert(0, other)
                        regenerated += 1
                    parent = node
            item = {"title": user[:40], "create_time": START + rng.random() * YEAR, "update_time": when,
                    "mapping": mapping, "current_node": parent, "conversation_id": cid, "id": cid,
                    "is_archived": False, "default_model_slug": "gpt-4o"}
            out.write(("," if conversations else "") + json.dumps(item, ensure_ascii=False))
            conversations += 1
            written += size
            bar.update(size)
        out.write("]")
    bar.close()
    return {"conversations": conversations, "turns": turns, "memories": 2 * turns,
            "regenerated_replies": regenerated, "bytes": path.stat().st_size}


def run(cmd: list[str], env: dict, on_wait=None) -> dict:
    """Run `cmd`, calling `on_wait(proc)` until it ends; wall time, peak RSS (MiB), its JSON output."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if on_wait is not None:
                on_wait()
            time.sleep(0.5)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "output": json.loads(stdout)}


def outbox(database: Path) -> int:
    try:
        with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    except sqlite3.Error:
        return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--dir", help="Work here (kept) instead of a temporary folder.")
    parser.add_argument("--home", default="home", help="The Hermes home's folder name in the work folder (new).")
    parser.add_argument("--no-vectors", action="store_true", help="Time the keyword import only.")
    parser.add_argument("--json", help="Also write the results to this file.")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="cmms-import-bulk-"))
    work.mkdir(parents=True, exist_ok=True)
    home, export = work / args.home, work / "conversations.json"
    if home.exists():
        raise SystemExit(f"{home} exists: name a new --home.")
    home.mkdir()
    results = {"turns": args.turns, "load_before": os.getloadavg(), "cpus": os.cpu_count()}
    started = time.perf_counter()
    made = work / "export.json"  # what the export holds, to reuse it (--dir) with a new home (--home)
    if export.exists() and made.exists() and json.loads(made.read_text())["turns"] == args.turns:
        results["export"] = json.loads(made.read_text())
    else:
        results["export"] = write_export(export, args.turns)
        results["export"]["write_s"] = round(time.perf_counter() - started, 1)
        made.write_text(json.dumps(results["export"]))
    env = dict(os.environ, HERMES_HOME=str(home))
    env.pop("CMMS_EMBEDDER", None)
    cli = [sys.executable, "-m", "hermes_cmms.cli"]

    print(f"importing {results['export']['memories']:,} memories (keyword) ...", file=sys.stderr)
    keyword = run(cli + ["import", "--create", "-q", str(export)], env)
    added = keyword["output"]["scopes"]
    memories = sum(s["memories"]["added"] for s in added.values())
    results["keyword"] = {"wall_s": keyword["wall_s"], "cpu_s": keyword["cpu_s"],
                          "peak_rss_mib": keyword["peak_rss_mib"], "memories": memories,
                          "memories_per_s": round(memories / keyword["wall_s"], 1),
                          "skipped": keyword["output"]["skipped"]}
    print(json.dumps(results["keyword"]), file=sys.stderr)

    if not args.no_vectors:
        from hermes_cmms import Settings
        from hermes_cmms.store.availability import store_file

        database = store_file(Settings.load(home))
        total = outbox(database)
        bar = tqdm(total=total, desc="vectors", unit=" memories", file=sys.stderr)

        def poll():
            left = outbox(database)
            if left >= 0:
                bar.update(total - left - bar.n)

        vectors = run(cli + ["import", "--wait", "-q", str(export)], env, poll)
        poll()
        bar.close()
        results["vectors"] = {"wall_s": vectors["wall_s"], "cpu_s": vectors["cpu_s"],
                              "peak_rss_mib": vectors["peak_rss_mib"], "queued": total,
                              "indexed": vectors["output"].get("indexed"), "left": outbox(database),
                              "vectors_per_s": round(total / vectors["wall_s"], 1),
                              "until_every_vector_s": round(keyword["wall_s"] + vectors["wall_s"], 1)}
        print(json.dumps(results["vectors"]), file=sys.stderr)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
