"""The SQL store: migrations, schema, WAL, and the FTS5 index kept in sync with the rows."""
from __future__ import annotations

import sqlite3

from sqlalchemy import inspect, text

from hermes_cmms import _migrations
from hermes_cmms.keyword import SqliteKeywordIndex
from hermes_cmms.models import (AuditEvent, Belief, ConversationSession, Entity, Evidence, Fact, IndexState,
                                Job, Link, Memory, Outbox, Relation,
                                SchemaMigration)
from hermes_cmms.store import NewMemory, Store

MODELS = (Memory, ConversationSession, Outbox, SchemaMigration, Fact, IndexState, AuditEvent, Job,
          Link, Belief, Evidence, Entity, Relation)
EXPECTED_MIGRATIONS = ["0001_initial", "0002_memory_context", "0003_memory_expires_at", "0004_facts",
                       "0005_index_state", "0006_memory_speaker", "0007_lifecycle", "0008_knowledge",
                       "0001_fts5_memories", "0002_fts5_context", "0003_fts5_scope"]
SCOPE = "test:store"


def _url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'cmms.db'}"


def _sql(path, query, *params):
    with sqlite3.connect(path) as conn:
        return conn.execute(query, params).fetchall()


def _fts_rows(service, seq: int) -> list:
    with service.store.read() as conn:
        return conn.execute(text("SELECT content FROM memories_fts WHERE rowid = :s"), {"s": seq}).all()


def _seq(service, memory_id: str) -> int:
    with service.store.read() as conn:
        return conn.execute(text("SELECT seq FROM memories WHERE id = :i"), {"i": memory_id}).scalar_one()


# -- schema and migrations ------------------------------------------------------------------


def test_blank_database_migrates_to_the_models_schema(tmp_path):
    store = Store(_url(tmp_path))
    try:
        inspector = inspect(store.engine)
        for model in MODELS:
            table = model.__table__
            columns = {c["name"]: c for c in inspector.get_columns(table.name)}
            assert set(columns) == set(table.columns.keys()), table.name
            for column in table.columns:
                if column.primary_key:  # SQLite reports an INTEGER PRIMARY KEY (rowid) as nullable
                    continue
                assert columns[column.name]["nullable"] == column.nullable, (table.name, column.name)
            primary = inspector.get_pk_constraint(table.name)["constrained_columns"]
            assert sorted(primary) == sorted(c.name for c in table.primary_key), table.name
        tables = set(inspector.get_table_names())
        ours = {m.__table__.name for m in MODELS} | {"memories_fts"}
        extra = {t for t in tables - ours
                 if not t.startswith("memories_fts_") and t != "sqlite_sequence"}
        assert extra == set()
    finally:
        store.close()


def test_migrations_are_recorded_by_name_and_reopening_applies_nothing(tmp_path):
    path = tmp_path / "cmms.db"
    Store(_url(tmp_path)).close()
    first = _sql(path, "SELECT name, applied_at FROM schema_migrations ORDER BY rowid")
    assert [name for name, _ in first] == EXPECTED_MIGRATIONS

    store = Store(_url(tmp_path))
    try:
        assert _sql(path, "SELECT name, applied_at FROM schema_migrations ORDER BY rowid") == first
        with store.write() as conn:
            assert _migrations.apply(conn, _migrations.CORE_MIGRATIONS + store.keyword.migrations) == []
    finally:
        store.close()


def test_reopening_keeps_rows_and_their_keyword_index(tmp_path):
    path = tmp_path / "cmms.db"
    store = Store(_url(tmp_path))
    [memory_id] = store.add([NewMemory(scope=SCOPE, content="The lighthouse keeper likes marmalade")])
    store.close()

    store = Store(_url(tmp_path))
    try:
        assert [m for m, _ in store.keyword_search(SCOPE, "marmalade", 5)] == [memory_id]
        assert _sql(path, "SELECT count(*) FROM memories_fts") == [(1,)]
    finally:
        store.close()


def test_database_runs_in_wal_mode(tmp_path):
    store = Store(_url(tmp_path))
    try:
        with store.read() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
    finally:
        store.close()
    # WAL is a property of the file: a plain connection sees it too.
    assert _sql(tmp_path / "cmms.db", "PRAGMA journal_mode") == [("wal",)]


