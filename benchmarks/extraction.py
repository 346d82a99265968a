"""Precision and recall of hermes_cmms.extract on labelled messages.

    python benchmarks/extraction.py [--data FILE ...] [--json OUT]

Each line of a data file is {"id", "text", "items": [{"kind", ...parts}]}. A predicted item
matches a labelled one of the same kind when its key fields match: fact subject and object,
preference object and polarity, decision choice, skill purpose, belief proposition and
polarity. Text fields match when their token sets (lower-cased, punctuation and articles
dropped) have a Jaccard similarity of at least 0.5; polarities must be equal. Matching is
one-to-one and greedy (best pairs first) within each message.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Iterable, Optional

from hermes_cmms.extract import KINDS, extract

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = [REPO / "tests" / "data" / "extraction_dev.jsonl", REPO / "tests" / "data" / "extraction_eval.jsonl"]
KEY_FIELDS = {"fact": ("subject", "object"), "preference": ("object", "polarity"), "decision": ("choice",),
              "skill": ("purpose",), "belief": ("proposition", "polarity")}
ARTICLES = {"a", "an", "the"}
THRESHOLD = 0.5


def tokens(text) -> frozenset:
    """Lower-cased words of `text`, punctuation and articles dropped."""
    words = re.sub(r"[^\w\s]", " ", str(text).lower()).split()
    return frozenset(w for w in words if w not in ARTICLES)


def jaccard(a, b) -> float:
    left, right = tokens(a), tokens(b)
    return len(left & right) / len(left | right) if left | right else 1.0


def similarity(predicted: dict, gold: dict) -> Optional[float]:
    """The mean Jaccard of the key text fields when every key field matches, else None."""
    if predicted.get("kind") != gold.get("kind") or gold.get("kind") not in KEY_FIELDS:
        return None
    scores = []
    for name in KEY_FIELDS[gold["kind"]]:
        if name == "polarity":
            if predicted.get(name, 1) != gold.get(name, 1):
                return None
            continue
        score = jaccard(predicted.get(name, ""), gold.get(name, ""))
        if score < THRESHOLD:
            return None
        scores.append(score)
    return sum(scores) / len(scores)


def match(predicted: list[dict], gold: list[dict]) -> list[tuple[int, int]]:
    """One-to-one greedy matching: (predicted index, gold index) pairs, best pairs first."""
    pairs = sorted(((s, p, g) for p, pred in enumerate(predicted) for g, want in enumerate(gold)
                    if (s := similarity(pred, want)) is not None), reverse=True)
    used_p, used_g, matched = set(), set(), []
    for _, p, g in pairs:
        if p not in used_p and g not in used_g:
            used_p.add(p)
            used_g.add(g)
            matched.append((p, g))
    return matched


def score(messages: Iterable[tuple[list[dict], list[dict]]]) -> dict:
    """Per kind and micro precision, recall, F1 and support (labelled items), plus the
    negatives (messages labelled with no items) that got false items."""
    counts = {kind: {"tp": 0, "fp": 0, "fn": 0} for kind in KINDS}
    negatives = {"messages": 0, "with_false_items": 0, "false_items": 0}
    for predicted, gold in messages:
        matched = match(predicted, gold)
        for p, g in matched:
            counts[gold[g]["kind"]]["tp"] += 1
        for p in set(range(len(predicted))) - {p for p, _ in matched}:
            counts[predicted[p]["kind"]]["fp"] += 1
        for g in set(range(len(gold))) - {g for _, g in matched}:
            counts[gold[g]["kind"]]["fn"] += 1
        if not gold:
            negatives["messages"] += 1
            negatives["with_false_items"] += bool(predicted)
            negatives["false_items"] += len(predicted)
    total = {name: sum(c[name] for c in counts.values()) for name in ("tp", "fp", "fn")}
    return {"kinds": {kind: _rates(c) for kind, c in counts.items()}, "micro": _rates(total),
            "negatives": negatives}


def _rates(c: dict) -> dict:
    precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
    recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
            "support": c["tp"] + c["fn"], "predicted": c["tp"] + c["fp"]}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def predicted_items(text: str) -> list[dict]:
    return [{"kind": item.kind, **item.parts} for item in extract(text)]


def evaluate(path: Path) -> dict:
    """Run the extractor on every message of a labelled file and score it."""
    rows = load(path)
    result = score((predicted_items(row["text"]), row["items"]) for row in rows)
    return {"data": str(path), "messages": len(rows), **result}


def table(result: dict) -> str:
    lines = [f"{Path(result['data']).name} ({result['messages']} messages)",
             f"{'kind':<11} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>8} {'predicted':>9}"]
    for name, rates in [*result["kinds"].items(), ("micro", result["micro"])]:
        lines.append(f"{name:<11} {rates['precision']:>9.3f} {rates['recall']:>7.3f} {rates['f1']:>6.3f} "
                     f"{rates['support']:>8} {rates['predicted']:>9}")
    neg = result["negatives"]
    lines.append(f"negatives with false items: {neg['with_false_items']} of {neg['messages']} "
                 f"({neg['false_items']} false items)")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", type=Path, help="labelled JSONL files (default: dev and eval sets)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    missing = [str(path) for path in args.data or [] if not path.is_file()]
    if missing:
        parser.error(f"no such data file: {', '.join(missing)}")
    results = [evaluate(path) for path in args.data or [p for p in DEFAULT_DATA if p.exists()]]
    print("\n\n".join(table(r) for r in results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
