"""Hybrid ranking: meaning wins where the question's words are absent."""
import pytest

from hermes_cmms.common.text import content_hash
from hermes_cmms.recall.rank import rank
from hermes_cmms.recall.search import _vector_search
from hermes_cmms.store.models import Memory


def _memory(content: str) -> Memory:
    return Memory(id=content, scope="s", tier="episodic", kind="message", role="user", content=content,
                  content_hash=content_hash(content), session_id=None, turn=None, context=None, source="",
                  tags="[]", confidence=1.0, state="active", superseded_by=None, created_at=0.0, updated_at=0.0)


def _first(query: str, worded: str, meant: str) -> str:
    """The first hit when `worded` leads both keyword rankings and `meant` one vector ranking."""
    memories = {m: _memory(m) for m in (worded, meant)}
    rankings = {"keyword": [worded], "keyword_context": [worded], "vector_sentences": [meant]}
    return rank(memories, rankings, now=1.0, query=query)[0].memory.id


@pytest.mark.quick
def test_the_vector_rankings_lead_when_the_keyword_hits_hold_few_of_the_words():
    query = "First week at the shelter done, covered in dog hair and happy."
    worded, meant = "The dog next door barked all night.", "I quit banking because I wanted to work with animals."
    assert _first(query, worded, meant) == meant
    # the same keyword hit holding most of the question's words keeps its place
    assert _first("Which dog barked all night next door?", worded, meant) == worded


def test_a_link_of_meaning_below_a_third_cosine_is_still_a_candidate(service):
    """A later message that relates to an earlier one without naming it is often only 0.2-0.3
    from it in MiniLM: the vector rankings still offer it."""
    scope = "local:meaning"
    cue = service.remember(scope, "I quit my banking job because I wanted to work with animals.")
    for other in ("Happy birthday to my sister, she turned forty.", "Got a hair cut on Tuesday."):
        service.remember(scope, other)
    assert service.upkeep.drain(60)
    found, _ = _vector_search(service.engine, scope, "First week at the shelter done, covered in dog hair and happy.")
    assert cue in found["vector"] and cue in found["vector_sentences"]
