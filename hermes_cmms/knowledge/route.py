"""The 4-stage router: rules, then semantic, then graph, then an LLM's choice; the answer says
which stage answered and why."""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import TYPE_CHECKING, Callable, Optional

from . import beliefs, graph
from ..common.errors import CmmsError, InvalidInput
from ..recall.rank import Hit
from ..recall.search import search, semantic_search
from ..recall.shape import memory_dict
from ..common.text import clean
from ..common.vocabulary import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger(__name__)

MAX_LIMIT = 100
SEMANTIC_MIN = 0.45  # the best cosine similarity at which the semantic stage answers
SEARCHED = 200  # hybrid search results a rule's retriever looks through for its kinds
POOL = 500  # then the newest memories of those kinds, ranked by the words they share
FIRST_PERSON = "user"  # the entity the user's own facts hang from

# (rule, memory kinds it wants, whole words or phrases that trigger it)
RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("beliefs", ("belief",), r"believes?|believed|beliefs?|opinions?|think|thinks|convinced"),
    ("decisions", ("decision",), r"decide|decided|decisions?|chose|chosen|choose|went with|why did we"),
    ("skills", ("skill",), r"how (?:do|can|should) (?:i|we|you)|how to|steps|procedure|instructions|recipe"),
    ("preferences", ("preference",),
     r"likes?|loves?|prefers?|preferences?|favou?rite|hates?|dislikes?|enjoys?"),
    ("facts", ("fact",), r"where (?:do|does|did|is|are)|who (?:is|are)|what is (?:my|the) \w+"),
]
_RULES = [(name, kinds, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for name, kinds, words in RULES]
RETRIEVERS = ("keyword", "semantic", "graph", "beliefs")
_LIKING = frozenset("like love prefer enjoy favourite favorite hate dislike".split())
_STOP = frozenset("a an the is are was were do does did i you we my our your me to of in on at for and or "
                  "what who where when why how which that this it about with".split())


def route(engine: "Engine", scope: str, query: str, limit: int = 5, score_threshold: float = 0.0) -> dict:
    """Answer `query` from the first stage that finds something: a whole-word rule for a kind
    of memory, a close semantic match (cosine similarity at least SEMANTIC_MIN and at least
    `score_threshold`), an entity of the graph, or the retriever an LLM picks. When none does,
    the hybrid search results come back as a fallback; an empty query is routed nowhere."""
    query = _checked(query, limit, score_threshold)
    if not query:
        return {"query": "", "stage": "none", "route": "keyword", "answered": False, "trace": [],
                "reason": "The query is empty; there is nothing to route.", "results": []}
    trace: list[dict] = []
    for stage in (_rules, _semantic, _graph, _llm):
        answer = stage(engine, scope, query, limit, trace, score_threshold)
        if answer is not None:
            return {"query": query, "trace": trace, **answer}
    results = [_memory(h.memory, h.score) for h in search(engine, scope, query, limit)]
    return {"query": query, "stage": "none", "route": "keyword", "answered": False, "trace": trace,
            "reason": "No stage answered; these are the hybrid search results.", "results": results}


def _checked(query: str, limit: int, score_threshold: float) -> str:
    """The query cleaned ("" when it is blank); InvalidInput for a bad query, limit or threshold."""
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"The query must be a string of at most {MAX_QUERY_CHARS:,} characters.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"The limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}.")
    if isinstance(score_threshold, bool) or not isinstance(score_threshold, (int, float)) \
            or not 0 <= score_threshold <= 1:
        raise InvalidInput(f"The score_threshold must be a number from 0 to 1, not {score_threshold!r}.")
    return clean(query).strip()


def _rules(engine: "Engine", scope: str, query: str, limit: int, trace: list, _threshold: float) -> Optional[dict]:
    for name, kinds, pattern in _RULES:
        match = pattern.search(query)
        if match is None:
            continue
        results = (_beliefs(engine, scope, query, limit) if name == "beliefs"
                   else _of_kinds(engine, scope, query, kinds, limit))
        why = f"rule {name!r} matched the words {match.group(0)!r}"
        trace.append({"stage": "rules", "rule": name, "outcome": f"{why}; {len(results)} found"})
        if results:
            return {"stage": "rules", "route": name, "rule": name, "matched": match.group(0), "answered": True,
                    "reason": f"The {why}, and {len(results)} {name} were found.", "results": results}
    if not trace:
        trace.append({"stage": "rules", "outcome": "no rule matched"})
    return None


def _semantic(engine: "Engine", scope: str, query: str, limit: int, trace: list,
              threshold: float) -> Optional[dict]:
    try:
        found = semantic_search(engine, scope, query, limit)
    except CmmsError as exc:
        trace.append({"stage": "semantic", "outcome": str(exc)})
        return None
    best = found[0][1] if found else None
    floor = max(SEMANTIC_MIN, threshold)
    close = [(m, s) for m, s in found if s >= floor]
    trace.append({"stage": "semantic", "outcome": f"best similarity {best:.3f}" if found else "nothing indexed"})
    if not close:
        return None
    facts = engine.store.facts([m.id for m, _ in close if m.kind == "fact"])
    return {"stage": "semantic", "route": "semantic", "answered": True,
            "reason": f"The closest memory has cosine similarity {best:.3f} (at least {floor}).",
            "results": [_memory(m, s, facts) for m, s in close]}


