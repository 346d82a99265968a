"""The entity graph on a real store: built from facts on write, read by query, entity and
paths, kept in step by forget, rebuilt from the facts, and never across scopes."""
from __future__ import annotations

import random
from contextlib import contextmanager

import pytest
from sqlalchemy import event

from hermes_cmms.knowledge import graph
from hermes_cmms.mcp_bridge._contract import graph_view
from hermes_cmms.common.errors import InvalidInput, UnknownEntity
from hermes_cmms.knowledge._rows import graph as graph_rows
from hermes_cmms.store.store import NewMemory

from conftest import exported_home
from db import sql

SCOPE = "test:graph"
OTHER = "test:graph-other"

FACTS = {  # label: (subject, predicate, object); spellings vary on purpose (dedup)
    "alice_acme": ("Alice", "works at", "Acme"),
    "acme_lisbon": ("Acme", "is based in", "Lisbon"),
    "lisbon_portugal": ("Lisbon", "is in", "Portugal"),
    "bob_acme": ("Bob", "works at", "the Acme"),
    "bob_porto": ("Bob", "lives in", "Porto"),
    "porto_portugal": ("Porto", "is in", "Portugal"),
    "carol_bob": ("Carol", "knows", "Bob"),
    "dave_carol": ("Dave", "is married to", "Carol"),
    "erin_dave": ("Erin", "mentors", "Dave"),
    "alice_jazz": ("alice", "likes", "Jazz"),
    "frank_jazz": ("Frank", "plays", "Jazz."),
    "acme_hana": ("Acme's", "CEO is", "Hana Sato"),
    "user_lisbon": ("user", "lives in", "Lisbon"),
}


def _sql(service, query: str, *params) -> list:
    return sql(service, query, *params)


def _ids(service, scope: str = SCOPE) -> dict[str, str]:
    """Entity ids by key, read from the entities table."""
    return dict(_sql(service, "SELECT key, id FROM entities WHERE scope = ?", scope))


def _graph_rows(service, scope: str = SCOPE) -> tuple[set, set]:
    """The scope's entity keys and its (source key, predicate, target key, memory id) edges."""
    keys = {key for (key,) in _sql(service, "SELECT key FROM entities WHERE scope = ?", scope)}
    edges = _sql(service, "SELECT s.key, r.predicate, t.key, r.memory_id FROM relations r "
                          "JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
                          "WHERE r.scope = ?", scope)
    assert len(edges) == _sql(service, "SELECT count(*) FROM relations WHERE scope = ?", scope)[0][0]
    return keys, set(edges)


def _route(path: dict) -> list[tuple[str, str, str, bool]]:
    return [(s["from"]["name"], s["predicate"], s["to"]["name"], s["forward"]) for s in path["steps"]]


def _paths(service, source: str, target: str, scope: str = SCOPE, **kwargs) -> list:
    ids = _ids(service, scope)
    found = graph.search(service.engine, scope, source_id=ids[source], target_id=ids[target], **kwargs)
    assert found["mode"] == "paths" and found["source"]["id"] == ids[source]
    return [_route(p) for p in found["path_steps"]]


def _neighbours(found: dict) -> set[tuple[str, str, bool, bool]]:
    return {(n["entity"]["name"], n["predicate"], n["forward"], n["current"]) for n in found["neighbours"]}


@pytest.fixture
def facts(keyword_service) -> dict[str, str]:
    """The fixture graph in SCOPE; memory ids by label."""
    return {label: keyword_service.remember_fact(SCOPE, *parts) for label, parts in FACTS.items()}


@pytest.fixture(scope="module")
def read_graph(shared_keyword_service) -> tuple:
    """The fixture graph made once, in a store of the module's own, for the tests that only search
    it (a search writes nothing): the service and the memory ids by label. A test that adds to the
    graph or changes it takes `facts`, on a store of its own."""
    return shared_keyword_service, {label: shared_keyword_service.remember_fact(SCOPE, *parts)
                                    for label, parts in FACTS.items()}


@pytest.mark.quick
def test_every_fact_becomes_one_edge_between_deduplicated_entities(read_graph):
    keyword_service, facts = read_graph
    keys, edges = _graph_rows(keyword_service)
    assert keys == {"alice", "acme", "lisbon", "portugal", "bob", "porto", "carol", "dave", "erin", "jazz",
                    "frank", "hana sato", "user"}
    assert edges == {(graph.entity_key(s), p, graph.entity_key(o), facts[label])
                     for label, (s, p, o) in FACTS.items()}
    names = dict(_sql(keyword_service, "SELECT key, name FROM entities WHERE scope = ?", SCOPE))
    assert (names["alice"], names["acme"], names["jazz"]) == ("Alice", "Acme", "Jazz")  # first spelling