def test_turns_are_numbered_per_session(tmp_path):
    store = Store(_url(tmp_path))
    try:
        for i in range(3):
            store.add([NewMemory(scope=SCOPE, content=f"u{i}", role="user", session_id="s1"),
                       NewMemory(scope=SCOPE, content=f"a{i}", role="assistant", session_id="s1")],
                      turn_of=(SCOPE, "s1"))
        store.add([NewMemory(scope=SCOPE, content="other", session_id="s2")], turn_of=(SCOPE, "s2"))
        rows = _sql(tmp_path / "cmms.db",
                    "SELECT session_id, turn, count(*) FROM memories GROUP BY 1, 2 ORDER BY 1, 2")
        assert rows == [("s1", 1, 2), ("s1", 2, 2), ("s1", 3, 2), ("s2", 1, 1)]
        assert store.counts()["outbox"] == 7
    finally:
        store.close()


# -- keyword index stays in sync --------------------------------------------------------------


def test_keyword_index_follows_insert_update_and_delete(keyword_service):
    svc = keyword_service
    memory_id = svc.remember(SCOPE, "Grandma's recipe uses cardamom and saffron")
    seq = _seq(svc, memory_id)
    assert _fts_rows(svc, seq) == [("Grandma's recipe uses cardamom and saffron",)]
    assert [h.memory.id for h in svc.search(SCOPE, "cardamom")] == [memory_id]

    with svc.store.write() as conn:  # the update trigger: the index follows the row
        conn.execute(text("UPDATE memories SET content = 'Grandma uses nutmeg' WHERE id = :i"),
                     {"i": memory_id})
    assert svc.search(SCOPE, "cardamom") == []
    assert [h.memory.id for h in svc.search(SCOPE, "nutmeg")] == [memory_id]

    svc.forget(SCOPE, memory_id)
    assert _fts_rows(svc, seq) == []
    assert svc.search(SCOPE, "nutmeg") == []
    assert svc.store.get([memory_id], SCOPE) == {}


def test_keyword_search_stays_inside_the_scope(keyword_service):
    mine = keyword_service.remember(SCOPE, "The spare key is under the blue flowerpot")
    keyword_service.remember("test:other", "The spare key is under the red flowerpot")
    assert [m for m, _ in keyword_service.store.keyword_search(SCOPE, "flowerpot", 10)] == [mine]


def test_common_words_only_rank_rows_that_also_hold_a_rarer_word(keyword_service, monkeypatch):
    monkeypatch.setattr(SqliteKeywordIndex, "COMMON", 5)
    svc = keyword_service
    for n in range(12):
        svc.remember(SCOPE, f"Birthday party number {n} was fun")
    for n in range(8):  # another scope's rows never make a word common in this one
        svc.remember("test:other", f"Bruno walked the dog, day {n}")
    for n in range(30):  # BM25 gives no weight to a word in over half the rows: keep it under
        svc.remember("test:other", f"Unrelated note {n}")
    bruno = svc.remember(SCOPE, "Bruno's birthday is on the ninth of May")
    bruno_walk = svc.remember(SCOPE, "Bruno likes long walks")
    found = [m for m, _ in svc.store.keyword_search(SCOPE, "When is Bruno's birthday?", 50)]
    assert found[:2] == [bruno, bruno_walk]  # rows with 'bruno' first; 'birthday' (13 rows)...
    assert len(found) == 6  # ...then its 5 newest rows (one of them is the first hit)
    unknown = [m for m, _ in svc.store.keyword_search(SCOPE, "When is the unicorn's birthday?", 50)]
    assert len(unknown) == 5 and bruno in unknown  # a rare word that matches nothing drops nothing


def test_when_every_word_is_common_the_newest_rows_holding_all_of_them_come_first(keyword_service,
                                                                                  monkeypatch):
    monkeypatch.setattr(SqliteKeywordIndex, "COMMON", 5)
    svc = keyword_service
    both = svc.remember(SCOPE, "Bruno's birthday cake was lemon")
    for n in range(10):
        svc.remember(SCOPE, f"Bruno said hello {n}")
        svc.remember(SCOPE, f"A birthday card {n}")
    found = [m for m, _ in svc.store.keyword_search(SCOPE, "Bruno birthday", 8)]
    assert found[0] == both and len(found) == 6  # 1 with both, then the 5 newest with either
    newest = [m for m, _ in svc.store.keyword_search(SCOPE, "birthday", 50)]
    assert len(newest) == 5 and both not in newest  # bounded: only the 5 newest are ranked


