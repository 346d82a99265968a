"""Recall ablations on the three dev families, scored exactly as ../shared/bench's harnesses score them.

The families (../shared/bench/README.md): LoCoMo dev (4 conversations, ev_key), REALTALK dev (3 real
chats, ev_key) and LoCoMo-Plus dev (101 cue/trigger items stitched by locomo_plus.py into conv-41
and conv-42, cue_key). Each conversation is ingested once, dated (each session at its own date,
through the Hermes provider, as the harnesses do), into a kept home; then every question (trigger)
is asked through prefetch() with some module constants changed, and scored with the harnesses' own
functions (imported from them: content words, key sentence, one-line checks, the cue stitching).
So a row differs from another only in recall code, not in ingest. Also reports where each evidence
turn (cue line) ranked among the hits (r10/r20/r50).

    python benchmarks/recall_ablation.py ingest --homes /tmp/abl [--family locomo,realtalk,plus]
    python benchmarks/recall_ablation.py eval --homes /tmp/abl \
        --set hermes_cmms.recall.rank.NEIGHBOUR_WEIGHT=0.0 [--budget 1000] [--json out.json]
    python benchmarks/recall_ablation.py ingest|eval --bge plain|prefixed --homes /tmp/abl-bge   # bge-small

`--data FILE` runs one LoCoMo-shaped file instead (as the family "locomo"). Prints one line per
conversation ("family/conv {json}") and one per family ("family {json}").
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
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from tqdm import tqdm

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench"
KW = dict(platform="cli", agent_context="primary", user_id="bench")
FAMILIES = {"locomo": "locomo-dev.json", "realtalk": "realtalk-dev.json", "plus": "locomo-plus-dev.json"}


def reference(name: str = "locomo_recall"):
    spec = importlib.util.spec_from_file_location(name, SHARED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = reference()
PLUS = reference("locomo_plus")


def progress(items, **options) -> tqdm:
    """A tqdm bar timed by perf_counter: the wall clock moves to each session's date."""
    bar = tqdm(items, **options)
    bar._time = time.perf_counter
    bar.start_t = bar.last_print_t = time.perf_counter()
    return bar


def provider(home: Path, session: str):
    os.environ["HERMES_HOME"] = str(home)
    from hermes_cmms.provider import CmmsMemoryProvider
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), **KW)
    return p


# -- what each family ingests and asks ------------------------------------------------------------

def sessions(sample: dict) -> list[tuple]:
    """(time, session id, turns) of a conversation, in order."""
    out, at = [], None
    for key, date, turns in REF.sessions_of(sample["conversation"]):
        at = REF.session_time(date) or at
        out.append((at, f"{sample['sample_id']}-{key}", turns))
    return out


def plus_samples(items: list[dict]) -> list[dict]:
    """The LoCoMo conversations the LoCoMo-Plus items name, each with its cues as sessions of
    their own (locomo_plus.run_conv's stitching) and its items as questions."""
    locomo = {s["sample_id"]: s for s in json.loads((SHARED / FAMILIES["locomo"]).read_text())}
    by_conv = defaultdict(list)
    for item in items:
        by_conv[item["conv"]].append(item)
    out = []
    for conv, asked in by_conv.items():
        sample, a, b = locomo[conv], locomo[conv]["conversation"]["speaker_a"], locomo[conv]["conversation"]["speaker_b"]
        ask_at = sessions(sample)[-1][0] + PLUS.QUERY_AFTER
        cues = [(ask_at - timedelta(days=PLUS.gap_days(it["time_gap"])), 1, n, f"{conv}-plus-{n}",
                 [{"speaker": a if role == "A" else b, "text": text} for role, text in PLUS.dialogue_lines(it["cue_dialogue"])])
                for n, it in enumerate(asked)]
        events = sorted([(at, 0, k, sid, turns) for k, (at, sid, turns) in enumerate(sessions(sample))] + cues,
                        key=lambda e: e[:3])
        out.append({"sample_id": conv, "conversation": sample["conversation"], "plus": asked, "ask_at": ask_at,
                    "events": [(at, sid, turns) for at, _, _, sid, turns in events]})
    return out


def samples(family: str, data: str | None) -> list[dict]:
    loaded = json.loads(Path(data or SHARED / FAMILIES[family]).read_text())
    return plus_samples(loaded) if family == "plus" else loaded


def ingest(sample: dict, home: Path) -> None:
    speaker_a = sample["conversation"]["speaker_a"]
    store_sessions(home, [(at, sid, list(REF.turn_pairs(turns, speaker_a)))
                          for at, sid, turns in sample.get("events") or sessions(sample)], sample["sample_id"])


