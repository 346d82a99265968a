"""Recall precision: what the memory block puts into prompts that have nothing to do with the
user's past, and whether prompts that ask for a stored fact in other words still get it.

Hermes injects prefetch()'s block into every prompt, so a line that does not help costs tokens
and misleads the model (issue 38, step 5). The store is a hand-written personal chat
(benchmarks/data/precision.json: 12 sessions over eight weeks, ingested dated through the real
provider as recall_ablation.py ingests), then each prompt is asked as if first asked:

- unrelated prompts (coding, arithmetic, trivia, writing, how-to): memory lines injected
  (block lines starting "- "), the share that get none, tokens (cl100k, the harness' count);
- related prompts: facts found, i.e. the answering user turn has >= 80% of its content words on
  one line of the block (recall_ablation.evidence_found's `words` rule, the harness' own);
- broad prompts about the user ("What do you know about me?", "Tell me about my family"): lines
  given, and the share that get three or more (they should get the user's life, not nothing).

    python benchmarks/precision.py [--home DIR] [--embedder none] [--limit N] [--show]
        [--set hermes_cmms.recall.rank.RRF_K=30] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from recall_ablation import REF, apply, evidence_found, progress, provider, store_sessions

DATA = Path(__file__).resolve().parent / "data" / "precision.json"
LINE_PREFIX = "- "  # hermes_cmms.recall.render.LINE_PREFIX: one memory a line
GOALS = "goals (issue 38): unrelated <= 1 line on average and >= 70% with none; related >= 80% found"


def load(path: Path) -> dict:
    """The chat and the prompts; every related prompt's answer line must be a stored user turn."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    said = {user for session in data["sessions"] for user, _ in session["turns"]}
    missing = [r["answer_line"] for r in data["related"] if r["answer_line"] not in said]
    if missing:
        raise SystemExit(f"answer lines that are no user turn of the chat: {missing}")
    return data


def ingest(sessions: list[dict], home: Path) -> None:
    """Each session stored at its own date through one provider (recall_ablation.store_sessions)."""
    store_sessions(home, [(datetime.fromisoformat(s["date"]), s["id"], s["turns"]) for s in sessions], "ingest")


def memory_lines(block: str) -> list[str]:
    """The memories of a block, one a line (its other lines are the header, dates and blanks)."""
    return [line[len(LINE_PREFIX):] for line in block.splitlines() if line.startswith(LINE_PREFIX)]


def prompts(data: dict, limit: int | None) -> list[tuple[str, str, str | None]]:
    """(kind, prompt, answer line) for the first `limit` prompts of each kind."""
    return [("unrelated", prompt, None) for prompt in data["unrelated"][:limit]] + \
        [("related", r["prompt"], r["answer_line"]) for r in data["related"][:limit]] + \
        [("about_me", prompt, None) for prompt in data.get("about_me", [])[:limit]]


def ask(data: dict, home: Path, limit: int | None) -> dict[str, list[dict]]:
    """Every prompt through a fresh provider a day after the last session, each as if first
    asked (a session id of its own, nothing counted as injected before); a row per prompt."""
    clock = REF._Clock(True)
    clock.at(datetime.fromisoformat(data["sessions"][-1]["date"]) + timedelta(days=1))
    p = provider(home, "precision-prompts")
    p.service.indexer.ready.wait(60)
    rows: dict[str, list[dict]] = {"unrelated": [], "related": [], "about_me": []}
    for n, (kind, prompt, answer) in enumerate(progress(prompts(data, limit), desc="prompts", unit="prompt")):
        block = p.prefetch(prompt, session_id=f"precision-{n}") or ""
        p._seen.clear()
        injected = memory_lines(block)
        row = {"prompt": prompt, "lines": len(injected), "tokens": REF.token_len(block), "injected": injected}
        if answer is not None:
            row |= {"answer_line": answer, "found": found(answer, prompt, block)}
        rows[kind].append(row)
    p.shutdown()
    clock.stop()
    return rows