def test_forgotten_memory_leaves_the_vector_index(service):
    keep = service.remember(SCOPE, "The boat is moored at pier seven")
    gone = service.remember(SCOPE, "My allergy is to hazelnuts")
    assert service.indexer.drain(30)
    hits = {h.memory.id: h for h in service.search(SCOPE, "what am I allergic to")}
    assert hits[gone].vector_rank is not None  # found by the vector index before forgetting

    service.forget(SCOPE, gone)
    assert service.indexer.drain(30)
    found = service.indexer.vectors._collection(SCOPE, create=False).get(ids=[gone, keep])["ids"]
    assert found == [keep]
    hits = {h.memory.id: h for h in service.search(SCOPE, "allergy hazelnuts")}
    assert gone not in hits
    hits = {h.memory.id: h for h in service.search(SCOPE, "where is my boat moored")}
    assert hits[keep].vector_rank is not None  # the kept memory is still in the vector index
    assert service.status()["indexed"] == 1
    assert service.store.counts()["outbox"] == 0


def test_an_answer_is_found_through_the_question_before_it(keyword_service):
    keyword_service.retain_turn(SCOPE, "s1", "What did you paint last weekend?", "A sunrise over the lake.")
    keyword_service.retain_turn(SCOPE, "s1", "Lovely. Anything else?", "Nothing else, I rested.")
    rows = {m.content: m for m in keyword_service.store.recent(SCOPE, 10)}
    assert rows["A sunrise over the lake."].context == "What did you paint last weekend?"
    assert rows["Lovely. Anything else?"].context == "A sunrise over the lake."
    assert rows["What did you paint last weekend?"].context is None  # first message of the session
    answer = rows["A sunrise over the lake."].id
    by_content = [m for m, _ in keyword_service.store.keyword_search(SCOPE, "paint", 10)]
    in_context = [m for m, _ in keyword_service.store.keyword_search(SCOPE, "paint", 10, with_context=True)]
    assert answer not in by_content and answer in in_context
    assert answer in {h.memory.id for h in keyword_service.search(SCOPE, "what did they paint")}


def test_context_never_crosses_sessions_or_scopes(keyword_service):
    keyword_service.retain_turn(SCOPE, "s1", "What is the wifi password?", "It is on the router.")
    keyword_service.retain_turn(SCOPE, "s2", "Good morning", "Morning!")
    keyword_service.retain_turn("test:other", "s1", "Hello there", "Hi")
    rows = {m.content: m for m in keyword_service.store.recent(SCOPE, 10)}
    assert rows["Good morning"].context is None
    other = keyword_service.store.recent("test:other", 10)
    assert {m.content: m.context for m in other} == {"Hello there": None, "Hi": "Hello there"}


def test_a_database_from_the_first_release_upgrades_in_place(tmp_path):
    from sqlalchemy import create_engine, text

    from hermes_cmms.keyword import SqliteKeywordIndex

    engine = create_engine(_url(tmp_path))
    with engine.begin() as conn:  # the schema as 0.1.0's first migrations left it, with a row
        _migrations.apply(conn, _migrations.CORE_MIGRATIONS[:1] + SqliteKeywordIndex.migrations[:1])
        conn.execute(text("INSERT INTO memories (id, scope, content, content_hash, created_at, updated_at) "
                          "VALUES ('old1', :s, 'The attic key hangs by the door', 'h', 1, 1)"), {"s": SCOPE})
        conn.execute(text("INSERT INTO memories (id, scope, content, content_hash, created_at, updated_at) "
                          "VALUES ('old2', :s, 'Mary Ann: the attic is full', 'h', 1, 1)"), {"s": SCOPE})
    engine.dispose()
    store = Store(_url(tmp_path))
    try:
        assert [m for m, _ in store.keyword_search(SCOPE, "attic key", 5)][0] == "old1"
        old = store.get(["old1", "old2"], SCOPE)
        assert old["old1"].context is None and old["old1"].expires_at is None
        assert (old["old1"].speaker, old["old2"].speaker) == (None, "mary ann")  # backfilled
        assert store.speakers(SCOPE, ["mary ann", "attic"]) == {"mary ann"}
    finally:
        store.close()


def test_a_speakers_name_is_left_to_the_speaker_boost(keyword_service):
    for line in ["Alice: Hi Bob!", "Alice: Bye now.", "Bob: I took up pottery with Alice.",
                 "Paris is lovely in spring."]:
        keyword_service.remember(SCOPE, line)
    store = keyword_service.store
    assert store.speakers(SCOPE, {"alice", "bob", "paris", "carol"}) == {"alice", "bob"}
    assert store.speakers("test:other", {"alice"}) == set()
    top = keyword_service.search(SCOPE, "What hobby did Alice pick up? pottery")[0].memory.content
    assert top == "Bob: I took up pottery with Alice."  # not Alice's short small talk
