"""What the memory lifecycle costs: consolidation of synthetic episodic memories, the decay job,
and sync_turn with its repeat check and audit rows (idle, and with the embedder indexing).

Each part runs in a fresh temporary HERMES_HOME on the embedded default, scheduler off.

    python benchmarks/lifecycle.py --consolidate 2000 --decay 100000 --turns 1500 --json OUT
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

DAY = 86400.0
SCOPE = "bench:lifecycle"
PEOPLE = ["Alice", "Bruno", "Carla", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
ACTIVITIES = ["kayaking on the lake", "baking sourdough bread", "repairing the old bicycle",
              "painting a watercolor of the harbor", "learning to play the cello",
              "planting tomatoes in the garden", "writing a mystery novel", "training for a marathon",
              "building a birdhouse", "studying Japanese grammar"]
PARAPHRASES = ["{p} spent the morning {a}.", "In the evening, {p} was {a}.", "{p} told me about {a} over lunch.",
               "During the holidays {p} kept {a}.", "{p} mentioned {a} again on the phone.",
               "Another weekend of {a} for {p}.", "{p} said last month was all about {a}.",
               "Once more {p} was busy {a} after work.", "{p} really enjoyed {a} yesterday.",
               "The whole Sunday went to {a}, according to {p}.", "Lately {p} has been {a} a lot.",
               "{p} asked for tips on {a}.", "My friend {p} is still {a}.",
               "{p} complained that {a} takes so much time.", "We talked with {p} about {a}.",
               "{p} posted photos of {a} online.", "{p} plans to keep {a} next year.",
               "Guess what {p} did today: {a}.", "{p} was {a} when I called.", "{p} finally started {a} with a friend."]


def synthetic_observations() -> list[str]:
    """100 topics (a person doing an activity) x 20 paraphrases: 2,000 distinct texts (within a
    topic MiniLM puts them at cosine 0.59-0.97, median 0.83; none is a near-exact repeat)."""
    return [template.format(p=person, a=activity) for person in PEOPLE for activity in ACTIVITIES
            for template in PARAPHRASES]


def _service(home: str, **overrides):
    from hermes_cmms import MemoryService, Settings

    return MemoryService(Settings.load(home, **overrides), scheduler=False)


def _percentiles(values: list[float]) -> dict:
    values = sorted(values)
    at = lambda p: round(values[min(len(values) - 1, int(len(values) * p))], 2)  # noqa: E731
    return {"n": len(values), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": round(values[-1], 2)}


def bench_consolidation(home: str, count: int) -> dict:
    from hermes_cmms.store.store import NewMemory

    texts = (synthetic_observations() * (count // 2000 + 1))[:count]
    with _service(home) as service:
        started = time.perf_counter()
        for start in range(0, count, 500):
            service.store.add([NewMemory(scope=SCOPE, content=t, kind="observation", tier="episodic",
                                         dedup=False) for t in texts[start:start + 500]])
        service.indexer.notify()
        drained = service.indexer.drain(3600)
        indexed_s = time.perf_counter() - started
        started = time.perf_counter()
        report = service.consolidate(SCOPE)
        return {"memories": count, "indexed_s": round(indexed_s, 1), "drained": drained,
                "consolidate_s": round(time.perf_counter() - started, 2), "examined": report.examined,
                "clusters": report.clusters, "consolidated": report.consolidated}


def bench_decay(home: str, count: int) -> dict:
    from hermes_cmms.store.store import NewMemory

    with _service(home, embedder="none") as service:
        for start in range(0, count, 1000):
            service.store.add([NewMemory(scope=SCOPE, content=f"memory {i} about thing {i % 977}",
                                         session_id=f"s{i // 50}", confidence=0.9, dedup=False)
                               for i in range(start, min(count, start + 1000))])
        runs = {}
        now = time.time()
        for label, at in (("unchanged", now), ("confidence_moves", now + 30 * DAY),
                          ("state_moves", now + 400 * DAY)):
            started = time.perf_counter()
            result = service.upkeep.decay(at)
            runs[label] = {**result, "seconds": round(time.perf_counter() - started, 2)}
        return {"memories": count, **runs}


def bench_sync(home: str, turns: int, busy: bool) -> dict:
    """sync_turn (retain_turn) wall times; `busy`: with the embedder indexing behind the writes
    (turns 4 ms apart, as a fast chat), else keyword-only with nothing in the background."""
    with _service(home, **({} if busy else {"embedder": "none"})) as service:
        service.indexer.ready.wait(120)
        times = []
        for i in range(turns + 200):
            started = time.perf_counter()
            service.retain_turn(SCOPE, f"s{i // 20}",
                                f"user message number {i} about topic {i % 97} and the weather in town {i % 13}",
                                f"assistant reply {i} on {i % 89}, noted with thanks")
            times.append((time.perf_counter() - started) * 1000)
            if busy:
                time.sleep(0.004)
        return _percentiles(times[200:])  # after 200 warm-up turns


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consolidate", type=int, default=2000, metavar="N", help="episodic memories (0: skip)")
    parser.add_argument("--decay", type=int, default=100_000, metavar="N", help="memories to age (0: skip)")
    parser.add_argument("--turns", type=int, default=1500, help="timed sync_turn calls per case (0: skip)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = parser.parse_args(argv)
    os.environ["CMMS_SCHEDULER"] = "off"
    parts = {"consolidation": (args.consolidate, bench_consolidation),
             "decay": (args.decay, bench_decay),
             "sync_idle_ms": (args.turns, lambda home, n: bench_sync(home, n, busy=False)),
             "sync_busy_ms": (args.turns, lambda home, n: bench_sync(home, n, busy=True))}
    results = {}
    for name, (size, run) in parts.items():
        if size <= 0:
            continue
        home = tempfile.mkdtemp(prefix="cmms_lifecycle_")
        try:
            results[name] = run(home, size)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        print(f"{name}: {json.dumps(results[name])}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
