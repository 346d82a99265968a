"""LongMemEval_S retrieval recall through the provider, scored like LongMemEval's retrieval eval.

Per question, in a fresh HERMES_HOME: every haystack session is fed turn by turn (session id
= the haystack session id) and ended, the provider is shut down and a new one opened, then
the question is asked once through prefetch() (the injected context) and once through the
engine's ranked search. From the ranking:

  recall_any@k  1 if any gold item is among the top k, else 0
  recall_all@k  1 if every gold item is among the top k, else 0

at session level (gold = answer_session_ids; hits ranked into distinct sessions) and at turn
level (gold = messages with has_answer; a hit covers the messages stored in it). Questions
with no gold at a level are left out of that level's mean; abstention questions (id ending
in "_abs") are skipped. The ranking is the engine's hybrid search (up to 100 hits, so that k
distinct sessions can be found), asked after prefetch. As for LoCoMo, a gold message counts as
in the context when its first 60 normalised characters are. Haystack dates are not replayed:
memories carry ingest time.
"""
from __future__ import annotations

import statistics
from typing import Optional, Sequence

from ..common import tokens
from ..common.errors import InvalidInput
from ..common.text import clean
from . import _drive
from ._display import Table, progress

DEFAULT_K = (1, 3, 5, 10)
RANKED_HITS = 100  # enough hits to rank sessions: one session often owns several hits
REQUIRED = ("question_id", "question_type", "question", "haystack_session_ids",
            "haystack_sessions", "answer_session_ids")


def run(path: str, budget: Optional[int] = None, ks: Sequence[int] = DEFAULT_K,
        limit: Optional[int] = None) -> dict:
    """Benchmark every non-abstention question of a LongMemEval file; return the figures."""
    items = load(path)
    answerable = [item for item in items if not is_abstention(item)]
    if not answerable:
        raise InvalidInput(f"{path!r} has only abstention questions; there is nothing to retrieve.")
    asked = answerable[:limit] if limit else answerable
    steps = sum(len(pairs) for item in asked for _, pairs in sessions(item)) + len(asked)
    result = {"benchmark": "longmemeval", "file": str(path), "k": list(ks),
              "skipped_abstention": len(items) - len(answerable)}
    with progress(steps, "longmemeval") as tick:
        rows = [run_item(item, budget, ks, tick, result) for item in asked]
    types = sorted({r["question_type"] for r in rows})
    result.update(rows=rows, total=summary(rows, ks),
                  by_type={t: summary([r for r in rows if r["question_type"] == t], ks) for t in types})
    return result


def is_abstention(item: dict) -> bool:
    return str(item["question_id"]).endswith("_abs")


def load(path: str) -> list[dict]:
    return _drive.load_list(path, "LongMemEval", "questions", _check_item)


def _check_item(path: str, i: int, item: object) -> None:
    where = f"{path!r} is not a LongMemEval file:"
    if not isinstance(item, dict):
        raise InvalidInput(f"{where} item {i} is not an object.")
    missing = [key for key in REQUIRED if key not in item]
    if missing:
        raise InvalidInput(f"{where} item {i} has no {missing[0]!r}.")
    ids, haystack = item["haystack_session_ids"], item["haystack_sessions"]
    if not isinstance(ids, list) or not isinstance(haystack, list) or len(ids) != len(haystack):
        raise InvalidInput(f"{where} question {item['question_id']!r} needs as many "
                           "haystack_session_ids as haystack_sessions.")
    if not isinstance(item["question"], str) or not isinstance(item["answer_session_ids"], list):
        raise InvalidInput(f"{where} question {item['question_id']!r} needs a question string "
                           "and a list of answer_session_ids.")
    if not all(isinstance(s, list) and all(_is_message(m) for m in s) for s in haystack):
        raise InvalidInput(f"{where} a haystack session of question {item['question_id']!r} "
                           "is not a list of user/assistant messages.")


def _is_message(message: object) -> bool:
    return (isinstance(message, dict) and message.get("role") in ("user", "assistant")
            and isinstance(message.get("content"), str))


def sessions(item: dict) -> list[tuple[str, list[_drive.Pair]]]:
    """(session id, turn pairs) per haystack session; message ids are (session id, index)."""
    return [(str(sid), _drive.pair_up([(m["role"] == "user", m["content"], (str(sid), i))
                                       for i, m in enumerate(messages)]))
            for sid, messages in zip(item["haystack_session_ids"], item["haystack_sessions"])]


def gold_turns(item: dict) -> dict[tuple[str, int], str]:
    """The has_answer messages: (session id, index) -> text."""
    return {(str(sid), i): m["content"]
            for sid, messages in zip(item["haystack_session_ids"], item["haystack_sessions"])
            for i, m in enumerate(messages) if m.get("has_answer")}


def stored_turns(haystack: list[tuple[str, list[_drive.Pair]]]) -> dict[tuple, list]:
    """(session id, turn number, role) -> message ids, numbering turns as the store does
    (one per sync_turn that stores anything)."""
    found: dict[tuple, list] = {}
    for sid, pairs in haystack:
        number = 0
        for pair in pairs:
            if not (clean(pair.user).strip() or clean(pair.assistant).strip()):
                continue
            number += 1
            found[(sid, number, "user")] = pair.user_msgs
            found[(sid, number, "assistant")] = pair.assistant_msgs
    return found


