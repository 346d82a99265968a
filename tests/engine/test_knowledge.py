"""Learning from texts and sessions, and the 4-stage router, on real stores."""
import json

import pytest

from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.knowledge.route import route
from hermes_cmms.mcp_bridge._contract import learn_answer, route_answer as contract_answer

from db import sql

pytestmark = pytest.mark.store

SCOPE = "user:telegram:7"


def _sql(home, query, *params):
    return sql(home, query, *params)


NOTES = ("My sister Ana works at Google. I really like dark roast coffee. "
         "We decided to use Postgres because it scales. I think the staging API is stable.")


@pytest.mark.quick
def test_learn_keeps_the_text_and_links_every_item_to_it(keyword_service, home):
    result = keyword_service.learn(SCOPE, NOTES, source="meeting-notes")
    kinds = sorted(item["kind"] for item in result["learned"])
    assert {"fact", "preference", "decision", "belief"} <= set(kinds)
    origin = _sql(home, "SELECT kind, tier, source FROM memories WHERE id = ?", result["id"])
    assert origin == [("observation", "episodic", "meeting-notes")]
    for item in result["learned"]:
        assert _sql(home, "SELECT source_id FROM links WHERE memory_id = ?", item["id"]) == [(result["id"],)]
        assert _sql(home, "SELECT source, scope FROM memories WHERE id = ?", item["id"]) == [
            ("learn:meeting-notes", SCOPE)]
    decision = next(i for i in result["learned"] if i["kind"] == "decision")
    detail = json.loads(_sql(home, "SELECT detail FROM memories WHERE id = ?", decision["id"])[0][0])
    assert "postgres" in detail["choice"].lower() and "scales" in detail["reason"]
    works = _sql(home, "SELECT subject, predicate, object FROM facts WHERE object = 'Google'")
    assert works and works[0][0] == "Ana"
    belief = next(i for i in result["learned"] if i["kind"] == "belief")
    assert _sql(home, "SELECT memory_id FROM evidence WHERE belief_id = ?", belief["id"]) == [(result["id"],)]


def test_learning_the_same_text_twice_reinforces_instead_of_duplicating(keyword_service, home):
    first = keyword_service.learn(SCOPE, "I live in Lisbon.")
    again = keyword_service.learn(SCOPE, "I live in Lisbon.")
    assert again["id"] == first["id"] and not again["stored"]
    assert [i["reinforced"] for i in again["learned"]] == [True]
    assert _sql(home, "SELECT count(*) FROM facts") == [(1,)]


def test_forgetting_the_source_forgets_what_was_learned_only_from_it(keyword_service, home):
    one = keyword_service.learn(SCOPE, "Bruno works at Acme.")
    two = keyword_service.learn(SCOPE, "Carla works at Initech.")
    keyword_service.learn(SCOPE, "Carla works at Initech. She started on Friday.")  # a second source
    keyword_service.forget(SCOPE, one["id"])
    keyword_service.forget(SCOPE, two["id"])
    assert _sql(home, "SELECT object FROM facts") == [("Initech",)]  # still learned from the third text
    assert _sql(home, "SELECT name FROM entities ORDER BY name") == [("Carla",), ("Initech",)]
    reasons = [json.loads(d)["reason"] for (d,) in _sql(
        home, "SELECT detail FROM audit_log WHERE action = 'forget' AND memory_id <> ? AND memory_id <> ?",
        one["id"], two["id"])]
    assert reasons == ["the memory it was learned from was forgotten"]


def test_learn_without_beliefs_and_bad_input(keyword_service, home):
    result = keyword_service.learn(SCOPE, "I think the staging API is stable.", extract_beliefs=False)
    assert result["learned"] == [] and _sql(home, "SELECT count(*) FROM beliefs") == [(0,)]
    for bad, message in [("", "non-empty"), ("   ", "non-empty"), (42, "non-empty"),
                         ("x" * 200_001, "the limit is 200,000")]:
        with pytest.raises(InvalidInput, match=message):
            keyword_service.learn(SCOPE, bad)
    with pytest.raises(InvalidInput, match="true or false"):
        keyword_service.learn(SCOPE, "I live in Lisbon.", extract_beliefs="yes")