def store_sessions(home: Path, dated: list[tuple], desc: str) -> None:
    """(time, session id, [(user, assistant)]) sessions stored in order through one provider, each
    at its own time: turn start, sync_turn, session end, a switch to the next session; then the
    vectors drained."""
    clock, p = REF._Clock(True), None
    for at, sid, pairs in progress(dated, desc=desc, unit="session"):
        clock.at(at)
        if p is None:
            p = provider(home, sid)
        else:
            p.on_session_switch(sid, reset=True)
        messages = []
        for i, (user, assistant) in enumerate(pairs):
            p.on_turn_start(i + 1, user)
            p.sync_turn(user, assistant, session_id=sid)
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        p.on_session_end(messages)
    p.service.indexer.drain(600)
    p.shutdown()
    clock.stop()


def questions(sample: dict) -> list[tuple]:
    """(question, group, [(evidence text, scorer)]) of a sample: LoCoMo-shaped QA by category, or
    LoCoMo-Plus triggers by relation type (the evidence is the cue's A line)."""
    if "plus" in sample:
        out = []
        for item in sample["plus"]:
            lines = PLUS.dialogue_lines(item["cue_dialogue"])
            cue = next((text for role, text in lines if role == "A"), "")
            trigger = " ".join(t for _, t in PLUS.dialogue_lines(item["trigger_query"])) or item["trigger_query"]
            out.append((trigger, item["relation_type"], [(cue, lambda text, context: cue_found(text, context))]))
        return out
    dia = {t["dia_id"]: t for _, _, turns in REF.sessions_of(sample["conversation"]) for t in turns}
    out = []
    for qa in sample["qa"]:
        evidence = [e.strip() for e in qa.get("evidence", []) if e.strip() in dia]
        if qa.get("category") != 5 and evidence:
            out.append((qa["question"], qa["category"],
                        [(dia[e]["text"], lambda text, context, qa=qa: evidence_found(text, qa, context)) for e in evidence]))
    return out


def evaluate(sample: dict, home: Path) -> list[dict]:
    clock = REF._Clock(True)
    clock.at(sample.get("ask_at") or sessions(sample)[-1][0] + timedelta(days=1))
    p = provider(home, f"{sample['sample_id']}-questions")
    p.service.indexer.ready.wait(60)
    asked = []
    for question, group, evidence in progress(questions(sample), desc=sample["sample_id"], unit="q", leave=False):
        started = time.perf_counter()
        context = p.prefetch(question, session_id="q") or ""
        ms = (time.perf_counter() - started) * 1000
        p._seen.clear()  # each question as if first asked (the harnesses start a session per item, too)
        hits = p.service.search(p.scope, question, limit=300)
        asked.append({"category": group, "ms": ms, "tokens": REF.token_len(context),
                      "evidence": [{**found(text, context), "rank": rank_of(text, hits)} for text, found in evidence],
                      **({"block": composition(p, question)} if COMPOSITION else {})})
    p.shutdown()
    clock.stop()
    return asked


COMPOSITION = False  # --composition: what each block's tokens are spent on (a second, explained recall)


def composition(p, question: str) -> dict:
    """What a block's tokens hold: memory lines by kind (`message` lines split by role), the
    tokens of what is not a memory's text (header, day headings, blank lines, each line's label),
    and how many distinct source messages it quotes (a derived line whose text repeats a message
    line of the block counts as a repeat, not a source)."""
    from hermes_cmms.recall.block import recall_block
    from hermes_cmms.recall.render import LINE_PREFIX

    explain: dict = {}
    text = recall_block(p.service.engine, p.scope, question, p.service.settings.recall_tokens, explain=explain)
    memories = {h.memory.id: h.memory for h in explain.get("hits", [])}
    packed = explain.get("packing", {}).get("packed", [])
    out = defaultdict(int, total=REF.token_len(text) if text else 0)
    message_words = [set(REF.content_words(memories[m].content)) for m, _ in packed
                     if m in memories and memories[m].kind == "message"]
    for memory_id, line in packed:
        memory = memories.get(memory_id)
        kind = "other" if memory is None else memory.kind if memory.kind != "message" else f"message:{memory.role}"
        cost = REF.token_len(line) + 1
        label = line[len(LINE_PREFIX):].split(": ", 1)[0]
        out[f"tokens:{kind}"] += cost
        out[f"lines:{kind}"] += 1
        out["tokens:labels"] += REF.token_len(LINE_PREFIX + label + ": ")
        if memory is not None and memory.kind != "message":
            words = set(REF.content_words(memory.content))
            if words and any(len(words & w) >= 0.8 * len(words) for w in message_words):
                out["tokens:derived_repeat"] += cost
    kinds = [k[len("lines:"):] for k in out if k.startswith("lines:")]
    out["tokens:overhead"] = out["total"] - sum(out[f"tokens:{kind}"] for kind in kinds)
    out["sources"] = len(message_words)
    return dict(out)


