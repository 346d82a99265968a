"""Draw docs/ figures from benchmark JSON files (needs matplotlib: pip install 'hermes-cmms[plot]').

    python benchmarks/plot.py recall OUT.png BENCH_JSON...   # `hermes-cmms bench locomo --json`, one per budget
    python benchmarks/plot.py latency OUT.png LATENCY_JSON...   # `benchmarks/latency.py --json`
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def recall_vs_budget(paths: list[str], out: str) -> None:
    runs = sorted((json.loads(Path(p).read_text()) for p in paths), key=lambda r: r["budget"])
    budgets = [r["budget"] for r in runs]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, style, label in (("ev_key", "o-", "ev_key: answer-bearing sentence (primary)"),
                              ("ev_words", "s-", "ev_words: whole evidence turn"),
                              ("ev_recall", "^:", "ev_recall: opening only (lenient)")):
        ax.plot(budgets, [r["total"][key] for r in runs], style, label=label)
    for r in runs:
        ax.annotate(f"{r['total']['ev_key']:.3f}", (r["budget"], r["total"]["ev_key"]),
                    textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set(xlabel="recall token budget (CMMS_RECALL_TOKENS)", ylabel="fraction",
           title="LoCoMo dev split, dated: recall vs token budget", ylim=(0, 1))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def latency_vs_size(paths: list[str], out: str) -> None:
    sizes = sorted((s for p in paths for s in json.loads(Path(p).read_text())["sizes"]), key=lambda s: s["memories"])
    n = [s["memories"] for s in sizes]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("p50", "prefetch p50"), ("p95", "prefetch p95")):
        ax.plot(n, [s["prefetch_ms"][key] for s in sizes], "o-", label=label)
    ax.plot(n, [s["sync_turn_ms"]["p99"] for s in sizes], "s--", label="sync_turn p99")
    ax.set(xscale="log", xlabel="memories in the store", ylabel="ms",
           title="Latency vs store size (embedded default)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["recall", "latency"])
    parser.add_argument("out")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args(argv)
    if args.kind == "recall":
        recall_vs_budget(args.inputs, args.out)
    else:
        latency_vs_size(args.inputs, args.out)


if __name__ == "__main__":
    main()
