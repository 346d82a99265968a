"""Browsing what is stored (MemoryService.scopes, browse, memory_page, overview) and the filters
of search applied in SQL: a match past the first ranked hits is found, nothing crosses scopes."""
import time

import pytest

from hermes_cmms.common.errors import InvalidInput, UnknownMemory

S, OTHER = "local:default", "user:telegram:7"


def _crowd(svc, n=250):
    """`n` notes that all say 'boat' briefly (they rank first), then one long tagged note that
    says it once among many words (it ranks last of them)."""
    for i in range(n):
        svc.remember(S, f"Boat {i} is moored at pier {i}.", judge=False)
    return svc.remember(S, "A long note on many things: weather, gardens, an old boat, lunch, coffee, "
                           "trains, clocks, bridges, letters and the rest of a busy week.",
                        tags=["harbour"], source="mcp:store_memory", judge=False)


def test_a_tag_or_source_filter_finds_a_match_past_the_first_ranked_hits(keyword_service):
    svc = keyword_service
    wanted = _crowd(svc)
    assert wanted not in [h.id for h in svc.search(S, "boat", 200)]  # it ranks past the first 200
    assert [h.id for h in svc.search(S, "boat", 10, tags=["harbour"])] == [wanted]
    assert [h.id for h in svc.search(S, "boat", 10, source="mcp:")] == [wanted]
    assert svc.search(S, "boat", 10, tags=["harbour"], source="hermes") == []
    page = svc.browse(S, query="boat", tags=["harbour"], sort="relevance")
    assert (page["total"], [m["id"] for m in page["items"]]) == (1, [wanted])


@pytest.mark.quick
def test_browse_filters_sorts_and_pages_in_sql(keyword_service):
    svc = keyword_service
    first = svc.remember(S, "The red kettle is in the attic.", tags=["house"], confidence=0.7)
    svc.remember(S, "Standup moved to 9:30.", kind="observation", tier="episodic", source="hermes:cmms_remember")
    last = svc.remember(S, "The blue kettle is in the shed.", tags=["house", "garden"], confidence=0.95)
    svc.remember(OTHER, "The green kettle is elsewhere.", tags=["house"])
    every = svc.browse(S)
    assert every["total"] == 3 and every["items"][0]["id"] == last and every["items"][-1]["id"] == first
    assert [m["id"] for m in svc.browse(S, sort="oldest", limit=1)["items"]] == [first]
    assert [m["id"] for m in svc.browse(S, sort="confidence", limit=1)["items"]] == [last]
    assert [m["id"] for m in svc.browse(S, tags=["house", "garden"])["items"]] == [last]
    assert svc.browse(S, tier="episodic", kind="observation", source="hermes:")["total"] == 1
    assert svc.browse(S, source="HERMES:")["total"] == 0  # a prefix, exactly (LIKE would ignore case)
    assert svc.browse(S, query="kettle")["total"] == 2  # the other scope's kettle is not counted
    assert [m["id"] for m in svc.browse(S, query="red kettle")["items"]] == [first]  # every word
    second = svc.browse(S, offset=1, limit=1)
    assert (second["total"], second["offset"], len(second["items"])) == (3, 1, 1)
    assert svc.browse(S, since=time.time() + 60)["total"] == 0
    assert svc.browse(S, until="2000-01-01")["total"] == 0
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert svc.browse(S, since=today, until=today)["total"] == 3  # a date alone as `until`: its whole day


def test_browse_states_superseded_and_expired(keyword_service):
    svc = keyword_service
    old = svc.remember_fact(S, "user", "lives in", "Berlin")
    new = svc.remember_fact(S, "user", "lives in", "Lisbon")
    svc.remember(S, "Parked on level 3 for now.", tier="working", ttl_seconds=0.5)
    time.sleep(0.6)
    assert [m["id"] for m in svc.browse(S)["items"]] == [new]
    superseded = svc.browse(S, state="superseded")["items"]
    assert [(m["id"], m["superseded_by"]) for m in superseded] == [(old, new)]
    assert [m["content"] for m in svc.browse(S, state="expired")["items"]] == ["Parked on level 3 for now."]
    assert svc.browse(S, state="all")["total"] == 3
    (counts,) = [c for c in svc.scopes() if c["scope"] == S]
    assert counts["memories"] == 3
    assert counts["by_state"] == {"active": 1, "superseded": 1, "expired": 1}
    assert counts["by_tier"] == {"semantic": 2, "working": 1} and counts["by_kind"]["fact"] == 2


