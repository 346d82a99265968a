"""The recall inspector: the exact block a prompt gets (the built-in recall's own code, run with
its explanations on), each line with why it is there, what ranked next and did not fit, and
why a chosen memory is not in it."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..common import tokens
from ..common.checks import scope_of
from ..common.errors import InvalidInput, UnknownMemory
from ..common.ids import STORED, shown_id, stored_id
from ..common.text import brief, clean, clean_key
from . import _rows as recall_events
from ..vectors.chroma import UNITS, owner
from ..vectors.indexer import query_vector
from .block import CLOSE_COSINE, GATE_COSINE, GATE_WORDS, NOT_ABOUT, SURE_COSINE, candidates, recall_block, settled
from ..common.answers import iso
from .search import CANDIDATES, SENTENCE_CANDIDATES, VECTOR_FLOOR

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

NEXT_SHOWN = 10  # ranked next but did not fit: this many shown


def inspect_recall(engine: "Engine", scope: str, prompt: str, budget_tokens: Optional[int] = None,
                   session_id: Optional[str] = None, why_not: Optional[str] = None,
                   leave_out: Sequence[str] = ()) -> dict:
    """The block prefetch would give `prompt` at the budget (the recall_tokens setting unless
    given) and why each line is there. With `session_id`, what that session's recalls already
    put in front of the model is left out, as Hermes' prefetch leaves it out. With `why_not` (a
    memory id), also why that memory is or is not in this block (`why_not`, as the function of
    that name says it), read from the same search: a page that shows both searches once. With
    `leave_out` (memory ids of this scope), those are never lines: a past turn run again now
    leaves out its own stored messages, which did not exist when it was recalled (`left_out`
    in the answer: the ids left out; `not_left_out`: how many given are no memory of the scope)."""
    scope, budget = scope_of(scope), _budget(engine, budget_tokens)
    asked = _asked(engine, scope, why_not) if why_not is not None else None
    if session_id:
        settled()
    seen = recall_events.recalled_ids(engine.store, scope, clean_key(session_id)) if session_id else None
    omitted = _left_out(engine, scope, leave_out)
    if omitted:
        seen = (seen or set()) | set(omitted)
    why = _inspected(engine, scope, prompt, budget, seen)
    why["omitted"] = set(omitted)
    left_out = why["packing"].get("left_out", {})
    unfit = [i for i in why["order"] if left_out.get(i, ("",))[0] == "did not fit"][:NEXT_SHOWN]
    answer = {"block": why["block"], "budget_tokens": budget,
              "tokens": tokens.count(why["block"]) if why["block"] else 0,
              "lines": [_line(why, memory_id, text, rank) for rank, (memory_id, text) in enumerate(why["packed"], 1)],
              "next": [_line(why, memory_id, left_out[memory_id][1], None) for memory_id in unfit],
              "left_out": omitted, "not_left_out": len(leave_out) - len(omitted)}
    if asked is not None:
        answer["why_not"] = _why_not(engine, scope, prompt, why, asked, budget)
    return answer


MOST_LEFT_OUT = 50  # memories a re-run may leave out (a turn stores a few)


def _left_out(engine: "Engine", scope: str, given: Sequence[str]) -> list[str]:
    """The stored ids of `given` (ids as the doors print them) that are memories of `scope`; a
    value that is no memory id, or more than MOST_LEFT_OUT of them, is refused in one sentence."""
    if not isinstance(given, (list, tuple)) or len(given) > MOST_LEFT_OUT:
        raise InvalidInput(f"Leave out a list of at most {MOST_LEFT_OUT} memory ids.")
    keys = []
    for value in given:
        key = clean_key(stored_id(value)) if isinstance(value, str) else None
        if not key or not STORED.fullmatch(key):
            raise InvalidInput(f"Only memory ids can be left out, not {brief(repr(value), 60)}.")
        keys.append(key)
    present = engine.store.get(keys, scope) if keys else {}
    return [key for key in dict.fromkeys(keys) if key in present]


def why_not(engine: "Engine", scope: str, prompt: str, memory_id: str, budget_tokens: Optional[int] = None) -> dict:
    """Why `memory_id` is (or is not) in the block `prompt` gets, in one sentence (`verdict`),
    with the rankings that found it, its fused score and its position in the ranking."""
    scope, budget = scope_of(scope), _budget(engine, budget_tokens)
    asked = _asked(engine, scope, memory_id)
    return _why_not(engine, scope, prompt, _inspected(engine, scope, prompt, budget, None), asked, budget)


def _asked(engine: "Engine", scope: str, memory_id: Any) -> tuple:
    """(stored id, the memory or None, when it expired or None) of the memory a why-not asks
    about; UnknownMemory when the scope has no such memory, live or expired."""
    key = clean_key(stored_id(memory_id)) if isinstance(memory_id, str) else None
    memory = engine.store.get([key], scope).get(key) if key else None
    expired = recall_events.expired_at(engine.store, scope, key) if key and memory is None else None
    if memory is None and expired is None:
        raise UnknownMemory(f"No memory {memory_id!r} in this scope.")
    return key, memory, expired


def _why_not(engine: "Engine", scope: str, prompt: str, why: dict, asked: tuple, budget: int) -> dict:
    """why_not's answer, read from the inspection `why` of the block."""
    key, memory, expired = asked
    if memory is None:
        return {"memory_id": key, "verdict": f"Filtered: it expired at {iso(expired)} (working memory is "
                                             "never recalled past its time).",
                "found_by": {}, "fused": None, "score": None, "position": None}
    ranked = why["ranked"].get(key, {})
    position = why["order"].index(key) + 1 if key in why["order"] else None
    verdict = _verdict(engine, scope, prompt, why, key, position, budget)
    if memory.superseded_by and key not in why["lines_of"]:
        verdict = verdict[:-1] + f" (it is superseded by {shown_id(memory.superseded_by)}, so its confidence is halved)."
    return {"memory_id": key, "verdict": verdict, "found_by": ranked.get("found_by", {}),
            "fused": ranked.get("fused"), "score": ranked.get("score"), "position": position}