@pytest.mark.parametrize("spellings", [("alice", "Alice ", "ALICE.", "Alice's", "alice’s"),
                                       ("the Acme", "Acme", "acme,", "The  ACME"),
                                       ("Acme Inc.", "acme inc"), ("user", "User", "the user")])
def test_entity_key_folds_case_spaces_punctuation_possessive_and_article(spellings):
    assert len({graph.entity_key(name) for name in spellings}) == 1
    assert graph.entity_key("Alice Smith") != graph.entity_key("Alice")


def test_query_mode_finds_the_entities_a_question_names(read_graph):
    keyword_service, facts = read_graph
    found = graph.search(keyword_service.engine, SCOPE, query="Where does alice work?")
    assert found["mode"] == "query" and [e["name"] for e in found["entities"]] == ["Alice"]
    [alice] = found["entities"]
    assert alice["degree"] == 2 and _neighbours(alice) == {("Acme", "works at", True, True),
                                                           ("Jazz", "likes", True, True)}
    assert {n["memory_id"] for n in alice["neighbours"]} == {facts["alice_acme"], facts["alice_jazz"]}
    acme = graph.search(keyword_service.engine, SCOPE, query="Who works at the Acme?")["entities"]
    assert [e["name"] for e in acme] == ["Acme"] and acme[0]["degree"] == 4
    assert ("Bob", "works at", False, True) in _neighbours(acme[0])
    both = graph.search(keyword_service.engine, SCOPE, query="Is Lisbon in Portugal?")["entities"]
    assert [(e["name"], e["degree"]) for e in both] == [("Lisbon", 3), ("Portugal", 2)]  # better connected first


def test_query_mode_reads_the_first_person_as_the_user_entity(read_graph):
    keyword_service, facts = read_graph
    for question in ("Where do I live?", "Where does the user live?"):
        [user] = graph.search(keyword_service.engine, SCOPE, query=question)["entities"]
        assert user["name"] == "user" and _neighbours(user) == {("Lisbon", "lives in", True, True)}


def test_query_mode_falls_back_to_whole_words_of_longer_names(read_graph):
    keyword_service, facts = read_graph
    [hana] = graph.search(keyword_service.engine, SCOPE, query="What does Sato do?")["entities"]
    assert hana["name"] == "Hana Sato" and _neighbours(hana) == {("Acme", "CEO is", False, True)}
    assert graph.search(keyword_service.engine, SCOPE, query="Who is Sat?")["entities"] == []
    assert graph.search(keyword_service.engine, SCOPE, query="the weather in Oslo")["entities"] == []


def test_entity_mode_lists_neighbours_with_direction_and_provenance(read_graph):
    keyword_service, facts = read_graph
    ids = _ids(keyword_service)
    found = graph.search(keyword_service.engine, SCOPE, entity_id=ids["bob"])
    assert found["mode"] == "entity" and found["entity"]["name"] == "Bob" and found["entity"]["degree"] == 3
    assert _neighbours(found["entity"]) == {("Acme", "works at", True, True), ("Porto", "lives in", True, True),
                                            ("Carol", "knows", False, True)}
    porto = next(n for n in found["entity"]["neighbours"] if n["entity"]["name"] == "Porto")
    assert porto["memory_id"] == facts["bob_porto"] and porto["entity"]["id"] == ids["porto"]
    acme = graph.entity(keyword_service.engine, SCOPE, ids["acme"], limit=2)
    assert acme["degree"] == 4 and len(acme["neighbours"]) == 2


def test_paths_of_one_to_four_hops_shortest_first(read_graph):
    keyword_service, facts = read_graph
    assert _paths(keyword_service, "alice", "acme") == [[("Alice", "works at", "Acme", True)]]
    assert _paths(keyword_service, "carol", "erin") == [[("Carol", "is married to", "Dave", False),
                                                         ("Dave", "mentors", "Erin", False)]]
    assert _paths(keyword_service, "alice", "portugal") == [
        [("Alice", "works at", "Acme", True), ("Acme", "is based in", "Lisbon", True),
         ("Lisbon", "is in", "Portugal", True)],
        [("Alice", "works at", "Acme", True), ("Acme", "works at", "Bob", False),
         ("Bob", "lives in", "Porto", True), ("Porto", "is in", "Portugal", True)]]
    assert _paths(keyword_service, "erin", "acme") == [[("Erin", "mentors", "Dave", True),
                                                        ("Dave", "is married to", "Carol", True),
                                                        ("Carol", "knows", "Bob", True),
                                                        ("Bob", "works at", "Acme", True)]]