def run_item(item: dict, budget: Optional[int], ks: Sequence[int], tick, result: dict) -> dict:
    haystack, question = sessions(item), item["question"]
    session_id = f"{item['question_id']}-question"
    with _drive.fresh_home(budget) as home:
        ingest_s = _drive.ingest(home, haystack, tick)
        provider = _drive.open_provider(home, session_id)
        try:
            result.setdefault("budget", provider.settings.recall_tokens)
            context, ms = _drive.prefetch(provider, question, session_id)
            hits = provider.service.search(provider.scope, question, limit=RANKED_HITS)
            result.setdefault("embedder", _drive.embedder_name(provider))
        finally:
            provider.shutdown()
    tick("questions")
    return score(item, ks, hits, stored_turns(haystack), context) | {"prefetch_ms": ms, "ingest_s": ingest_s}


def score(item: dict, ks: Sequence[int], hits: list, turns: dict, context: str) -> dict:
    """One question's figures from the ranked hits and the injected context."""
    ranked_turns = [frozenset(_covered(hit, turns)) for hit in hits]
    ranked_sessions = list(dict.fromkeys(h.session_id for h in hits if h.session_id))
    gold = gold_turns(item)
    found = _drive.norm(context)
    in_context = [_drive.evidence_in(found, text) for text in gold.values() if _drive.norm(text)]
    gold_sessions = set(map(str, item["answer_session_ids"]))
    return {"question_id": item["question_id"], "question_type": item["question_type"],
            "session": at_k([frozenset([s]) for s in ranked_sessions], gold_sessions, ks),
            "turn": at_k(ranked_turns, set(gold), ks),
            "evidence": len(in_context), "evidence_found": sum(in_context),
            "tokens": tokens.count(context), "retrieved_sessions": ranked_sessions[:max(ks)]}


def _covered(memory, turns: dict) -> list:
    """The source messages a stored memory holds (both sides of its turn if it has no role)."""
    roles = [memory.role] if memory.role in ("user", "assistant") else ["user", "assistant"]
    return [m for role in roles for m in turns.get((memory.session_id, memory.turn, role), [])]


def at_k(ranked: list[frozenset], gold: set, ks: Sequence[int]) -> Optional[dict]:
    """recall_any@k and recall_all@k for each k; None when there is no gold to find."""
    if not gold:
        return None
    out = {}
    for k in ks:
        top = frozenset().union(*ranked[:k])
        out[f"recall_any@{k}"] = float(bool(gold & top))
        out[f"recall_all@{k}"] = float(gold <= top)
    return out


def summary(rows: list[dict], ks: Sequence[int]) -> dict:
    """Means over questions: retrieval per level, evidence in context, tokens, latency."""
    with_evidence = [r for r in rows if r["evidence"]]
    evidence = sum(r["evidence"] for r in rows)
    return {"questions": len(rows), "session": _level(rows, "session", ks), "turn": _level(rows, "turn", ks),
            "evidence": evidence,
            "ev_recall": _drive.ratio(sum(r["evidence_found"] for r in rows), evidence),
            "all_hit": _drive.ratio(sum(r["evidence_found"] == r["evidence"] for r in with_evidence),
                                    len(with_evidence)),
            "tokens": statistics.mean(r["tokens"] for r in rows) if rows else 0,
            "ingest_s": sum(r["ingest_s"] for r in rows), **_drive.latency([r["prefetch_ms"] for r in rows])}


def _level(rows: list[dict], level: str, ks: Sequence[int]) -> dict:
    scored = [r[level] for r in rows if r[level] is not None]
    keys = [f"recall_{kind}@{k}" for k in ks for kind in ("any", "all")]
    return {"questions": len(scored), **{key: statistics.mean(s[key] for s in scored) if scored else 0.0
                                         for key in keys}}


def tables(result: dict) -> list[Table]:
    total, ks = result["total"], result["k"]
    retrieval = [[f"{level} recall_{kind}", total[level]["questions"],
                  *(total[level][f"recall_{kind}@{k}"] for k in ks)]
                 for level in ("session", "turn") for kind in ("any", "all")]
    keys = ("questions", "evidence", "ev_recall", "all_hit", "tokens", "ingest_s", "p50_ms", "p95_ms")
    k = max(ks)
    types = [[t, s["questions"], s["session"][f"recall_any@{k}"], s["session"][f"recall_all@{k}"],
              s["turn"][f"recall_any@{k}"], s["ev_recall"]] for t, s in result["by_type"].items()]
    title = (f"LongMemEval retrieval, {total['questions']} questions "
             f"({result['skipped_abstention']} abstention skipped), embedder {result.get('embedder')}")
    return [(title, ["level", "questions", *(f"@{k}" for k in ks)], retrieval),
            (f"Injected context, budget {result.get('budget')} tokens", ["", *keys],
             [["all", *(total[key] for key in keys)]]),
            ("By question type", ["type", "questions", f"session any@{k}", f"session all@{k}",
                                  f"turn any@{k}", "ev_recall"], types)]
