"""Recall ablations on LoCoMo, scored exactly as ../shared/bench/locomo_recall.py scores them.

Each conversation is ingested once, dated (each session at its own LoCoMo date, through the
Hermes provider, as the reference harness does), into a kept home; then every question is asked
through prefetch() with some module constants changed, and scored with the reference's own
functions (imported from it: content words, key sentence, one-line checks). So a row differs
from another only in recall code, not in ingest, and one costs ~35 s on the dev split instead
of a full run. Also reports where each evidence turn ranked among the hits (r10/r20/r50).

    python benchmarks/recall_ablation.py ingest --homes /tmp/abl
    python benchmarks/recall_ablation.py eval --homes /tmp/abl \
        --set hermes_cmms.recall.rank.NEIGHBOUR_WEIGHT=0.0 [--budget 1000] [--json out.json]
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import statistics
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench"
KW = dict(platform="cli", agent_context="primary", user_id="bench")


def reference():
    spec = importlib.util.spec_from_file_location("locomo_recall", SHARED / "locomo_recall.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = reference()


def provider(home: Path, session: str):
    os.environ["HERMES_HOME"] = str(home)
    from hermes_cmms.provider import CmmsMemoryProvider
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), **KW)
    return p


def ingest(sample: dict, home: Path) -> None:
    conv, clock, p = sample["conversation"], REF._Clock(True), None
    for key, date, turns in REF.sessions_of(conv):
        clock.at(REF.session_time(date))
        sid = f"{sample['sample_id']}-{key}"
        if p is None:
            p = provider(home, sid)
        else:
            p.on_session_switch(sid, reset=True)
        messages = []
        for i, (user, assistant) in enumerate(REF.turn_pairs(turns, conv["speaker_a"])):
            p.on_turn_start(i + 1, user)
            p.sync_turn(user, assistant, session_id=sid)
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        p.on_session_end(messages)
    p.service.indexer.drain(600)
    p.shutdown()
    clock.stop()


def evaluate(sample: dict, home: Path) -> list[dict]:
    conv = sample["conversation"]
    last = [REF.session_time(d) for _, d, _ in REF.sessions_of(conv)][-1]
    clock = REF._Clock(True)
    clock.at(last + timedelta(days=1))
    p = provider(home, f"{sample['sample_id']}-questions")
    p.service.indexer.ready.wait(60)
    dia = {t["dia_id"]: t for _, _, turns in REF.sessions_of(conv) for t in turns}
    asked = []
    for qa in sample["qa"]:
        evidence = [e.strip() for e in qa.get("evidence", []) if e.strip() in dia]
        if qa.get("category") == 5 or not evidence:
            continue
        started = time.perf_counter()
        context = p.prefetch(qa["question"], session_id="q") or ""
        ms = (time.perf_counter() - started) * 1000
        p._seen.clear()  # each question as if first asked (the reference uses one session, too)
        hits = p.service.search(p.scope, qa["question"], limit=300)
        asked.append({"category": qa["category"], "ms": ms, "tokens": REF.token_len(context),
                      "evidence": [score(dia[e]["text"], qa, context, hits) for e in evidence]})
    p.shutdown()
    clock.stop()
    return asked


def score(text: str, qa: dict, context: str, hits) -> dict:
    opening = REF.norm(text)[:60]
    lines = [set(REF.norm(line).split()) for line in context.splitlines() if line.strip()]
    def on_a_line(want: set) -> bool:
        return max((len(want & words) for words in lines), default=0) >= 0.8 * len(want) if want \
            else opening in REF.norm(context)
    rank = next((i for i, h in enumerate(hits) if opening in REF.norm(h.memory.content)), None)
    return {"key": on_a_line(REF.key_sentence(text, str(qa.get("answer", "")), qa["question"])),
            "words": on_a_line(REF.content_words(text)), "lenient": opening in REF.norm(context), "rank": rank}


def summary(asked: list[dict]) -> dict:
    ev = [e for q in asked for e in q["evidence"]]
    share = lambda k, rows: round(sum(r[k] for r in rows) / max(len(rows), 1), 3)  # noqa: E731
    ranked = lambda n: round(sum(e["rank"] is not None and e["rank"] < n for e in ev) / len(ev), 3)  # noqa: E731
    ms = sorted(q["ms"] for q in asked)
    by_cat = {c: share("key", [e for q in asked if q["category"] == c for e in q["evidence"]])
              for c in (1, 2, 3, 4) if any(q["category"] == c for q in asked)}
    return {"evidence": len(ev), "ev_key": share("key", ev), "ev_words": share("words", ev),
            "ev_recall": share("lenient", ev), "ev_key_by_cat": by_cat,
            "tokens": round(statistics.mean(q["tokens"] for q in asked)), "p50_ms": round(ms[len(ms) // 2], 1),
            "p95_ms": round(ms[int(len(ms) * 0.95)], 1), "r10": ranked(10), "r20": ranked(20), "r50": ranked(50)}


def apply(settings: list[str]) -> None:
    """`module.NAME=python-literal` overrides, e.g. hermes_cmms.recall.rank.RRF_K=30."""
    for item in settings:
        name, _, value = item.partition("=")
        module, _, attr = name.rpartition(".")
        setattr(importlib.import_module(module), attr, ast.literal_eval(value))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["ingest", "eval"])
    ap.add_argument("--homes", required=True, type=Path)
    ap.add_argument("--data", default=str(SHARED / "locomo-dev.json"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--budget", type=int)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.budget:
        os.environ["CMMS_RECALL_TOKENS"] = str(args.budget)
    apply(args.set)
    results = {}
    for sample in json.load(open(args.data)):
        home = args.homes / sample["sample_id"]
        if args.command == "ingest":
            home.mkdir(parents=True, exist_ok=False)
            ingest(sample, home)
            print("ingested", sample["sample_id"], flush=True)
        else:
            results[sample["sample_id"]] = evaluate(sample, home)
            print(sample["sample_id"], json.dumps(summary(results[sample["sample_id"]])), flush=True)
    if results:
        print("all", json.dumps(summary([q for rows in results.values() for q in rows])))
        if args.json:
            json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