def test_max_depth_and_limit_cut_the_paths(read_graph):
    keyword_service, facts = read_graph
    assert [len(p) for p in _paths(keyword_service, "alice", "portugal", max_depth=3)] == [3]
    assert _paths(keyword_service, "alice", "portugal", max_depth=2) == []
    assert _paths(keyword_service, "erin", "acme", max_depth=3) == []
    assert _paths(keyword_service, "erin", "alice") == []  # five hops away
    assert [len(p) for p in _paths(keyword_service, "bob", "lisbon")] == [2, 3]
    assert [len(p) for p in _paths(keyword_service, "bob", "lisbon", limit=1)] == [2]


def test_a_superseded_fact_stays_in_the_graph_flagged_and_ranked_after(keyword_service, facts):
    braga = keyword_service.remember_fact(SCOPE, "Bob", "lives in", "Braga")
    keyword_service.remember_fact(SCOPE, "Braga", "is in", "Portugal")
    assert _sql(keyword_service, "SELECT superseded_by FROM memories WHERE id = ?", facts["bob_porto"]) == [(braga,)]
    bob = graph.entity(keyword_service.engine, SCOPE, _ids(keyword_service)["bob"])
    assert ("Braga", "lives in", True, True) in _neighbours(bob)
    assert ("Porto", "lives in", True, False) in _neighbours(bob)
    assert [n["current"] for n in bob["neighbours"]] == [True, True, True, False]
    found = graph.search(keyword_service.engine, SCOPE, source_id=_ids(keyword_service)["bob"],
                         target_id=_ids(keyword_service)["portugal"])["path_steps"]
    assert [[s["to"]["name"] for s in p["steps"]] for p in found[:2]] == [["Braga", "Portugal"], ["Porto", "Portugal"]]
    assert [[s["current"] for s in p["steps"]] for p in found[:2]] == [[True, True], [False, True]]


def test_forgetting_a_fact_removes_its_edge_and_the_entities_left_alone(keyword_service, facts):
    keys, edges = _graph_rows(keyword_service)
    keyword_service.forget(SCOPE, facts["erin_dave"])
    keyword_service.forget(SCOPE, facts["acme_hana"])
    after_keys, after_edges = _graph_rows(keyword_service)
    assert after_keys == keys - {"erin", "hana sato"}
    assert after_edges == {e for e in edges if e[3] not in (facts["erin_dave"], facts["acme_hana"])}
    assert graph.entity(keyword_service.engine, SCOPE, _ids(keyword_service)["dave"])["degree"] == 1
    assert graph.search(keyword_service.engine, SCOPE, query="Who is Sato?")["entities"] == []


def test_rebuild_equals_the_incremental_graph_and_repairs_drift(keyword_service, facts):
    keyword_service.remember_fact(SCOPE, "Bob", "lives in", "Braga")  # a superseded edge stays
    keyword_service.forget(SCOPE, facts["erin_dave"])
    keyword_service.remember_fact(OTHER, "Alice", "works at", "Globex")
    built, other = _graph_rows(keyword_service), _graph_rows(keyword_service, OTHER)
    other_ids = _ids(keyword_service, OTHER)
    assert graph.rebuild(keyword_service.engine, SCOPE) == {"scopes": 1, "entities": 13, "relations": 13}
    assert _graph_rows(keyword_service) == built and _ids(keyword_service, OTHER) == other_ids
    _sql(keyword_service, "DELETE FROM relations WHERE memory_id = ?", facts["carol_bob"])
    _sql(keyword_service, "INSERT INTO entities (id, scope, name, key, created_at) VALUES ('x', ?, 'Ghost', 'ghost', 0)",
         SCOPE)
    assert _graph_rows(keyword_service) != built
    assert graph.rebuild(keyword_service.engine) == {"scopes": 2, "entities": 15, "relations": 14}
    assert _graph_rows(keyword_service) == built and _graph_rows(keyword_service, OTHER) == other