def composition_summary(asked: list[dict]) -> dict:
    """Mean tokens a block spends on each part, and tokens per distinct source message."""
    blocks = [q["block"] for q in asked if q.get("block")]
    if not blocks:
        return {}
    keys = sorted({k for b in blocks for k in b})
    mean = {k: round(sum(b.get(k, 0) for b in blocks) / len(blocks), 1) for k in keys}
    mean["tokens_per_source"] = round(sum(b["total"] for b in blocks) / max(sum(b["sources"] for b in blocks), 1), 1)
    return mean


# -- scoring, with the harnesses' own rules -------------------------------------------------------

def evidence_found(text: str, qa: dict, context: str) -> dict:
    opening = REF.norm(text)[:60]
    lines = [set(REF.norm(line).split()) for line in context.splitlines() if line.strip()]

    def on_a_line(want: set) -> bool:
        return max((len(want & words) for words in lines), default=0) >= 0.8 * len(want) if want \
            else opening in REF.norm(context)
    return {"key": on_a_line(REF.key_sentence(text, str(qa.get("answer", "")), qa["question"])),
            "words": on_a_line(REF.content_words(text)), "lenient": opening in REF.norm(context)}


def cue_found(cue: str, context: str) -> dict:
    """locomo_plus' cue_key: the cue's A line has >= 80% of its content words on one block line."""
    lines = [set(REF.norm(line).split()) for line in context.splitlines() if line.strip()]
    covered = PLUS._share(cue, lines, REF.norm(context)) >= 0.8
    return {"key": covered, "words": covered, "lenient": REF.norm(cue)[:60] in REF.norm(context)}


def rank_of(text: str, hits) -> int | None:
    opening = REF.norm(text)[:60]
    return next((i for i, h in enumerate(hits) if opening in REF.norm(h.content)), None)


def summary(asked: list[dict]) -> dict:
    ev = [e for q in asked for e in q["evidence"]]
    share = lambda k, rows: round(sum(r[k] for r in rows) / max(len(rows), 1), 3)  # noqa: E731
    ranked = lambda n: round(sum(e["rank"] is not None and e["rank"] < n for e in ev) / len(ev), 3)  # noqa: E731
    ms = sorted(q["ms"] for q in asked)
    by_cat = {c: share("key", [e for q in asked if q["category"] == c for e in q["evidence"]])
              for c in sorted({q["category"] for q in asked}, key=str)}
    return {"evidence": len(ev), "ev_key": share("key", ev), "ev_words": share("words", ev),
            "ev_recall": share("lenient", ev), "ev_key_by_cat": by_cat,
            "tokens": round(statistics.mean(q["tokens"] for q in asked)), "p50_ms": round(ms[len(ms) // 2], 1),
            "p95_ms": round(ms[int(len(ms) * 0.95)], 1), "r10": ranked(10), "r20": ranked(20), "r50": ranked(50),
            **({"block": composition_summary(asked)} if COMPOSITION else {})}


def use_bge(prefixed: bool) -> None:
    """Make bge-small the embedder every provider of this process loads (embedder `auto`)."""
    import sys
    sys.path.insert(0, str(HERE / "baselines"))
    import rawlines
    from hermes_cmms.vectors import embedders
    embedders._cache[("auto", "auto")] = rawlines.BgeSmall(query_prefix=rawlines.BGE_QUERY_PREFIX if prefixed else "")


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
    ap.add_argument("--family", default=",".join(FAMILIES), help="comma-separated: locomo, realtalk, plus")
    ap.add_argument("--data", help="one LoCoMo-shaped file instead of the families (run as 'locomo')")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--budget", type=int)
    ap.add_argument("--json")
    ap.add_argument("--composition", action="store_true", help="what each block's tokens hold (a second recall a question)")
    ap.add_argument("--bge", choices=["plain", "prefixed"],
                    help="bge-small int8 (baselines/fetch_bge.py) in place of MiniLM for stored texts and queries, "
                         "queries with its instruction or without; give it to ingest and eval alike")
    args = ap.parse_args(argv)
    if args.bge:
        use_bge(args.bge == "prefixed")
    global COMPOSITION
    COMPOSITION = args.composition
    if args.budget:
        os.environ["CMMS_RECALL_TOKENS"] = str(args.budget)
    apply(args.set)
    results = {}
    for family in ["locomo"] if args.data else args.family.split(","):
        for sample in samples(family, args.data):
            home = args.homes / family / sample["sample_id"]
            if args.command == "ingest":
                home.mkdir(parents=True, exist_ok=False)
                ingest(sample, home)
            else:
                rows = results.setdefault(family, {})[sample["sample_id"]] = evaluate(sample, home)
                print(f"{family}/{sample['sample_id']}", json.dumps(summary(rows)), flush=True)
        if family in results:
            print(family, json.dumps(summary([q for rows in results[family].values() for q in rows])), flush=True)
    if results and args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