def test_beliefs_below_min_belief_confidence_are_not_stored(keyword_service, home):
    text = "I am sure the cache is warm. I think the queue is slow. Maybe the disk is full."  # 0.9, 0.7, 0.4
    kept = keyword_service.learn(SCOPE, text, min_belief_confidence=0.6)["learned"]
    assert sorted(i["parts"]["proposition"] for i in kept) == ["the cache is warm", "the queue is slow"]
    assert _sql(home, "SELECT count(*) FROM beliefs")[0][0] == 2
    sure = keyword_service.learn(SCOPE, text + " Also.", min_belief_confidence=0.9)["learned"]
    assert [i["parts"]["proposition"] for i in sure] == ["the cache is warm"]
    assert len(keyword_service.learn(SCOPE, text + " Again.")["learned"]) == 3  # the engine's default keeps all
    for bad in (-0.1, 1.1, True, "0.5"):
        with pytest.raises(InvalidInput, match="min_belief_confidence must be a number from 0 to 1"):
            keyword_service.learn(SCOPE, text, min_belief_confidence=bad)


def test_the_contract_answer_buckets_what_was_learned_with_receipts(keyword_service, home):
    text = NOTES + " To deploy: build the image, push it, then restart the pods."
    answer = keyword_service.learn(SCOPE, text, source="notes")
    shown = learn_answer(keyword_service, SCOPE, text, answer, "mcp:learn")
    sister, fact = shown["facts"]
    assert (sister["item"]["predicate"], sister["item"]["object"]) == ("has sister", "Ana")
    assert (fact["item"]["subject"], fact["item"]["predicate"], fact["item"]["object"]) == ("Ana", "works at", "Google")
    assert fact["receipt"]["memory_type"] == "fact" and fact["receipt"]["source"] == "learn:notes"
    assert fact["receipt"]["created_by"] == "mcp:learn" and fact["item"]["id"] == fact["receipt"]["memory_id"]
    [decision] = shown["decisions"]
    assert decision["item"]["reason"] == "it scales" and decision["item"]["context"] == text
    assert "Postgres" in decision["item"]["choice"]
    [skill] = shown["skills"]
    assert skill["item"]["purpose"] == "deploy" and len(skill["item"]["steps"]) == 3
    [belief] = shown["beliefs"]
    assert belief["belief"]["proposition"] == "the staging API is stable" and belief["reinforced"] is False
    assert belief["belief"]["id"] == belief["receipt"]["memory_id"] and belief["receipt"]["memory_type"] == "belief"
    assert belief["extracted"]["proposition"] == "the staging API is stable" and belief["extracted"]["confidence"] == 0.7
    [preference] = shown["preferences"]
    assert preference["receipt"]["memory_type"] == "preference"
    assert len(shown["receipts"]) == 5 and preference["receipt"] not in shown["receipts"]
    assert all("belief" not in item for item in shown["learned"]) and shown["id"] == answer["id"]


def test_learned_secrets_are_redacted(keyword_service, home):
    keyword_service.learn(SCOPE, "We decided to rotate the key sk-abcdefghijklmnopqrstuvwxyz123456 because it leaked.")
    dump = json.dumps(_sql(home, "SELECT content, detail FROM memories"))
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in dump


def test_session_flush_learns_from_user_turns_once(keyword_service, home):
    svc = keyword_service
    svc.retain_turn(SCOPE, "s1", "I live in Porto. I love hiking.", "Porto is lovely. I work at OpenAI.")
    svc.flush_session(SCOPE, "s1")
    facts = _sql(home, "SELECT subject, object FROM facts")
    assert facts == [("user", "Porto")]  # the assistant's first person is not the user's
    assert _sql(home, "SELECT count(*) FROM memories WHERE kind = 'preference'") == [(1,)]
    message = _sql(home, "SELECT id FROM memories WHERE role = 'user'")[0][0]
    learned = _sql(home, "SELECT memory_id FROM links WHERE source_id = ?", message)
    assert len(learned) == 2
    svc.flush_session(SCOPE, "s1")  # flushes repeat: nothing is read twice
    assert _sql(home, "SELECT max(access_count) FROM memories WHERE tier = 'semantic'") == [(0,)]
    svc.retain_turn(SCOPE, "s1", "I was born in Braga.", "Noted.")
    svc.flush_session(SCOPE, "s1")
    assert sorted(_sql(home, "SELECT object FROM facts")) == [("Braga",), ("Porto",)]
    assert _sql(home, "SELECT extracted_turn FROM sessions") == [(2,)]


# -- the router ----------------------------------------------------------------------------------