def test_the_graph_rows_rebuild_a_graph_from_its_facts_alone(keyword_service, facts):
    """The graph's rebuild lives in its rows (knowledge/_rows/graph.py): handed the Store only,
    it rebuilds what the facts make."""
    built = _graph_rows(keyword_service)
    _sql(keyword_service, "DELETE FROM relations WHERE scope = ?", SCOPE)
    _sql(keyword_service, "DELETE FROM entities WHERE scope = ?", SCOPE)
    assert graph_rows.rebuild(keyword_service.store, SCOPE) == {"scopes": 1, "entities": 13, "relations": 13}
    assert _graph_rows(keyword_service) == built


@pytest.mark.quick
def test_scopes_never_leak_into_each_other(keyword_service, facts):
    keyword_service.remember_fact(OTHER, "Alice", "works at", "Globex")
    globex = keyword_service.remember_fact(OTHER, "Globex", "is in", "Portugal")
    _sql(keyword_service, "INSERT INTO relations (scope, source_id, target_id, predicate, memory_id, created_at) "
                          "VALUES (?, ?, ?, 'drifted into', ?, 0)",  # a corrupt row: another scope's edge
         OTHER, _ids(keyword_service)["alice"], _ids(keyword_service, OTHER)["globex"], globex)
    [alice] = graph.search(keyword_service.engine, SCOPE, query="Where does Alice work?")["entities"]
    assert alice["id"] == _ids(keyword_service)["alice"] and alice["degree"] == 2 and "Globex" not in str(alice)
    assert _paths(keyword_service, "alice", "portugal", scope=OTHER) == [
        [("Alice", "works at", "Globex", True), ("Globex", "is in", "Portugal", True)]]
    foreign = _ids(keyword_service, OTHER)
    with pytest.raises(UnknownEntity, match=foreign["globex"]):
        graph.search(keyword_service.engine, SCOPE, entity_id=foreign["globex"])
    with pytest.raises(UnknownEntity):
        graph.search(keyword_service.engine, SCOPE, source_id=_ids(keyword_service)["alice"], target_id=foreign["portugal"])
    assert graph.search(keyword_service.engine, OTHER, query="Where is Lisbon?")["entities"] == []


def _bulk_facts(service, scope: str, triples) -> list[str]:
    """Store many facts through the store's write path, 2,000 per transaction."""
    items = [NewMemory(scope, f"{s} {p} {o}", kind="fact", tier="semantic", source="test:bulk", fact=(s, p, o))
             for s, p, o in triples]
    return [i for start in range(0, len(items), 2000) for i in service.store.add(items[start:start + 2000])]


@contextmanager
def _relation_rows(service):
    """The rows each statement reading `relations` returned, counted by running it again after."""
    seen, counts = [], []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "relations" in statement and statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(service.store.engine, "before_cursor_execute", capture)
    try:
        yield counts
    finally:
        event.remove(service.store.engine, "before_cursor_execute", capture)
    with service.store.engine.connect() as conn:  # the driver's own statement and parameters, again
        counts.extend(len(conn.exec_driver_sql(statement, parameters).fetchall()) for statement, parameters in seen)


def _hub_facts(service) -> dict[str, str]:
    """5,000 facts about the user, Ana who knows the user, and a thing of theirs in Lisbon;
    entity ids by key."""
    _bulk_facts(service, SCOPE, [("user", f"keeps item {n} in", f"box {n}") for n in range(5000)])
    _bulk_facts(service, SCOPE, [("Ana", "knows", "user"), ("Box 7", "is in", "Lisbon")])
    return _ids(service)


@pytest.fixture
def hub(keyword_service) -> dict[str, str]:
    return _hub_facts(keyword_service)


@pytest.fixture(scope="module")
def read_hub(tmp_path_factory):
    """The hub in a store of its own, made once for the tests that only read it (a search and
    paths write nothing: the rows they read are counted, not changed)."""
    from hermes_cmms import MemoryService, Settings

    home = tmp_path_factory.mktemp("hub") / "hermes_home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as env, exported_home(home, env):
        service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
        try:
            _hub_facts(service)
            yield service
        finally:
            service.close()


