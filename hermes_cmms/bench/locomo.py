"""LoCoMo evidence recall, measured exactly as ../shared/bench/locomo_recall.py measures it.

Per conversation, in a fresh HERMES_HOME: every session is fed turn by turn (the first
speaker is the user), each session is ended, the provider is shut down and a new one is
opened (what was retained must survive a restart), then every question of categories 1-4
is asked through prefetch(). Dated (the default, the reference's --dated), each session is
fed while the clock stands at its LoCoMo date, and the questions are asked a day after the
last session; undated, everything happens now. Imported (`imported`), the sessions are instead
written as a ChatGPT export (one conversation a session, speaker_a's turns as the user's,
speaker_b's as the assistant's, each "Name: text" at its session's date plus a second a turn:
bench/_chatgpt.py) and imported a day after the last session with the real importer
(`hermes-cmms import`'s own: the reader, the import, the reading for facts), then consolidated
as the scheduler would, before the same questions are asked.

Each evidence turn is checked against the injected context (see _evidence):
  ev_key     its answer-bearing sentence has >= 80% of its content words on one line (primary);
  ev_words   the whole turn has >= 80% of its content words on one line;
  ev_cover   the mean share of its content words one line holds (partial credit);
  ev_recall  lenient: its first 60 normalised characters are in the context.
all_key / all_words / all_hit are the shares of questions whose every evidence turn passes.
Totals weight each conversation's figures by its number of questions, like the reference
harness; per-category figures pool every evidence turn of that category.
"""
from __future__ import annotations

import re
import statistics
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Optional, Sequence

from ..common import tokens
from ..common.errors import InvalidInput
from . import _chatgpt, _drive, _evidence
from ._display import Table, progress

CATEGORIES = (1, 2, 3, 4)  # 5 (adversarial, unanswerable) has no evidence to recall
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # LoCoMo's "1:56 pm on 8 May, 2023"
PER_TURN = ("ev_key", "ev_words", "ev_cover", "ev_recall")
PER_QUESTION = ("all_key", "all_words", "all_hit")


def run(path: str, budget: Optional[int] = None, convs: Sequence[str] = (), dated: bool = True,
        imported: bool = False) -> dict:
    """Benchmark every (or every named) conversation of a LoCoMo file; return the figures.
    Dated, each session is ingested at its own LoCoMo date; `imported`, through a ChatGPT
    export (see the module docstring)."""
    samples = select(load(path), convs)
    steps = sum(len(pairs) for s in samples for _, pairs in sessions(s)) + \
        sum(len(questions(s)) for s in samples)
    result = {"benchmark": "locomo", "file": str(path), "dated": dated, "imported": imported}
    clock = _drive.Clock(dated)
    with progress(steps, "locomo") as tick:
        done = [run_conversation(sample, budget, tick, result, clock, imported) for sample in samples]
    rows = [row for row, _ in done]
    result.update(rows=rows, total=total(rows, [s for _, scored in done for s in scored]))
    return result


def load(path: str) -> list[dict]:
    return _drive.load_list(path, "LoCoMo", "samples", _check_sample)


def _check_sample(path: str, i: int, sample: object) -> None:
    where = f"{path!r} is not a LoCoMo file:"
    conv = sample.get("conversation") if isinstance(sample, dict) else None
    qa = sample.get("qa") if isinstance(sample, dict) else None
    if not isinstance(conv, dict) or "speaker_a" not in conv or "sample_id" not in sample or \
            not isinstance(qa, list) or not all(isinstance(q, dict) and "question" in q for q in qa):
        raise InvalidInput(f"{where} sample {i} lacks sample_id, conversation.speaker_a "
                           "or a qa list of questions.")
    for key, turns in _session_items(conv):
        if not isinstance(turns, list) or not all(_is_turn(t) for t in turns):
            raise InvalidInput(f"{where} {sample['sample_id']} {key} is not a list of turns "
                               "with speaker, text and dia_id.")


def _is_turn(turn: object) -> bool:
    return isinstance(turn, dict) and {"speaker", "text", "dia_id"} <= turn.keys()


def select(samples: list[dict], convs: Sequence[str]) -> list[dict]:
    known = {s["sample_id"] for s in samples}
    unknown = [c for c in convs if c not in known]
    if unknown:
        raise InvalidInput(f"No conversation {unknown[0]!r} in the file; it has {', '.join(sorted(known))}.")
    return [s for s in samples if not convs or s["sample_id"] in convs]