def _seed(svc):
    svc.learn(SCOPE, "I really like dark roast coffee.")
    svc.learn(SCOPE, "We decided to use Postgres because it scales.")
    svc.learn(SCOPE, "Ana works at Google.")
    svc.store_note(SCOPE, "The boiler was serviced in March.")


def test_rules_answer_with_the_kind_they_name(keyword_service):
    _seed(keyword_service)
    answer = route(keyword_service.engine, SCOPE, "What coffee do I like?")
    assert (answer["stage"], answer["route"], answer["answered"]) == ("rules", "preferences", True)
    assert "'like'" in answer["reason"] and answer["results"][0]["kind"] == "preference"
    answer = route(keyword_service.engine, SCOPE, "Why did we pick Postgres, what was decided?")
    assert (answer["stage"], answer["route"]) == ("rules", "decisions")
    assert answer["results"][0]["detail"]["reason"] == "it scales"


def test_rules_match_whole_words_never_substrings(keyword_service):
    _seed(keyword_service)
    answer = route(keyword_service.engine, SCOPE, "Is that unlikely to be thinkable?")  # 'like', 'think' inside
    assert answer["stage"] != "rules"
    assert answer["trace"][0] == {"stage": "rules", "outcome": "no rule matched"}


def test_a_rule_that_finds_nothing_falls_through(keyword_service):
    keyword_service.store_note(SCOPE, "The boiler was serviced in March.")
    answer = route(keyword_service.engine, SCOPE, "What do I like about the boiler?")
    assert answer["trace"][0]["rule"] == "preferences" and "0 found" in answer["trace"][0]["outcome"]
    assert answer["stage"] == "none" and not answer["answered"]
    assert answer["results"][0]["content"] == "The boiler was serviced in March."  # hybrid fallback


def test_graph_stage_answers_for_a_named_entity_without_vectors(keyword_service):
    _seed(keyword_service)
    answer = route(keyword_service.engine, SCOPE, "Tell me about Ana")
    stages = [step["stage"] for step in answer["trace"]]
    assert stages == ["rules", "semantic", "graph"]
    assert "unavailable" in answer["trace"][1]["outcome"]  # keyword-only store: no semantic stage
    assert (answer["stage"], answer["route"]) == ("graph", "graph")
    assert answer["results"][0]["name"] == "Ana" and "'Ana'" in answer["reason"]


def test_llm_stage_says_when_it_is_not_configured(keyword_service):
    answer = route(keyword_service.engine, SCOPE, "zebra crossing")
    assert answer["trace"][-1] == {"stage": "llm", "outcome": "the LLM fallback is not configured (set llm)"}
    assert answer["stage"] == "none"


def test_semantic_stage_answers_a_paraphrase(service):
    service.store_note(SCOPE, "The boiler was serviced in March by the plumber.")
    service.upkeep.drain(60)
    answer = route(service.engine, SCOPE, "heater maintenance by a plumber")  # cosine 0.57
    assert answer["stage"] == "semantic" and answer["results"][0]["content"].startswith("The boiler")
    assert "cosine similarity" in answer["reason"]


@pytest.mark.quick
def test_route_rejects_bad_input(keyword_service):
    for query, limit in [(None, 5), ("x" * 10_001, 5), ("ok", 0), ("ok", 101), ("ok", True)]:
        with pytest.raises(InvalidInput):
            route(keyword_service.engine, SCOPE, query, limit)
    for threshold in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(InvalidInput, match="score_threshold must be a number from 0 to 1"):
            route(keyword_service.engine, SCOPE, "ok", 5, threshold)


def test_an_empty_query_is_routed_nowhere(keyword_service):
    _seed(keyword_service)
    for query in ("", "   "):
        answer = route(keyword_service.engine, SCOPE, query)
        assert (answer["stage"], answer["answered"], answer["results"]) == ("none", False, [])
        assert contract_answer(answer)["stage"] == 4 and "empty" in contract_answer(answer)["message"]


def test_a_rule_hit_names_the_word_it_matched_and_maps_to_stage_1(keyword_service):
    _seed(keyword_service)
    answer = route(keyword_service.engine, SCOPE, "Which coffee does the user LIKE most?")
    assert (answer["rule"], answer["matched"]) == ("preferences", "LIKE")
    shown = contract_answer(answer)
    assert (shown["stage"], shown["route"], shown["stage_name"], shown["retriever"]) == (1, "rules", "rules",
                                                                                       "preferences")
    assert shown["rule_match"] == {"route": "preferences", "rule_name": "preferences", "matched_keyword": "LIKE"}
    assert "rule" not in shown and "matched" not in shown and shown["results"] == answer["results"]