@pytest.mark.store
def test_a_first_person_query_on_a_hub_reads_only_the_neighbours_it_shows(read_hub):
    keyword_service = read_hub
    with _relation_rows(keyword_service) as rows:
        [user] = graph.search(keyword_service.engine, SCOPE, query="Where do I keep things?", limit=20)["entities"]
    assert user["name"] == "user" and user["degree"] == 5001
    assert [(n["entity"]["name"], n["forward"]) for n in user["neighbours"]] == [
        ("Ana", False), *((f"box {n}", True) for n in range(4999, 4980, -1))]  # newest first
    assert sum(rows) <= 20 + 2, rows  # the neighbours shown and one degree count per direction


@pytest.mark.store
def test_paths_through_a_hub_read_only_the_relations_that_can_be_on_them(read_hub):
    keyword_service = read_hub
    route = [("Ana", "knows", "user", True), ("user", "keeps item 7 in", "box 7", True),
             ("box 7", "is in", "Lisbon", True)]
    for source, target, want in (("ana", "lisbon", route),
                                 ("lisbon", "ana", [(b, p, a, not f) for a, p, b, f in reversed(route)])):
        with _relation_rows(keyword_service) as rows:
            assert _paths(keyword_service, source, target) == [want]
        assert sum(rows) <= 50, (source, rows)  # the hub has 5,001 relations
    assert _paths(keyword_service, "user", "lisbon") == [route[1:]]


@pytest.fixture
def hubs(keyword_service) -> dict[str, str]:
    """500 people, each living in one of 4 hub places, 1,499 "knows" links between them, and
    person 0 moving from hub 0 to hub 2 (the old fact superseded); entity ids by key."""
    rng = random.Random(3)
    _bulk_facts(keyword_service, SCOPE, [(f"Person {n}", "lives in", f"Hub {n % 4}") for n in range(500)] +
                [(f"Person {a}", "knows", f"Person {b}") for a, b in (rng.sample(range(500), 2) for _ in range(1499))])
    keyword_service.remember_fact(SCOPE, "Person 0", "lives in", "Hub 2")
    return _ids(keyword_service)


def _every_path(service, source: str, target: str, depth: int) -> list[tuple[int, int, tuple]]:
    """Every simple path of at most `depth` hops, found by brute force on the stored rows, as
    (length, superseded steps, relation ids), best first."""
    around: dict[str, list] = {}
    for edge, a, b, current in _sql(service, "SELECT r.id, r.source_id, r.target_id, m.superseded_by IS NULL "
                                             "FROM relations r JOIN memories m ON m.id = r.memory_id"):
        around.setdefault(a, []).append((edge, b, current))
        around.setdefault(b, []).append((edge, a, current))
    found = []

    def walk(nodes, steps):
        if nodes[-1] == target:
            found.append((len(steps), sum(not current for _, current in steps), tuple(e for e, _ in steps)))
        elif len(steps) < depth:
            for edge, other, current in around.get(nodes[-1], ()):
                if other not in nodes:
                    walk(nodes + (other,), steps + ((edge, current),))

    walk((source,), ())
    return sorted(found)


def test_paths_on_a_hub_graph_come_shortest_first_and_stop_early(keyword_service, hubs, monkeypatch):
    source, target = hubs["person 0"], hubs["person 1"]
    with _relation_rows(keyword_service) as rows:
        found = graph.search(keyword_service.engine, SCOPE, source_id=source, target_id=target, max_depth=4, limit=20)
    every = _every_path(keyword_service, source, target, 4)
    ids = dict(_sql(keyword_service, "SELECT memory_id, id FROM relations"))
    shown = [(p["length"], sum(not s["current"] for s in p["steps"]), tuple(ids[s["memory_id"]] for s in p["steps"]))
             for p in found["path_steps"]]
    assert len(every) > 20 and len({length for length, _, _ in every[:20]}) > 1 and every[19][1] == 0 < every[-1][1]
    assert shown == every[:20] and not found["truncated"]  # the 20 best: shortest, then most current
    assert sum(rows) <= 400, rows  # of 2,000 relations, 125 per hub
    monkeypatch.setattr(graph, "MAX_RANKED", 5)  # a length with more paths than that: ranked among 5
    cut = graph.search(keyword_service.engine, SCOPE, source_id=source, target_id=target, max_depth=4, limit=20)
    lengths = [p["length"] for p in cut["path_steps"]]
    assert cut["truncated"] and lengths == [length for length, _, _ in every[:len(lengths)]]
    monkeypatch.setattr(graph, "MAX_ROWS", 10)  # the reads stop: shorter paths only, flagged
    cut = graph.search(keyword_service.engine, SCOPE, source_id=source, target_id=target, max_depth=4, limit=20)
    assert cut["truncated"] and len(cut["path_steps"]) < 20