def _budget(engine: "Engine", budget_tokens: Any) -> int:
    budget = engine.settings.recall_tokens if budget_tokens is None else budget_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise InvalidInput(f"The token budget must be a positive whole number, not {budget!r}.")
    return budget


def _inspected(engine: "Engine", scope: str, prompt: str, budget: int, seen: Optional[set[str]]) -> dict:
    """The block and the explanations of the one run that made it; `order` is every ranked
    candidate's id, best first (rank.rank's own order)."""
    if not isinstance(prompt, str):
        raise InvalidInput("The prompt must be a string.")
    why: dict = {}
    why["block"] = recall_block(engine, scope, prompt, budget, seen, explain=why)
    scored = [(i, r["score"]) for i, r in why["ranked"].items() if "score" in r]
    why["order"] = [i for i, _ in sorted(scored, key=lambda pair: -pair[1])]  # (stable: ties as rank() left them)
    why["packed"] = why["packing"].get("packed", [])
    why["lines_of"] = {memory_id: rank for rank, (memory_id, _) in enumerate(why["packed"], 1)}
    return why


def _line(why: dict, memory_id: str, text: str, rank: Optional[int]) -> dict:
    ranked = why["ranked"].get(memory_id, {})
    return {"memory_id": memory_id, "text": text, "rank": rank, "position": why["order"].index(memory_id) + 1,
            "found_by": ranked.get("found_by", {}), "fused": ranked.get("fused"),
            "nudges": ranked.get("nudges", {}), "score": ranked.get("score")}