def test_the_contract_answer_of_the_graph_and_fallback_stages(keyword_service):
    _seed(keyword_service)
    shown = contract_answer(route(keyword_service.engine, SCOPE, "Tell me about Ana"))
    assert (shown["stage"], shown["route"], shown["stage_name"]) == (3, "graph", "graph")
    graph_result = shown["graph_result"]
    assert [e["name"] for e in graph_result["entities"]] == ["Ana", "Google"] and graph_result["paths"] == []
    assert [r["relation"] for r in graph_result["relations"]] == ["works at"]
    fallback = contract_answer(route(keyword_service.engine, SCOPE, "zebra crossing"))
    assert (fallback["stage"], fallback["route"], fallback["stage_name"]) == (4, "llm_fallback", "none")
    assert fallback["message"] == fallback["reason"] and fallback["answered"] is False


def test_the_semantic_stage_as_stage_2_and_its_score_threshold(service):
    service.store_note(SCOPE, "The boiler was serviced in March by the plumber.")
    service.remember_fact(SCOPE, "The plumber", "serviced", "the boiler")
    service.upkeep.drain(60)
    answer = route(service.engine, SCOPE, "heater maintenance by a plumber")
    shown = contract_answer(answer)
    assert (shown["stage"], shown["route"], shown["total"]) == (2, "semantic", len(answer["results"]))
    best = shown["semantic_results"][0]
    assert 0.45 <= best["score"] <= 1 and best["payload"]["memory_type"] in ("note", "fact")
    fact = next(r for r in shown["semantic_results"] if r["payload"]["memory_type"] == "fact")
    assert (fact["payload"]["subject"], fact["payload"]["object"]) == ("The plumber", "the boiler")
    strict = route(service.engine, SCOPE, "heater maintenance by a plumber", 5, 0.99)
    assert strict["stage"] != "semantic" and "at least 0.99" not in strict["reason"]
    # (scores are shown to 5 decimals: a threshold one step under the shown best lets the best in)
    some = route(service.engine, SCOPE, "heater maintenance by a plumber", 5, best["score"] - 1e-5)
    assert some["stage"] == "semantic" and all(r["score"] >= best["score"] - 1e-5 for r in some["results"])


def test_llm_stage_runs_the_retriever_the_model_picks(home, llm_server):
    from hermes_cmms import MemoryService, Settings

    with MemoryService(Settings.load(home, embedder="none", llm=llm_server.url), scheduler=False) as svc:
        svc.store_note(SCOPE, "The zebra crossing near the office was repainted.")
        llm_server.say("keyword")
        picked = route(svc.engine, SCOPE, "zebra crossing paint")
        llm_server.say("no idea, sorry")
        unsure = route(svc.engine, SCOPE, "zebra crossing paint")
    assert (picked["stage"], picked["route"], picked["answered"]) == ("llm", "keyword", True)
    assert picked["results"][0]["content"].startswith("The zebra crossing")
    assert picked["trace"][-1] == {"stage": "llm", "outcome": "the model answered 'keyword'"}
    assert unsure["stage"] == "none" and "no idea" in unsure["trace"][-1]["outcome"]
    question = llm_server.requests()[0]["messages"][0]["content"]
    assert "zebra crossing paint" in question


def test_learn_adds_what_the_configured_llm_reads(home, llm_server):
    from hermes_cmms import MemoryService, Settings

    llm_server.say('[{"kind": "fact", "subject": "Ana", "predicate": "plays", "object": "chess"}]')
    with MemoryService(Settings.load(home, embedder="none", llm=llm_server.url), scheduler=False) as svc:
        result = svc.learn(SCOPE, "Ana spends her weekends at the chess club.")
    assert [(i["kind"], i["text"]) for i in result["learned"]] == [("fact", "Ana plays chess")]
    assert _sql(home, "SELECT subject, predicate, object FROM facts") == [("Ana", "plays", "chess")]