def test_rebuild_commits_each_scope_in_chunks_and_equals_the_incremental_graph(keyword_service, hub):
    keyword_service.remember_fact(OTHER, "Alice", "works at", "Globex")
    built, other = _graph_rows(keyword_service), _graph_rows(keyword_service, OTHER)
    commits = []

    def count(conn):
        if conn.get_execution_options().get("cmms_write"):
            commits.append(1)

    event.listen(keyword_service.store.engine, "commit", count)
    try:
        assert graph.rebuild(keyword_service.engine) == {"scopes": 2, "entities": 5003 + 2, "relations": 5002 + 1}
    finally:
        event.remove(keyword_service.store.engine, "commit", count)
    assert len(commits) == 3 + 1  # 5,002 facts in chunks of 2,000, then the other scope
    assert _graph_rows(keyword_service) == built and _graph_rows(keyword_service, OTHER) == other


def test_a_whole_word_is_found_behind_many_names_that_merely_contain_it(keyword_service):
    _bulk_facts(keyword_service, SCOPE, [(f"Isatori {n:03d}", "grows", "rice") for n in range(600)])
    keyword_service.remember_fact(SCOPE, "Yuki Sato", "works at", "Acme")
    [sato] = graph.search(keyword_service.engine, SCOPE, query="What does Sato do?")["entities"]
    assert sato["name"] == "Yuki Sato" and sato["neighbours"][0]["entity"]["name"] == "Acme"


@pytest.mark.parametrize("kwargs, message", [
    ({"source_id": "x"}, "needs both source_id and target_id; it got source_id without target_id"),
    ({"query": "Alice", "target_id": "x", "source_id": ""}, "got target_id without source_id"),
    ({"query": "Alice", "max_depth": 0}, "max_depth .* not 0"),
    ({"query": "Alice", "max_depth": 5}, "not 5"),
    ({"query": "Alice", "max_depth": True}, "not True"),
    ({"query": "Alice", "limit": 0}, "limit .* not 0"),
    ({"query": 42}, "not 42"),
    ({"query": "   "}, "non-empty string"),
    ({"query": "x" * 300_000}, "300,000 characters; the limit is 10,000"),
    ({"entity_id": 7}, "entity_id must be a non-empty string, not 7"),
])
def test_bad_input_gets_one_clear_sentence(read_graph, kwargs, message):
    keyword_service, facts = read_graph
    with pytest.raises(InvalidInput, match=message):
        graph.search(keyword_service.engine, SCOPE, **kwargs)


def test_the_mode_goes_by_precedence_and_empty_strings_are_not_given(read_graph):
    keyword_service, facts = read_graph
    ids = _ids(keyword_service)
    both = graph.search(keyword_service.engine, SCOPE, query="Where does Bob live?", entity_id=ids["alice"])
    assert both["mode"] == "entity" and both["entity"]["name"] == "Alice" and both["ignored"] == ["query"]
    paths = graph.search(keyword_service.engine, SCOPE, query="Bob", entity_id=ids["bob"],
                         source_id=ids["alice"], target_id=ids["lisbon"])
    assert paths["mode"] == "paths" and paths["ignored"] == ["query", "entity_id"]
    blank = graph.search(keyword_service.engine, SCOPE, query="Where does Bob live?", entity_id="", source_id="",
                         target_id="")
    assert blank["mode"] == "query" and "ignored" not in blank and blank["entities"][0]["name"] == "Bob"
    assert graph.search(keyword_service.engine, SCOPE) == {"mode": "none", "note": graph.NOTHING}
    assert graph.search(keyword_service.engine, SCOPE, query="", entity_id="")["mode"] == "none"


def test_an_entity_is_found_by_its_name_or_its_name_without_spaces(keyword_service, facts):
    keyword_service.remember_fact(SCOPE, "Server Alpha", "runs", "Postgres")
    keyword_service.remember_fact(SCOPE, "Server Alpha", "is located in", "Lisbon")
    ids = _ids(keyword_service)
    for given in ("Server Alpha", "server alpha", "serveralpha", "ServerAlpha", "the Server Alpha"):
        found = graph.search(keyword_service.engine, SCOPE, entity_id=given)
        assert found["entity"]["id"] == ids["server alpha"], given
        assert found["resolved"] == [{"argument": "entity_id", "given": given, "id": ids["server alpha"],
                                      "name": "Server Alpha", "matches": 1}]
    by_id = graph.search(keyword_service.engine, SCOPE, entity_id=ids["server alpha"])
    assert "resolved" not in by_id
    path = graph.search(keyword_service.engine, SCOPE, source_id="serveralpha", target_id="Portugal")
    assert [(p["steps"][0]["from"]["name"], p["steps"][-1]["to"]["name"]) for p in path["path_steps"]][0] == \
        ("Server Alpha", "Portugal")
    assert [r["argument"] for r in path["resolved"]] == ["source_id", "target_id"]