def found(answer: str, prompt: str, block: str) -> bool:
    """Whether >= 80% of the answer line's content words are on one line of the block."""
    return evidence_found(answer, {"question": prompt, "answer": ""}, block)["words"]


def summary(rows: dict[str, list[dict]]) -> dict:
    """Per kind: memory lines and tokens on average; the share of unrelated prompts with no
    memory line, the share of related prompts that found their fact."""
    unrelated, related = rows["unrelated"], rows["related"]

    def mean(key: str, of: list[dict]) -> float:
        return round(statistics.mean(r[key] for r in of), 2) if of else 0.0

    def share(test, of: list[dict]) -> float:
        return round(sum(map(test, of)) / len(of), 3) if of else 0.0
    return {"unrelated": {"prompts": len(unrelated), "mean_lines": mean("lines", unrelated),
                          "share_none": share(lambda r: r["lines"] == 0, unrelated),
                          "mean_tokens": mean("tokens", unrelated),
                          "max_lines": max((r["lines"] for r in unrelated), default=0)},
            "related": {"prompts": len(related), "found": share(lambda r: r["found"], related),
                        "mean_lines": mean("lines", related), "mean_tokens": mean("tokens", related)},
            "about_me": {"prompts": len(rows["about_me"]), "mean_lines": mean("lines", rows["about_me"]),
                         "share_3_lines": share(lambda r: r["lines"] >= 3, rows["about_me"])}}


def report(rows: dict[str, list[dict]], figures: dict, show: bool) -> None:
    """The figures, the related prompts that missed, and with `show` what each unrelated got."""
    u, r = figures["unrelated"], figures["related"]
    print(f"unrelated prompts: {u['prompts']}  memory lines {u['mean_lines']} on average (max {u['max_lines']}), "
          f"{u['share_none']:.0%} with none, {u['mean_tokens']} tokens on average")
    print(f"related prompts:   {r['prompts']}  facts found {r['found']:.0%}, "
          f"memory lines {r['mean_lines']} on average, {r['mean_tokens']} tokens on average")
    a = figures["about_me"]
    print(f"about the user: {a['prompts']}  memory lines {a['mean_lines']} on average, "
          f"{a['share_3_lines']:.0%} with 3 or more ('What do you know about me?', 'Tell me about my family')")
    print(GOALS)
    for row in rows["related"]:
        if not row["found"]:
            print(f"  missed: {row['prompt']!r} (wants {row['answer_line']!r})")
    for row in rows["unrelated"] if show else []:
        print(f"\n{row['prompt']!r}: {row['lines']} line(s)")
        for line in row["injected"]:
            print(f"    {line}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the chat and prompts (default: %(default)s)")
    ap.add_argument("--home", type=Path, help="a new Hermes home to fill and keep (default: a temporary one)")
    ap.add_argument("--embedder", help="CMMS_EMBEDDER for the run (e.g. none: keyword-only)")
    ap.add_argument("--set", action="append", default=[], help="module.NAME=python-literal, as recall_ablation")
    ap.add_argument("--limit", type=int, help="only the first N prompts of each kind")
    ap.add_argument("--show", action="store_true", help="print the lines each unrelated prompt got")
    ap.add_argument("--json", help="write the figures and a row per prompt here")
    args = ap.parse_args(argv)
    if args.embedder:
        os.environ["CMMS_EMBEDDER"] = args.embedder
    apply(args.set)
    data = load(args.data)
    with tempfile.TemporaryDirectory(prefix="cmms-precision-") as scratch:
        home = args.home or Path(scratch) / "home"
        if home.exists():
            raise SystemExit(f"{home} exists: give a new directory (the chat would be stored twice)")
        home.mkdir(parents=True)
        ingest(data["sessions"], home)
        rows = ask(data, home, args.limit)
    figures = summary(rows)
    report(rows, figures, args.show)
    if args.json:
        settings = {"embedder": os.environ.get("CMMS_EMBEDDER", "auto"), "set": args.set, "limit": args.limit}
        Path(args.json).write_text(json.dumps({"summary": figures, "settings": settings, **rows}, indent=1),
                                   encoding="utf-8")


if __name__ == "__main__":
    main()