def _session_items(conv: dict) -> list[tuple[str, list]]:
    keys = [k for k in conv if _SESSION_KEY.fullmatch(k)]
    return [(k, conv[k]) for k in sorted(keys, key=lambda k: int(k.split("_")[1]))]


def sessions(sample: dict) -> list[tuple[str, list[_drive.Pair]]]:
    """(session id, turn pairs) per session, in order; the first speaker is the user."""
    conv = sample["conversation"]
    return [(f"{sample['sample_id']}-{key}",
             _drive.pair_up([(t["speaker"] == conv["speaker_a"], line(t), t["dia_id"]) for t in turns]))
            for key, turns in _session_items(conv)]


def session_times(sample: dict) -> list[Optional[datetime]]:
    """Each session's LoCoMo date as an aware UTC datetime (None where absent or unparsable)."""
    conv = sample["conversation"]
    return [session_time(str(conv.get(f"{key}_date_time", ""))) for key, _ in _session_items(conv)]


def session_time(date: str) -> Optional[datetime]:
    try:
        return datetime.strptime(date.strip(), _DATE_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def question_time(sample: dict) -> Optional[datetime]:
    """A day after the last dated session (None when no session has a date)."""
    dated = [when for when in session_times(sample) if when is not None]
    return dated[-1] + timedelta(days=1) if dated else None


def line(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    return text + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")


def questions(sample: dict) -> list[tuple[dict, list[str]]]:
    """The scored questions with their evidence turn ids (categories 1-4, known evidence only)."""
    dia = dialogue(sample)
    out = []
    for qa in sample["qa"]:
        evidence = [e.strip() for e in qa.get("evidence", []) if e.strip() in dia]
        if qa.get("category") != 5 and evidence:
            out.append((qa, evidence))
    return out


def dialogue(sample: dict) -> dict[str, dict]:
    return {t["dia_id"]: t for _, turns in _session_items(sample["conversation"]) for t in turns}


def run_conversation(sample: dict, budget: Optional[int], tick, result: dict,
                     clock: _drive.Clock, imported: bool = False) -> tuple[dict, list]:
    name = sample["sample_id"]
    with _drive.fresh_home(budget) as home:
        try:
            if imported:
                clock.at(question_time(sample))
                ingest_s = ingest_imported(home, sample, tick, clock.dated)
            else:
                ingest_s = _drive.ingest(home, sessions(sample), tick, clock, session_times(sample))
            clock.at(question_time(sample))
            scored = ask_all(home, sample, tick, result)
        finally:
            clock.stop()
    return conversation_row(name, scored, ingest_s), scored


def chatgpt_export(sample: dict, dated: bool = True) -> list[dict]:
    """The sample's sessions as ChatGPT's conversations.json holds conversations (see the
    module docstring); undated, or without a date of its own, a session is dated now."""
    conv, now = sample["conversation"], datetime.now(timezone.utc)
    out = []
    for (key, turns), when in zip(_session_items(conv), session_times(sample)):
        start = ((when if dated else None) or now).timestamp()
        messages = [("user" if t["speaker"] == conv["speaker_a"] else "assistant", line(t), start + n)
                    for n, t in enumerate(turns)]
        conversation_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{sample['sample_id']}/{key}"))
        out.append(_chatgpt.conversation(conversation_id, f"{sample['sample_id']} {key}", messages))
    return out


def ingest_imported(home, sample: dict, tick, dated: bool = True) -> float:
    """Import the sample as a ChatGPT export into the scope the provider gives the bench user,
    read it for facts, consolidate, index its vectors; return wall seconds."""
    started = time.perf_counter()
    path = _chatgpt.write(home / "conversations.json", chatgpt_export(sample, dated))
    provider = _drive.open_provider(home, f"{sample['sample_id']}-import")
    try:
        service = provider.service
        service.transfer.import_foreign(path, fmt="chatgpt", scope=provider.scope, actor="bench:import")
        service.upkeep.learn_history()
        service.upkeep.consolidate_all()
        service.upkeep.drain(3600.0)
    finally:
        provider.shutdown()
    for _, pairs in sessions(sample):
        for _ in pairs:
            tick(f"import {sample['sample_id']}")
    return time.perf_counter() - started


def ask_all(home, sample: dict, tick, result: dict) -> list[dict]:
    """A fresh provider (what was retained must survive a restart) asked every question."""
    name = sample["sample_id"]
    provider = _drive.open_provider(home, f"{name}-questions")
    try:
        result.setdefault("budget", provider.settings.recall_tokens)
        dia = dialogue(sample)
        scored = [ask(provider, f"{name}-questions", qa, ev, dia, tick) for qa, ev in questions(sample)]
        result.setdefault("embedder", _drive.embedder_name(provider))
    finally:
        provider.shutdown()
    return scored


def ask(provider, session_id: str, qa: dict, evidence: list[str], dia: dict, tick) -> dict:
    context, ms = _drive.prefetch(provider, qa["question"], session_id)
    tick("questions")
    checks = [_evidence.check(dia[e]["text"], str(qa.get("answer", "")), qa["question"], context)
              for e in evidence]
    return {"category": qa.get("category"), "ev_recall": [c["lenient"] for c in checks],
            "ev_cover": [c["cover"] for c in checks],
            "ev_words": [c["cover"] >= _evidence.STRICT for c in checks],
            "ev_key": [c["key"] for c in checks], "tokens": tokens.count(context), "ms": ms}


def conversation_row(name: str, scored: list[dict], ingest_s: float) -> dict:
    return {"conv": name, **recall_of(scored),
            "tokens": statistics.mean(s["tokens"] for s in scored) if scored else 0,
            "ingest_s": ingest_s, **_drive.latency([s["ms"] for s in scored]),
            "by_category": by_category(scored)}


def recall_of(scored: list[dict]) -> dict:
    """Per evidence turn: the share that passes each check (cover: the mean share);
    per question: the share whose every evidence turn passes it."""
    evidence = sum(len(s["ev_recall"]) for s in scored)
    per_turn = {key: _drive.ratio(sum(sum(s[key]) for s in scored), evidence) for key in PER_TURN}
    per_question = {every: _drive.ratio(sum(all(s[key]) for s in scored), len(scored))
                    for every, key in zip(PER_QUESTION, ("ev_key", "ev_words", "ev_recall"))}
    return {"questions": len(scored), "evidence": evidence, **per_turn, **per_question}


def by_category(scored: list[dict]) -> dict:
    return {str(c): recall_of([s for s in scored if s["category"] == c]) for c in CATEGORIES}


def total(rows: list[dict], scored: list[dict]) -> dict:
    """Conversation rows combined the reference harness' way (weighted by questions);
    per-category figures pool every question of that category."""
    n = sum(r["questions"] for r in rows)
    weighted = {key: _drive.ratio(sum(r[key] * r["questions"] for r in rows), n)
                for key in (*PER_TURN, *PER_QUESTION, "tokens")}
    return {"convs": len(rows), "questions": n, "evidence": sum(r["evidence"] for r in rows),
            **weighted, "ingest_s": sum(r["ingest_s"] for r in rows),
            "p50_ms": statistics.median([r["p50_ms"] for r in rows]) if rows else 0,
            "p95_ms": max([r["p95_ms"] for r in rows], default=0), "by_category": by_category(scored)}


def tables(result: dict) -> list[Table]:
    keys = ("questions", "ev_key", "ev_words", "ev_recall", "all_key", "tokens", "ingest_s",
            "p50_ms", "p95_ms")
    conv_rows = [[r["conv"], *(r[k] for k in keys)] for r in result["rows"]]
    conv_rows.append(["total", *(result["total"][k] for k in keys)])
    cat_keys = ("questions", "evidence", "ev_key", "ev_words", "ev_recall", "all_key")
    cat_rows = [[f"{c} {CATEGORY_NAMES[int(c)]}", *(v[k] for k in cat_keys)]
                for c, v in result["total"]["by_category"].items()]
    title = (f"LoCoMo evidence recall ({'dated' if result.get('dated') else 'undated'}"
             f"{', imported as a ChatGPT export' if result.get('imported') else ''}), budget "
             f"{result.get('budget')} tokens, embedder {result.get('embedder')}")
    return [(title, ["conv", *keys], conv_rows), ("By category", ["category", *cat_keys], cat_rows)]