def test_an_entity_named_by_a_uuid_is_found_by_that_name_as_the_doors_pass_it(keyword_service, facts):
    name = "123e4567-e89b-12d3-a456-426614174000"  # the doors pass an id argument in stored form
    keyword_service.remember_fact(SCOPE, "Build 7", "has ticket", name)
    for given in (name, name.replace("-", "")):
        found = graph.search(keyword_service.engine, SCOPE, entity_id=given)
        assert found["entity"]["name"] == name, given


def test_a_name_that_several_entities_share_without_spaces_resolves_to_the_best_connected(keyword_service, facts):
    keyword_service.remember_fact(SCOPE, "Data Base", "is", "slow")
    for thing in ("Acme", "Porto", "Lisbon"):
        keyword_service.remember_fact(SCOPE, "Datab Ase", "serves", thing)
    found = graph.search(keyword_service.engine, SCOPE, entity_id="data base")
    assert found["entity"]["name"] == "Data Base" and found["resolved"][0]["matches"] == 1  # its own name first
    squeezed = graph.search(keyword_service.engine, SCOPE, entity_id="DataBase")
    assert squeezed["entity"]["name"] == "Datab Ase" and squeezed["entity"]["degree"] == 3
    assert squeezed["resolved"][0]["matches"] == 2


def test_the_contract_view_has_each_entity_and_relation_once_and_paths_as_entities(read_graph):
    keyword_service, facts = read_graph
    ids = _ids(keyword_service)
    query = graph_view(graph.search(keyword_service.engine, SCOPE, query="Alice and Acme"))
    names = [n["name"] for n in query["nodes"]]
    assert len(names) == len(set(names)) and {"Alice", "Acme", "Jazz", "Lisbon", "Bob", "Hana Sato"} <= set(names)
    assert all(n["type"] == "entity" for n in query["nodes"]) and query["paths"] == []
    works = [e for e in query["edges"] if e["relation"] == "works at" and e["source_id"] == ids["alice"]]
    assert works == [{"source_id": ids["alice"], "target_id": ids["acme"], "relation": "works at",
                      "attributes": {"memory_id": facts["alice_acme"], "current": True}}]  # once, not per end
    bob = [e for e in query["edges"] if e["source_id"] == ids["bob"]]
    assert [(e["relation"], e["target_id"]) for e in bob] == [("works at", ids["acme"])]  # Bob -> Acme, forward
    found = graph.search(keyword_service.engine, SCOPE, source_id=ids["alice"], target_id=ids["portugal"])
    view = graph_view(found)
    assert [[n["name"] for n in path] for path in view["paths"]][0] == ["Alice", "Acme", "Lisbon", "Portugal"]
    assert {(e["source_id"], e["relation"], e["target_id"]) for e in view["edges"]} >= {
        (ids["alice"], "works at", ids["acme"]), (ids["acme"], "is based in", ids["lisbon"]),
        (ids["lisbon"], "is in", ids["portugal"])}
    assert graph_view({"mode": "none", "note": graph.NOTHING}) == {"nodes": [], "edges": [], "paths": []}


def test_unknown_entities_same_ends_and_bad_scopes_are_refused(read_graph):
    keyword_service, facts = read_graph
    alice = _ids(keyword_service)["alice"]
    with pytest.raises(UnknownEntity, match="Unknown entity id 'nope'"):
        graph.search(keyword_service.engine, SCOPE, entity_id="nope")
    with pytest.raises(InvalidInput, match="two different entities"):
        graph.search(keyword_service.engine, SCOPE, source_id=alice, target_id=alice)
    with pytest.raises(InvalidInput, match="scope"):
        graph.search(keyword_service.engine, "", query="Alice")
    with pytest.raises(InvalidInput, match="scope"):
        graph.rebuild(keyword_service.engine, 3)