def test_forgetting_a_learned_text_keeps_what_someone_stored_explicitly(keyword_service, home):
    svc = keyword_service
    kept = svc.store_note(SCOPE, "user likes green tea", kind="preference", source="mcp:store_memory")
    first = svc.learn(SCOPE, "I like green tea.")  # learns the same preference: reinforces it
    assert first["learned"][0]["id"] == kept.id and first["learned"][0]["reinforced"]
    second = svc.learn(SCOPE, "I really like oolong.")
    svc.store_note(SCOPE, second["learned"][0]["text"], kind="preference", source="hermes:cmms_remember")
    svc.forget(SCOPE, first["id"])
    svc.forget(SCOPE, second["id"])
    assert sorted(c for (c,) in _sql(home, "SELECT content FROM memories")) == [
        "user likes green tea", "user likes oolong"]


def test_a_malformed_item_from_a_third_party_extractor_costs_only_itself(keyword_service, home):
    from hermes_cmms import hookimpl
    from hermes_cmms.extract import Item

    class Sloppy:
        @hookimpl
        def extract(self, text):
            return [Item("fact", "half a fact", {"subject": "user"}), "not even an item",
                    Item("fact", "Ana likes jazz", {"subject": "Ana", "predicate": "likes", "object": "jazz"})]

    keyword_service.pm.register(Sloppy())
    keyword_service.retain_turn(SCOPE, "s9", "I live in Faro.", "Nice.")
    keyword_service.flush_session(SCOPE, "s9")
    assert sorted(_sql(home, "SELECT subject, object FROM facts")) == [("Ana", "jazz"), ("user", "Faro")]
    assert _sql(home, "SELECT extracted_turn FROM sessions") == [(1,)]


def test_learn_refuses_an_oversized_source(keyword_service):
    with pytest.raises(InvalidInput, match="at most 200 characters"):
        keyword_service.learn(SCOPE, "I live in Faro.", source="x" * 201)


def test_each_turn_is_claimed_by_one_flush(keyword_service, home):
    svc = keyword_service
    svc.retain_turn(SCOPE, "s2", "I live in Evora.", "Noted.")
    assert svc.upkeep.extract_session(SCOPE, "s2") == 1
    assert svc.upkeep.extract_session(SCOPE, "s2") == 0  # a second (or concurrent) flush gets nothing
    assert _sql(home, "SELECT access_count FROM memories WHERE kind = 'fact'") == [(0,)]


def test_a_hanging_model_delays_a_flush_once_not_per_turn(home, monkeypatch):
    import socket
    import time

    from hermes_cmms import MemoryService, Settings
    from hermes_cmms.knowledge import learn

    monkeypatch.setattr(learn, "FLUSH_LLM_TIMEOUT_S", 1.0)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    try:
        with MemoryService(Settings.load(home, embedder="none", llm=url), scheduler=False) as svc:
            for text in ("I live in Lagos.", "I work at Tap.", "I love surfing."):
                svc.retain_turn(SCOPE, "s3", text, "OK.")
            started = time.monotonic()
            svc.flush_session(SCOPE, "s3")
            took = time.monotonic() - started
    finally:
        silent.close()
    assert took < 2.5, took  # one call for the session, not one per turn (3 s and more)
    assert len(_sql(home, "SELECT memory_id FROM facts")) == 2  # the rules' items are all kept


def test_the_router_reaches_an_old_fact_and_ignores_a_bare_first_person(keyword_service):
    svc = keyword_service
    svc.learn(SCOPE, "I live in Lisbon.")
    for n in range(600):
        svc.remember_fact(SCOPE, f"project{n}", "is owned by", "the platform team")
    answer = route(svc.engine, SCOPE, "Where do I live?")
    assert answer["route"] == "facts" and answer["results"][0]["content"] == "user lives in Lisbon"
    svc.store_note(SCOPE, "Dinner yesterday was sushi at Kaito.")
    answer = route(svc.engine, SCOPE, "what did I eat for dinner yesterday?")
    assert answer["stage"] != "graph"  # 'I' names the user, nothing in particular
    assert answer["results"][0]["content"].startswith("Dinner yesterday was sushi")


def test_a_rule_never_answers_with_memories_that_share_nothing_with_the_question(keyword_service):
    keyword_service.learn(SCOPE, "To deploy the app: first run the tests, then build the image, finally push it.")
    keyword_service.learn(SCOPE, "I live in Porto.")
    for question in ("How do I like my coffee?", "What is the capital of France?"):
        answer = route(keyword_service.engine, SCOPE, question)
        assert answer["stage"] != "rules", (question, answer["results"])