def _graph(engine: "Engine", scope: str, query: str, limit: int, trace: list, _threshold: float) -> Optional[dict]:
    # "I", "me", "my" find the user's own entity: that alone names nothing in particular
    entities = [e for e in graph.search(engine, scope, query=query, limit=limit)["entities"]
                if e["name"].casefold() != FIRST_PERSON]
    trace.append({"stage": "graph", "outcome": f"{len(entities)} entities named in the query"})
    if not entities:
        return None
    names = ", ".join(repr(e["name"]) for e in entities[:3])
    return {"stage": "graph", "route": "graph", "answered": True,
            "reason": f"The query names {names}, known to the entity graph.", "results": entities}


def _llm(engine: "Engine", scope: str, query: str, limit: int, trace: list, _threshold: float) -> Optional[dict]:
    settings = _llm_settings(engine)
    if settings is None:
        trace.append({"stage": "llm", "outcome": "the LLM fallback is not configured (set llm)"})
        return None
    from ..common.llm import complete

    prompt = (f"Which memory retriever should answer this question: {', '.join(RETRIEVERS)}? "
              f"Reply with the one word only.\nQuestion: {query}")
    try:
        reply = complete(settings, [{"role": "user", "content": prompt}], max_tokens=8,
                         timeout=20.0, purpose="cmms route")
    except CmmsError as exc:
        trace.append({"stage": "llm", "outcome": str(exc)})
        return None
    choice = next((r for r in RETRIEVERS if re.search(rf"\b{r}\b", reply, re.IGNORECASE)), None)
    trace.append({"stage": "llm", "outcome": f"the model answered {reply.strip()[:80]!r}"})
    if choice is None:
        return None
    results = _RETRIEVE[choice](engine, scope, query, limit)
    if not results:
        return None
    return {"stage": "llm", "route": choice, "answered": True,
            "reason": f"No rule, semantic match or entity answered; the LLM chose {choice!r}.",
            "results": results}


def _llm_settings(engine: "Engine"):
    """The settings to call a model with: the `llm` setting, else Hermes' own model when this
    runs inside Hermes (the provider says so), else None."""
    if engine.settings.llm != "off":
        return engine.settings
    return dataclasses.replace(engine.settings, llm="hermes") if engine.in_hermes else None


def _beliefs(engine: "Engine", scope: str, query: str, limit: int) -> list[dict]:
    return beliefs.get_belief(engine, scope, text=query, limit=limit)["beliefs"]


def _of_kinds(engine: "Engine", scope: str, query: str, kinds: tuple[str, ...], limit: int) -> list[dict]:
    """The scope's current memories of `kinds`: first those the hybrid search finds, best
    first; then, from the newest POOL of them, those sharing the most words with the query
    (one at least: a memory of the kind that shares nothing with the question is no answer)."""
    found = [h for h in search(engine, scope, query, SEARCHED)
             if h.memory.kind in kinds and not h.memory.superseded_by][:limit]
    if len(found) < limit:
        seen, words = {h.memory.id for h in found}, _words(query)
        pool, _ = engine.store.page(scope, kinds=kinds, current=True, limit=POOL)
        shared = [(len(words & _words(m.content)), m) for m in pool if m.id not in seen]
        ranked = sorted(((n, m) for n, m in shared if n), key=lambda pair: (-pair[0], -pair[1].seq))
        found += [Hit(m, 0.0) for _, m in ranked[:limit - len(found)]]
    return [_memory(h.memory, h.score) for h in found]


def _words(text: str) -> set[str]:
    """Content words, roughly singular, with the verbs of liking folded into one."""
    words = {w.rstrip("s") for w in re.findall(r"\w+", text.casefold()) if w not in _STOP}
    return {"like" if w in _LIKING else w for w in words}


ROUTED_KEYS = ("id", "content", "kind", "tier", "confidence", "state", "source", "created_at")


def _memory(memory, score: float, facts: Optional[dict] = None) -> dict:
    item = memory_dict(memory, ROUTED_KEYS, facts, score=round(float(score), 5))
    if memory.detail:
        item["detail"] = json.loads(memory.detail)
    return item


_RETRIEVE: dict[str, Callable[..., list]] = {
    "keyword": lambda engine, scope, query, limit: [_memory(h.memory, h.score)
                                                    for h in search(engine, scope, query, limit)],
    "semantic": lambda engine, scope, query, limit: [_memory(m, s)
                                                     for m, s in semantic_search(engine, scope, query, limit)],
    "graph": lambda engine, scope, query, limit: graph.search(engine, scope, query=query, limit=limit)["entities"],
    "beliefs": _beliefs,
}