def _verdict(engine: "Engine", scope: str, prompt: str, why: dict, key: str, position: Optional[int],
             budget: int) -> str:
    lines, left_out = why["lines_of"], why["packing"].get("left_out", {})
    last = max((why["order"].index(i) + 1 for i in lines), default=0)
    if key in lines:
        return f"In the block: line {lines[key]} of {len(lines)}, ranked {_nth(position)}."
    filtered = why["ranked"].get(key, {}).get("filtered")
    if filtered:
        return f"Filtered: {filtered}."
    if key in left_out:
        reason, line = left_out[key]
        if reason == "repeat":
            return f"Ranked {_nth(position)}, but its text repeats a memory already in the block."
        if reason == "seen" and key in why.get("omitted", ()):
            return f"Ranked {_nth(position)}, but left out on purpose: it was stored by the turn run again."
        if reason == "seen":
            return f"Ranked {_nth(position)}, but an earlier recall of this session already gave it."
        if reason == NOT_ABOUT:
            return (f"Ranked {_nth(position)}, but the prompt is not surely about anything stored (no memory "
                    f"within cosine {SURE_COSINE} of it, no first keyword hit holding {GATE_WORDS:.0%} of its "
                    f"words), and this memory is not within {CLOSE_COSINE} of it (nothing goes in when no "
                    f"memory is within {GATE_COSINE}).")
        return (f"Ranked {_nth(position)}, but its line ({tokens.count(line) + 1} tokens) did not fit in "
                f"what the lines ranked above it left of the {budget}-token budget.")
    if position is not None:
        return (f"Ranked {_nth(position)}, below the {candidates(budget)} candidates a block is packed from"
                + (f" (the block's last line ranked {_nth(last)})." if last else "."))
    return _not_found(engine, scope, prompt, why["searched"], key)


def _not_found(engine: "Engine", scope: str, prompt: str, searched: dict, key: str) -> str:
    similarity = _seen_cosine(engine, scope, prompt, searched, key)
    words = f"no keyword of the prompt found it among the first {CANDIDATES}"
    if similarity is _NO_INDEX:
        return f"Not found by any ranking: {words} (meaning was not compared: no vector index is loaded)."
    if similarity is not None and similarity < VECTOR_FLOOR:
        return (f"Not found by any ranking: its meaning is {similarity:.2f} from the prompt's, below the "
                f"cosine floor of {VECTOR_FLOOR}, and {words}.")
    return f"Not found by any ranking: {words}, nor is it among the {CANDIDATES} nearest in meaning."


_NO_INDEX = -2.0  # (a cosine is never below -1)


def _seen_cosine(engine: "Engine", scope: str, prompt: str, searched: dict, key: str) -> Optional[float]:
    """The memory's best cosine among what the block's own search saw (search._vector_search:
    `nearest`, below the floor too), None when it was not among them, _NO_INDEX without a vector
    index. Only when that search compared no meaning for another reason (a blank prompt, a
    failing index) is the index asked again."""
    if searched.get("no_index"):
        return _NO_INDEX
    if "nearest" in searched:
        return searched["nearest"].get(key)
    return _similarity(engine, scope, prompt, key)


def _similarity(engine: "Engine", scope: str, prompt: str, key: str) -> Optional[float]:
    """The memory's best cosine similarity to the prompt among the vector views' nearest
    candidates, None when it is not among them, _NO_INDEX without a vector index."""
    try:
        vector = query_vector(engine.indexer, clean(prompt))
        vectors = engine.indexer.vectors
        if vector is None or vectors is None:
            return _NO_INDEX
        found = [s for view in ("content", "context") for m, s in vectors.query(scope, vector, CANDIDATES, view)
                 if m == key]
        found += [s for unit, s in vectors.query(scope, vector, SENTENCE_CANDIDATES, UNITS) if owner(unit) == key]
    except Exception as exc:  # noqa: BLE001 - the verdict only loses its cosine
        log.debug("hermes-cmms: no similarity for why_not: %s", exc)
        return None
    return max(found, default=None)


def _nth(n: Optional[int]) -> str:
    if n is None:
        return "nowhere"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
