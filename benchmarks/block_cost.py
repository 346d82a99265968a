"""What making the memory block inert costs: tokens and render time, against another commit.

Packs 60 turns of tests/data/locomo_tiny.json (repeated, numbered) with the current
hermes_cmms.recall.render.render and with the one at REV (default f83b759, before the block was made
inert), at the default 600-token budget and with room for all, then times both renders on
plain ASCII text, non-ASCII text, and text with brackets (which takes the slower path).

    python benchmarks/block_cost.py [--rev REV]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

from hermes_cmms.recall import render as recall

from hermes_cmms.common import tokens
from hermes_cmms.store.models import Memory

REPO = Path(__file__).resolve().parent.parent
EXTRAS = {"ascii": "", "non-ascii": " — café 東京 naïve «ok»", "brackets": " if a < b then <b>x</b> ＜y＞"}


def recall_at(rev: str):
    """hermes_cmms.recall.render as it was at `rev`, loaded beside the current one."""
    source = subprocess.run(["git", "show", f"{rev}:hermes_cmms/recall.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    source = source.replace("from . import", "from hermes_cmms import").replace("from .", "from hermes_cmms.")
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(f"recall_{rev}", loader=None))
    sys.modules[module.__name__] = module
    exec(compile(source, f"{rev}:recall.py", "exec"), module.__dict__)  # our own file
    return module


def hits(extra: str = "", count: int = 60) -> list[recall.Hit]:
    data = json.loads((REPO / "tests/data/locomo_tiny.json").read_text())[0]["conversation"]
    turns = [t for key, v in data.items() if key.startswith("session_") and isinstance(v, list) for t in v]
    out = []
    for i in range(count):
        turn, at = turns[i % len(turns)], 86400.0 * (i // 6) + i
        text = f"{turn['speaker']}: {turn['text']} ({i}){extra}"
        out.append(recall.Hit(Memory(
            id=str(i), scope="s", tier="episodic", kind="message", role=("user", "assistant")[i % 2],
            content=text, content_hash=str(i), session_id=f"s{i // 6}", turn=i % 6 + 1, source="",
            tags="[]", confidence=1.0, state="active", created_at=at, updated_at=at), 1.0))
    return out


def packed(block: str) -> int:
    return sum(1 for line in block.split("\n") if line and not line.startswith(("## ", recall.HEADER)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="f83b759")
    rev = parser.parse_args().rev
    before, sample = recall_at(rev), hits()
    for budget in (600, 100_000):
        for name, module in ((rev, before), ("now", recall)):
            block = module.render(sample, budget, "puppy")
            print(f"budget {budget:>6}, {name:>8}: {tokens.count(block):>5} tokens, {packed(block)} memories")
    for kind, extra in EXTRAS.items():
        sample = hits(extra)
        for name, module in ((rev, before), ("now", recall)):
            start, rounds = time.perf_counter(), 50
            for _ in range(rounds):
                module.render(sample, 100_000, "puppy")
            print(f"{kind:>9}, {name:>8}: {(time.perf_counter() - start) / rounds * 1000:.2f} ms a render of 60 memories")


if __name__ == "__main__":
    main()
