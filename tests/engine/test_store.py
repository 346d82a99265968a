"""The SQL store: migrations, schema, WAL, and the keyword index (FTS5 on SQLite, tsvector
columns on PostgreSQL) kept in sync with the rows."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import insert, inspect, text

from hermes_cmms.recall import _rows as recall_rows
from hermes_cmms.store import _migrations
from hermes_cmms.store.keyword import PostgresKeywordIndex, SqliteKeywordIndex
from hermes_cmms.store.models import (AuditEvent, Belief, ConversationSession, Entity, Evidence, Fact, Forgetting, IndexState,
                                Job, Link, Memory, Outbox, Relation,
                                SchemaMigration, StoreIdentity)
from hermes_cmms.store.recall_events import RecallEvent, RecalledMemory
from hermes_cmms.store.store import NewMemory, Store

from conftest import SERVER, embedded_only, server_databases
from db import keyword_rows, on_postgres, plan, scalar, sql
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

MODELS = (Memory, ConversationSession, Outbox, SchemaMigration, Fact, IndexState, AuditEvent, Job,
          Link, Belief, Evidence, Entity, Relation, Forgetting, RecallEvent, RecalledMemory, StoreIdentity)
CORE_MIGRATIONS = ["0001_initial", "0002_memory_context", "0003_memory_expires_at", "0004_facts",
                   "0005_index_state", "0006_memory_speaker", "0007_lifecycle", "0008_knowledge",
                   "0009_forgetting", "0010_belief_sources", "0011_browse_indexes", "0012_recall_events",
                   "0013_memory_pinned", "0014_browse_tally", "0015_store_identity", "0016_recall_kind"]
EXPECTED_MIGRATIONS = CORE_MIGRATIONS + ["0001_fts5_memories", "0002_fts5_context", "0003_fts5_scope"]
PG_EXPECTED_MIGRATIONS = CORE_MIGRATIONS + ["0001_pg_fts_memories", "0002_pg_outbox_statistics"]
PG_FTS_COLUMNS = {"fts_content", "fts_all"}  # memories' generated tsvector columns on PostgreSQL
SCOPE = "test:store"

pytestmark = pytest.mark.store


@pytest.fixture
def url(tmp_path, request) -> str:
    """The URL of a new store on the backend under test: a SQLite file, or a fresh PostgreSQL
    database on the server backend. Migrated from the template, or empty for a `migrates` test."""
    if not SERVER:
        yield f"sqlite:///{tmp_path / 'cmms.db'}"
        return
    with server_databases(migrated=request.node.get_closest_marker("migrates") is None) as (database_url, _):
        yield database_url


def _sql(url, query, *params):
    return sql(url, query, *params)


def _fts_rows(service, seq: int) -> list:
    """What the keyword index holds for row `seq`: FTS5's content on SQLite; the generated
    (fts_content, fts_all) tsvectors on PostgreSQL."""
    if on_postgres(service):
        return sql(service, "SELECT CAST(fts_content AS text), CAST(fts_all AS text) FROM memories WHERE seq = ?",
                   seq)
    with service.store.read() as conn:
        return conn.execute(text("SELECT content FROM memories_fts WHERE rowid = :s"), {"s": seq}).all()


def _indexed_as(service, content: str) -> list:
    """What _fts_rows returns for a row holding `content` (and no context)."""
    if on_postgres(service):
        tsvector = scalar(service, "SELECT CAST(to_tsvector('english', regexp_replace(?, '[[:punct:]]+', ' ', 'g')) "
                                   "AS text)", content)
        return [(tsvector, tsvector)]
    return [(content,)]


def _seq(service, memory_id: str) -> int:
    with service.store.read() as conn:
        return conn.execute(text("SELECT seq FROM memories WHERE id = :i"), {"i": memory_id}).scalar_one()


# -- schema and migrations ------------------------------------------------------------------


@pytest.mark.quick
@pytest.mark.migrates
def test_blank_database_migrates_to_the_models_schema(url):
    store = Store(url)
    postgres = on_postgres(url)
    try:
        inspector = inspect(store.engine)
        for model in MODELS:
            table = model.__table__
            columns = {c["name"]: c for c in inspector.get_columns(table.name)}
            keyword = PG_FTS_COLUMNS if postgres and table.name == "memories" else set()
            assert set(columns) == set(table.columns.keys()) | keyword, table.name
            for column in table.columns:
                if column.primary_key:  # SQLite reports an INTEGER PRIMARY KEY (rowid) as nullable
                    continue
                assert columns[column.name]["nullable"] == column.nullable, (table.name, column.name)
            primary = inspector.get_pk_constraint(table.name)["constrained_columns"]
            assert sorted(primary) == sorted(c.name for c in table.primary_key), table.name
        tables = set(inspector.get_table_names())
        ours = {m.__table__.name for m in MODELS} | (set() if postgres else {"memories_fts"})
        extra = {t for t in tables - ours
                 if postgres or (not t.startswith("memories_fts_") and t != "sqlite_sequence")}
        assert extra == set()
        if postgres:  # the keyword index: generated tsvector columns, each with a GIN index
            for column in PG_FTS_COLUMNS:
                assert _sql(url, "SELECT data_type, is_generated FROM information_schema.columns "
                                 "WHERE table_name = 'memories' AND column_name = ?", column) == [
                    ("tsvector", "ALWAYS")], column
            gin = {name: definition for name, definition in _sql(
                url, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'")}
            assert "USING gin (fts_content)" in gin["ix_memories_fts_content"]
            assert "USING gin (fts_all)" in gin["ix_memories_fts_all"]
    finally:
        store.close()


@pytest.mark.migrates
def test_migrations_are_recorded_by_name_and_reopening_applies_nothing(url):
    Store(url).close()
    # in the order applied: SQLite's rowid; PostgreSQL has none, so the time each was recorded
    order = "applied_at" if on_postgres(url) else "rowid"
    first = _sql(url, f"SELECT name, applied_at FROM schema_migrations ORDER BY {order}")
    assert [name for name, _ in first] == (PG_EXPECTED_MIGRATIONS if on_postgres(url) else EXPECTED_MIGRATIONS)

    store = Store(url)
    try:
        assert _sql(url, f"SELECT name, applied_at FROM schema_migrations ORDER BY {order}") == first
        with store.write() as conn:
            assert _migrations.apply(conn, _migrations.CORE_MIGRATIONS + store.keyword.migrations) == []
    finally:
        store.close()


def test_reopening_keeps_rows_and_their_keyword_index(url):
    store = Store(url)
    [memory_id] = store.add([NewMemory(scope=SCOPE, content="The lighthouse keeper likes marmalade")])
    store.close()

    store = Store(url)
    try:
        assert [m for m, _ in store.keyword_search(SCOPE, "marmalade", 5)] == [memory_id]
        [indexed] = keyword_rows(url)  # one row in the index: FTS5's, or the row's tsvectors
        assert "marmalad" in indexed[0]
    finally:
        store.close()


@embedded_only
def test_database_runs_in_wal_mode(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'cmms.db'}")
    try:
        with store.read() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
    finally:
        store.close()
    # WAL is a property of the file: a plain connection sees it too.
    assert _sql(f"sqlite:///{tmp_path / 'cmms.db'}", "PRAGMA journal_mode") == [("wal",)]


def test_a_reader_is_not_blocked_by_an_open_write(url):
    """What WAL mode is for on SQLite, and what PostgreSQL's MVCC gives: while a write is open,
    another connection reads the last committed state at once."""
    store = Store(url)
    try:
        store.add([NewMemory(scope=SCOPE, content="committed before")])
        seen = []
        with store.write() as conn:
            conn.execute(text("UPDATE memories SET content = 'not yet committed'"))
            reader = threading.Thread(target=lambda: seen.append([m.content for m in store.recent(SCOPE, 5)]))
            reader.start()
            reader.join(5)
            assert not reader.is_alive() and seen == [["committed before"]]
        assert [m.content for m in store.recent(SCOPE, 5)] == ["not yet committed"]
    finally:
        store.close()



@pytest.mark.quick
def test_a_store_at_the_current_version_opens_while_another_writer_holds_the_lock(url):
    """Opening checks the migrations with a read: a command (`status`, `search`) opening the
    store while Hermes or an import writes does not wait for the writer to finish."""
    store = Store(url)
    try:
        opened = []
        with store.write() as conn:
            conn.execute(text("UPDATE memories SET content = content"))
            other = threading.Thread(target=lambda: opened.append(Store(url)))
            other.start()
            other.join(5)
            assert not other.is_alive() and len(opened) == 1
        opened[0].close()
    finally:
        store.close()

def test_writing_is_one_transaction_under_the_writer_lock(url):
    """Store.writing(), how features write beside the store: this process's writer lock held
    for the whole transaction, committed on exit, rolled back (and the lock let go) on error."""
    store = Store(url)
    try:
        store.add([NewMemory(scope=SCOPE, content="before")])
        with store.writing() as conn:
            assert store._write_lock.locked()
            conn.execute(text("UPDATE memories SET content = 'inside'"))
        assert not store._write_lock.locked()
        with pytest.raises(RuntimeError, match="boom"), store.writing() as conn:
            conn.execute(text("UPDATE memories SET content = 'rolled back'"))
            raise RuntimeError("boom")
        assert not store._write_lock.locked()
        assert [m.content for m in store.recent(SCOPE, 5)] == ["inside"]
    finally:
        store.close()


def test_turns_are_numbered_per_session(url):
    store = Store(url)
    try:
        for i in range(3):
            store.add([NewMemory(scope=SCOPE, content=f"u{i}", role="user", session_id="s1"),
                       NewMemory(scope=SCOPE, content=f"a{i}", role="assistant", session_id="s1")],
                      turn_of=(SCOPE, "s1"))
        store.add([NewMemory(scope=SCOPE, content="other", session_id="s2")], turn_of=(SCOPE, "s2"))
        rows = _sql(url, "SELECT session_id, turn, count(*) FROM memories GROUP BY 1, 2 ORDER BY 1, 2")
        assert rows == [("s1", 1, 2), ("s1", 2, 2), ("s1", 3, 2), ("s2", 1, 1)]
        assert store.counts()["outbox"] == 7
        started = _sql(url, "SELECT started_at FROM sessions WHERE session_id = 's1'")[0][0]
        assert store.mark_flushed(SCOPE, "s1") and store.unflushed_sessions(SCOPE) == [(SCOPE, "s2")]
        store.add([NewMemory(scope=SCOPE, content="u3", role="user", session_id="s1")], turn_of=(SCOPE, "s1"))
        # a new turn reopens a flushed session; when it started and what was extracted stay as they were
        assert _sql(url, "SELECT last_turn, started_at, flushed_at, extracted_turn FROM sessions "
                         "WHERE session_id = 's1'") == [(4, started, None, 0)]
        assert _sql(url, "SELECT context FROM memories WHERE content = 'u3'") == [("a2",)]
    finally:
        store.close()


@pytest.mark.quick
def test_the_message_before_a_memory_is_read_through_its_session(url):
    """The index writer asks, for each memory it embeds, the message before it in its session:
    found through the (scope, session) index, not by reading every message of the scope (which
    SQLite, without statistics, chose through the (scope, kind) index)."""
    from sqlalchemy import event

    store = Store(url)
    try:
        ids = []
        for i in range(3):
            ids += store.add([NewMemory(scope=SCOPE, content=f"u{i}", role="user", session_id="s1")],
                             turn_of=(SCOPE, "s1"))
        other = store.add([NewMemory(scope=SCOPE, content="elsewhere", session_id="s2")], turn_of=(SCOPE, "s2"))
        memories = store.get(ids + other, SCOPE)
        said = []
        event.listen(store.engine, "before_cursor_execute", lambda c, cur, statement, params, *a: said.append(
            (statement, params)))
        assert store.previous_message_ids(SCOPE, [memories[i] for i in ids[1:] + other]) == {
            ids[1]: ids[0], ids[2]: ids[1]}
        statement, params = said[-1]
        if not SERVER:
            assert "USING INDEX ix_memories_scope_session" in plan(url, statement, *params)
        said.clear()  # and a turn's write finds the session's last message the same way
        store.add([NewMemory(scope=SCOPE, content="u3", role="user", session_id="s1")], turn_of=(SCOPE, "s1"))
        statement, params = next((st, p) for st, p in said if "ON CONFLICT (scope, session_id)" in st)
        assert _sql(url, "SELECT context FROM memories WHERE content = 'u3'") == [("u2",)]
        if not SERVER:
            used = plan(url, statement, *params)
            assert "ix_memories_scope_session" in used and "ix_memories_scope_kind_created" not in used
    finally:
        store.close()


# -- keyword index stays in sync --------------------------------------------------------------


@pytest.mark.quick
def test_keyword_index_follows_insert_update_and_delete(keyword_service):
    svc = keyword_service
    memory_id = svc.remember(SCOPE, "Grandma's recipe uses cardamom and saffron")
    seq = _seq(svc, memory_id)
    assert _fts_rows(svc, seq) == _indexed_as(svc, "Grandma's recipe uses cardamom and saffron")
    assert [h.id for h in svc.search(SCOPE, "cardamom")] == [memory_id]

    with svc.store.write() as conn:  # the update trigger / generated columns: the index follows the row
        conn.execute(text("UPDATE memories SET content = 'Grandma uses nutmeg' WHERE id = :i"),
                     {"i": memory_id})
    assert _fts_rows(svc, seq) == _indexed_as(svc, "Grandma uses nutmeg")
    assert svc.search(SCOPE, "cardamom") == []
    assert [h.id for h in svc.search(SCOPE, "nutmeg")] == [memory_id]

    svc.forget(SCOPE, memory_id)
    assert _fts_rows(svc, seq) == []
    assert svc.search(SCOPE, "nutmeg") == []
    assert svc.store.get([memory_id], SCOPE) == {}


def test_keyword_search_stays_inside_the_scope(keyword_service):
    mine = keyword_service.remember(SCOPE, "The spare key is under the blue flowerpot")
    keyword_service.remember("test:other", "The spare key is under the red flowerpot")
    assert [m for m, _ in keyword_service.store.keyword_search(SCOPE, "flowerpot", 10)] == [mine]


def _common(monkeypatch, n: int) -> None:
    """Words in more than `n` rows of a scope count as common, on either keyword index."""
    monkeypatch.setattr(SqliteKeywordIndex, "COMMON", n)
    monkeypatch.setattr(PostgresKeywordIndex, "COMMON", n)


def test_common_words_only_rank_rows_that_also_hold_a_rarer_word(keyword_service, monkeypatch):
    # The same outcome on both indexes. SQLite: rows with the rare word and a common one, the
    # rare word's rows, then the newest COMMON rows with the common word. PostgreSQL: the rare
    # word's rows and the common word's newest COMMON rows are the candidates, ranked by BM25
    # (the rare word weighs most), so the rows holding 'bruno' come first here too.
    _common(monkeypatch, 5)
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
    _common(monkeypatch, 5)
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
    assert service.upkeep.drain(30)
    hits = {h.memory.id: h for h in ranked(service.engine, SCOPE, "what am I allergic to")}
    assert hits[gone].vector_rank is not None  # found by the vector index before forgetting

    service.forget(SCOPE, gone)
    assert service.upkeep.drain(30)
    assert service.indexer.vectors.present(SCOPE, [gone, keep]) == {keep}
    hits = {h.id: h for h in service.search(SCOPE, "allergy hazelnuts")}
    assert gone not in hits
    hits = {h.memory.id: h for h in ranked(service.engine, SCOPE, "where is my boat moored")}
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
    assert answer in {h.id for h in keyword_service.search(SCOPE, "what did they paint")}
    # both views in one read (as a recall asks) rank as the two searches do, in the same order
    both = keyword_service.store.keyword_views(SCOPE, "paint lake rested", 10)
    assert both == [keyword_service.store.keyword_search(SCOPE, "paint lake rested", 10, with_context=view)
                    for view in (False, True)] and all(both)
    assert keyword_service.store.keyword_views(SCOPE, "the", 10) == [[], []]  # no word to look for
    many = "paint sunrise " + " ".join(f"word{n}" for n in range(40))  # more words than one count statement holds
    assert keyword_service.store.keyword_views(SCOPE, many, 10) == [
        keyword_service.store.keyword_search(SCOPE, many, 10, with_context=view) for view in (False, True)]
    assert {m for m, _ in keyword_service.store.keyword_views(SCOPE, many, 10)[1]} >= {answer}
    with keyword_service.store.writing() as conn:  # a scope being forgotten reads as empty
        conn.execute(insert(Forgetting).values(scope=SCOPE, actor="test", started_at=0.0, updated_at=0.0))
    assert keyword_service.store.keyword_views(SCOPE, "paint lake rested", 10) == [[], []]


def test_context_never_crosses_sessions_or_scopes(keyword_service):
    keyword_service.retain_turn(SCOPE, "s1", "What is the wifi password?", "It is on the router.")
    keyword_service.retain_turn(SCOPE, "s2", "Good morning", "Morning!")
    keyword_service.retain_turn("test:other", "s1", "Hello there", "Hi")
    rows = {m.content: m for m in keyword_service.store.recent(SCOPE, 10)}
    assert rows["Good morning"].context is None
    other = keyword_service.store.recent("test:other", 10)
    assert {m.content: m.context for m in other} == {"Hello there": None, "Hi": "Hello there"}


@pytest.mark.migrates
def test_a_database_from_the_first_release_upgrades_in_place(url):
    from sqlalchemy import create_engine, text

    from hermes_cmms.store.keyword import SqliteKeywordIndex

    # the schema as 0.1.0's first migrations left it, with a row. On PostgreSQL (whose one
    # keyword migration needs the later columns): the first core migration only.
    first = [] if on_postgres(url) else SqliteKeywordIndex.migrations[:1]
    engine = create_engine(url)
    with engine.begin() as conn:
        _migrations.apply(conn, _migrations.CORE_MIGRATIONS[:1] + first)
        conn.execute(text("INSERT INTO memories (id, scope, content, content_hash, created_at, updated_at) "
                          "VALUES ('old1', :s, 'The attic key hangs by the door', 'h', 1, 1)"), {"s": SCOPE})
        conn.execute(text("INSERT INTO memories (id, scope, content, content_hash, created_at, updated_at) "
                          "VALUES ('old2', :s, 'Mary Ann: the attic is full', 'h', 1, 1)"), {"s": SCOPE})
    engine.dispose()
    store = Store(url)
    try:
        assert [m for m, _ in store.keyword_search(SCOPE, "attic key", 5)][0] == "old1"
        old = store.get(["old1", "old2"], SCOPE)
        assert old["old1"].context is None and old["old1"].expires_at is None
        assert (old["old1"].speaker, old["old2"].speaker) == (None, "mary ann")  # backfilled
        assert recall_rows.speakers(store, SCOPE, ["mary ann", "attic"]) == {"mary ann"}
    finally:
        store.close()


def test_a_speakers_name_is_left_to_the_speaker_boost(keyword_service):
    for line in ["Alice: Hi Bob!", "Alice: Bye now.", "Bob: I took up pottery with Alice.",
                 "Paris is lovely in spring."]:
        keyword_service.remember(SCOPE, line)
    store = keyword_service.store
    assert recall_rows.speakers(store, SCOPE, {"alice", "bob", "paris", "carol"}) == {"alice", "bob"}
    assert recall_rows.speakers(store, "test:other", {"alice"}) == set()
    top = keyword_service.search(SCOPE, "What hobby did Alice pick up? pottery")[0].content
    assert top == "Bob: I took up pottery with Alice."  # not Alice's short small talk
