"""Prefetch latency on an existing Hermes home, for an A/B of two commits on one store.

    python benchmarks/latency.py --sizes 100000 --bulk-from 1 --home H --keep   # fill once
    PYTHONPATH=<worktree of the other commit> python benchmarks/prefetch_ab.py H  # one side
    python benchmarks/prefetch_ab.py H                                           # the other

Alternate the two sides a few times: runs of different hours on a VM are not comparable, runs
side by side on one store are. Times CmmsMemoryProvider.prefetch of varied questions after 20
warm-up ones and prints mean / p50 / p95 in ms, with which code ran.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chat import Chat

WARM_UP = 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", help="a HERMES_HOME filled by benchmarks/latency.py --keep")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    import hermes_cmms
    from hermes_cmms.provider import CmmsMemoryProvider

    provider = CmmsMemoryProvider()
    provider.initialize("prefetch-ab", hermes_home=args.home, platform="cli", agent_context="primary")
    chat = Chat(args.seed)
    questions = [chat.question() for _ in range(WARM_UP + args.queries)]
    for question in questions[:WARM_UP]:  # the model loaded, pages in the cache
        provider.prefetch(question)
    times = []
    for question in questions[WARM_UP:]:
        started = time.perf_counter()
        provider.prefetch(question)
        times.append((time.perf_counter() - started) * 1000)
    provider.shutdown()
    times.sort()
    print(f"{hermes_cmms.__file__}: prefetch mean {statistics.mean(times):.1f} / p50 {times[len(times) // 2]:.1f}"
          f" / p95 {times[int(len(times) * 0.95)]:.1f} ms over {len(times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