@pytest.mark.parametrize("arguments, message", [
    ({"state": "gone"}, "Unknown state 'gone'; choose one of active, superseded, expired, all"),
    ({"sort": "relevance"}, "Sorting by relevance needs a query."),
    ({"mode": "vibes"}, "Unknown mode 'vibes'"),
    ({"limit": 0}, "The limit must be a whole number from 1 to 200, not 0."),
    ({"since": "last tuesday"}, "The since date must be an ISO 8601 date or time"),
    ({"tier": "forever"}, "Unknown tier 'forever'"),
    ({"kind": ""}, "The kind filter must be a non-empty string."),
])
def test_bad_browse_arguments_are_one_sentence(keyword_service, arguments, message):
    with pytest.raises(InvalidInput, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        keyword_service.browse(S, **arguments)


def test_search_by_meaning_says_when_no_vectors_are_loaded(keyword_service):
    keyword_service.remember(S, "The boat is moored at pier 9.")
    page = keyword_service.browse(S, query="boat", mode="meaning")
    assert page["mode"] == "keyword" and "unavailable" in page["notice"] and page["total"] == 1


def test_search_by_meaning_filters_the_nearest_in_sql(service):
    service.remember(S, "The boat is moored at pier 9.", tags=["harbour"])
    service.remember(S, "The sailing dinghy is tied up at the jetty.")
    service.remember(S, "Quarterly taxes are due in April.")
    service.upkeep.drain(60)
    page = service.browse(S, query="where is my vessel docked", mode="meaning", sort="relevance")
    assert page["mode"] == "meaning" and "notice" not in page
    assert [m["content"] for m in page["items"]][:1] in (["The boat is moored at pier 9."],
                                                        ["The sailing dinghy is tied up at the jetty."])
    assert all(isinstance(item["score"], float) and item["score"] >= 0.2 for item in page["items"])
    # taxes are no match by meaning (below recall's cosine floor): counted, not listed as one
    assert "Quarterly taxes are due in April." not in [m["content"] for m in page["items"]]
    assert page["below_floor"] >= 1 and page["total"] == len(page["items"])
    tagged = service.browse(S, query="where is my vessel docked", mode="meaning", tags=["harbour"])
    assert [m["content"] for m in tagged["items"]] == ["The boat is moored at pier 9."]


def test_a_memory_page_shows_provenance_chains_knowledge_and_audit(keyword_service):
    svc = keyword_service
    old = svc.remember_fact(S, "Alice", "works at", "Acme", source="mcp:remember")
    new = svc.remember_fact(S, "Alice", "works at", "Globex", source="mcp:remember")
    svc.remember_fact(S, "Alice", "works at", "Globex", source="hermes:cmms_remember")  # a repeat: reinforced
    page = svc.memory_page(S, new)
    assert page["memory"]["content"] and page["memory"]["id"] == new and page["memory"]["tags"] == []
    assert page["provenance"]["door"] == "mcp" and page["provenance"]["reinforcements"] == 1
    assert [r["source"] for r in page["provenance"]["receipts"]] == ["hermes:cmms_remember"]
    assert [m["id"] for m in page["supersedes"]] == [old] and page["superseded_by"] == []
    assert page["fact"] == {"subject": "Alice", "predicate": "works at", "object": "Globex"}
    assert {n["name"] for n in page["entities"]["nodes"]} >= {"Alice", "Globex"}
    assert [e["predicate"] for e in page["entities"]["edges"]] == ["works at"]
    assert {"remember", "reinforce"} <= {e["action"] for e in page["audit"]}
    assert set(page["confidence"]) >= {"now", "reliability", "last_seen_at", "after_decay"}
    back = svc.memory_page(S, old)
    assert [m["id"] for m in back["superseded_by"]] == [new]
    assert "supersede" in {e["action"] for e in back["audit"]}


def test_nothing_crosses_scopes(keyword_service):
    svc = keyword_service
    theirs = svc.remember(OTHER, "Their secret boat is at pier 4.", tags=["harbour"])
    svc.remember(S, "Our boat is at pier 2.")
    for memory_id in (theirs, "0" * 32, "not-an-id"):
        with pytest.raises(UnknownMemory) as missing:
            svc.memory_page(S, memory_id)
        assert str(missing.value) == f"No memory {memory_id!r} in this scope."
    assert [m["content"] for m in svc.browse(S, query="boat", state="all")["items"]] == ["Our boat is at pier 2."]
    assert svc.search(S, "secret boat", 10, tags=["harbour"]) == []
    assert [c["scope"] for c in svc.overview(S)["scopes"]] == [S]


def test_overview_has_counts_lag_health_and_the_latest_writes(keyword_service):
    svc = keyword_service
    first = svc.remember(S, "First.")
    svc.remember(OTHER, "Second.")
    view = svc.overview()
    assert {c["scope"] for c in view["scopes"]} == {S, OTHER}
    assert all(c["vectors_pending"] >= 0 for c in view["scopes"])
    assert view["index_lag"] == sum(c["vectors_pending"] for c in view["scopes"])
    health = {h["name"]: h["level"] for h in view["health"]}
    assert health["database"] == "ok" and health["embedder"] == "warn"  # keyword-only
    assert [(w["content"], w["scope"]) for w in view["latest_writes"]] == [("Second.", OTHER), ("First.", S)]
    assert view["latest_recalls"] == []
    svc.recall(S, "First?")
    (recall,) = svc.overview(S)["latest_recalls"]
    assert recall["scope"] == S and [r["memory_id"] for r in recall["recalled"]] == [first]
    assert [w["content"] for w in svc.overview(S)["latest_writes"]] == ["First."]


def test_a_common_words_page_is_the_same_whichever_way_it_is_read(keyword_service, monkeypatch):
    """Many matches walk the sort's index and score the page's rows only; few are joined and
    scored all: the same items, scores and totals either way, for every sort, filter and page."""
    from hermes_cmms.store import _browse

    svc = keyword_service
    for i in range(40):
        svc.remember(S, f"The boat {i} sails {'far ' * (i % 4)}at dawn.", tags=["sea"] if i % 3 == 0 else [],
                     confidence=0.5 + (i % 5) / 10, judge=False)
    svc.remember_fact(S, "the boat", "is moored in", "Porto")
    svc.remember_fact(S, "the boat", "is moored in", "Lisbon")  # supersedes the one in Porto
    svc.remember(OTHER, "Another scope's boat sails at dawn.")
    asked = [dict(query=q, sort=sort, tags=tags, state=state, offset=offset, limit=7)
             for q in ("boat", "boat far", "dawn sails") for sort in ("newest", "oldest", "confidence", "relevance")
             for tags in ([], ["sea"]) for state in ("active", "all") for offset in (0, 5, 30)]
    joined = [svc.browse(S, **a) for a in asked]
    monkeypatch.setattr(_browse, "COMMON_MATCHES", 0)  # every query is "common" now
    walked = [svc.browse(S, **a) for a in asked]
    assert walked == joined
    assert any(page["total"] > 7 and len(page["items"]) == 7 for page in joined)
    assert all(isinstance(item["score"], float) for page in walked for item in page["items"])  # each scored
    past = svc.browse(S, query="boat", sort="relevance", offset=500)  # past the last match: counted apart
    assert (past["total"], past["items"]) == (svc.browse(S, query="boat", sort="newest")["total"], [])
    assert past["total"] == 41  # the 40 boats and the current fact (the superseded one is not active)


def test_the_overviews_health_is_reused_for_a_few_seconds_only(keyword_service, monkeypatch):
    from hermes_cmms.ops import browse

    svc = keyword_service
    config = svc.settings.home / "config.yaml"
    config.write_text("memory:\n  provider: cmms\n")
    level = lambda: {h["name"]: h["level"] for h in svc.overview()["health"]}["config"]  # noqa: E731
    assert level() == "ok"
    config.write_text("memory:\n  provider: holographic\n")
    assert level() == "ok"  # the same lines, within HEALTH_SECONDS
    monkeypatch.setattr(browse, "HEALTH_SECONDS", 0.0)
    assert level() == "FAIL"
