"""The scale-out backend's own behaviour: PostgreSQL keyword search and migrations, the Chroma
server client (database per URL, reindex after loss, one writer), and clear errors when a
server is away. Server-only tests need CMMS_TEST_BACKEND=server (the second CI pass)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SERVER, server_databases, server_only
from db import sql
from servers import free_port
from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.errors import StoreUnavailable
from hermes_cmms.store.store import NewMemory, Store
from hermes_cmms.vectors.chroma import OWNER, VectorIndex, _server_address, admin_client

CLI = str(Path(sys.executable).with_name("hermes-cmms"))


# -- both backends ---------------------------------------------------------------------------


def test_an_unreachable_database_is_one_clear_error_without_the_password(home):
    url = f"postgresql+psycopg://cmms:s3cret-pw@127.0.0.1:{free_port()}/memories"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        Store(url)
    message = str(caught.value)
    assert message.startswith("Cannot open the memory store at postgresql+psycopg://cmms:***@127.0.0.1")
    assert "s3cret-pw" not in message and "\n" not in message.strip()
    assert time.monotonic() - started < 30  # waited for the server a little, then said so


@pytest.mark.store
def test_a_chroma_server_that_is_away_degrades_to_keyword_recall(home):
    settings = Settings.load(home, chroma_url=f"http://127.0.0.1:{free_port()}")
    with MemoryService(settings, scheduler=False) as svc:
        memory_id = svc.remember("test:away", "The spare key hangs behind the boiler")
        hits = svc.search("test:away", "where is the spare key")
        assert [hit.id for hit in hits][:1] == [memory_id]
        assert svc.upkeep.wait_vectors(120)
        status = svc.status()
        assert status["index_error"] and status["indexed"] in (None, 0)
        assert svc.store.counts()["outbox"] >= 1  # the write waits in SQL for the server
        started = time.monotonic()
        assert "spare key" in svc.recall("test:away", "spare key")
        assert time.monotonic() - started < 5  # no long wait on a dead server


@pytest.mark.parametrize("query", ["config.yaml", "config yaml", "api.example.com", "example", "ops@acme.io",
                                   "acme", "/etc/hermes/env", "hermes env", "Python 3.11"])
@pytest.mark.quick
def test_file_names_hosts_addresses_and_paths_are_found_by_their_words(keyword_service, query):
    wanted = keyword_service.remember("test:words", "Deploy uses config.yaml on api.example.com with "
                                                    "Python 3.11, mail ops@acme.io, see /etc/hermes/env")
    keyword_service.remember("test:words", "Nothing else to see in this note")
    assert [memory_id for memory_id, _ in keyword_service.store.keyword_search("test:words", query, 5)][:1] == [wanted]


# -- PostgreSQL + Chroma server ----------------------------------------------------------------


@server_only
def test_postgres_keyword_index_is_tsvector_with_gin_and_ranks_the_rare_word_first(home):
    store = Store(os.environ["CMMS_DATABASE_URL"])
    try:
        ids = store.add([NewMemory(scope="test:kw", content=f"Project status update number {n}") for n in range(40)]
                        + [NewMemory(scope="test:kw", content="The zebra project needs a new enclosure"),
                           NewMemory(scope="test:other", content="The zebra escaped from the zoo")])
        found = store.keyword_search("test:kw", "zebra project", 5)
        assert found[0][0] == ids[40] and len(found) == 5  # rare word first, then common-word rows
        assert all(memory_id in ids[:41] for memory_id, _ in found)  # never the other scope's
        assert store.keyword_search("test:kw", "running zebras", 5)[0][0] == ids[40]  # stemmed
        indexes = {name for (name,) in sql(home, "SELECT indexdef FROM pg_indexes WHERE tablename = 'memories'")}
        assert any("USING gin (fts_content)" in d for d in indexes) and any("USING gin (fts_all)" in d for d in indexes)
    finally:
        store.close()


@server_only
def test_processes_opening_a_new_database_together_migrate_it_once():
    code = ("import sys; from hermes_cmms.store.store import Store; s = Store(sys.argv[1]); "
            "print(sorted(s.counts())); s.close()")
    with server_databases() as (url, _):
        procs = [subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        results = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, [err[-500:] for _, err in results]
        names = [name for (name,) in sql(url, "SELECT name FROM schema_migrations")]
        assert len(names) == len(set(names)) and "0001_pg_fts_memories" in names and "0008_knowledge" in names


@server_only
def test_the_chroma_url_path_names_a_database_of_its_own(home):
    base = os.environ["CMMS_TEST_CHROMA_URL"].rstrip("/")
    with server_databases() as (_, other):
        a = VectorIndex(Settings.load(home))  # the test's own database (conftest)
        b = VectorIndex(Settings.load(home, chroma_url=other))
        a.upsert("test:same", ["a1"], [[1.0, 0.0, 0.0]], [{"kind": "note"}])
        b.upsert("test:same", ["b1"], [[1.0, 0.0, 0.0]], [{"kind": "note"}])
        assert [i for i, _ in a.query("test:same", [1.0, 0.0, 0.0], 5)] == ["a1"]
        assert [i for i, _ in b.query("test:same", [1.0, 0.0, 0.0], 5)] == ["b1"]
        assert other.startswith(base + "/") and a.location != b.location


@server_only
def test_a_chroma_database_holds_one_stores_vectors_and_another_store_is_refused_clearly(home, tmp_path):
    """Two stores pointed at one Chroma database (say two Hermes profiles given the same
    CMMS_CHROMA_URL) would each take the other's vectors for strays, or for its own when a
    scope of the same name is forgotten. The second is refused: its recall is keyword-only, its
    vector waits in the outbox, doctor says why; given a database of its own, the vector lands."""
    shared = os.environ["CMMS_CHROMA_URL"]
    with MemoryService(Settings.load(home), scheduler=False) as first:
        boat = first.remember("local:default", "The boat is moored at pier 7")
        assert first.upkeep.drain(180)
    other = tmp_path / "other_home"
    other.mkdir()
    database = {"database_url": f"sqlite:///{other / 'cmms.db'}"}
    with MemoryService(Settings.load(other, chroma_url=shared, **database), scheduler=False) as second:
        tea = second.remember("local:default", "Ana drinks green tea every morning")  # the same scope's name
        assert not second.upkeep.drain(5) and second.store.counts()["outbox"] == 1  # waits, not lost
        assert [h.id for h in second.search("local:default", "green tea every morning")][:1] == [tea]
    env = dict(os.environ, CMMS_CHROMA_URL=shared, CMMS_DATABASE_URL=database["database_url"], HF_HUB_OFFLINE="1")
    done = subprocess.run([CLI, "doctor", "--hermes-home", str(other)], capture_output=True, text=True, env=env,
                          timeout=120)
    said = [line for line in done.stdout.splitlines() if line.startswith("FAIL vectors:")]
    assert said and "holds the vectors of another hermes-cmms store" in said[0], done.stdout
    assert "a database of its own" in said[0] and done.returncode == 1
    with MemoryService(Settings.load(home), scheduler=False) as first:  # the first store's, untouched
        assert first.upkeep.wait_vectors(120) and first.indexer.vectors.count() == 1
        assert first.indexer.vectors.present("local:default", [boat, tea]) == {boat}
    with server_databases() as (_, own):  # the fix the message gives first: a database of its own
        with MemoryService(Settings.load(other, chroma_url=own, **database), scheduler=False) as second:
            assert second.upkeep.drain(180) and second.indexer.vectors.present("local:default", [tea]) == {tea}
    # the other fix: this store replaces the first one (say, restored by import), and takes its database
    claimed = subprocess.run([CLI, "reindex", "--claim", "--quiet", "--hermes-home", str(other)], env=env,
                             capture_output=True, text=True, timeout=300)
    assert claimed.returncode == 0, claimed.stderr
    with MemoryService(Settings.load(other, chroma_url=shared, **database), scheduler=False) as second:
        assert second.upkeep.wait_vectors(120)
        assert second.indexer.vectors.present("local:default", [boat, tea]) == {tea}  # the first's: a stray
    with MemoryService(Settings.load(home), scheduler=False) as first:  # now the first store is refused
        first.remember("local:default", "The boat's spare key hangs by the door")
        assert not first.upkeep.drain(5) and first.store.counts()["outbox"] == 1


@server_only
def test_a_wiped_chroma_database_is_claimed_again_by_the_store_writing_to_it(home):
    """The server lost its data (restarted without a volume) while a process of the store runs:
    its next write makes the database and its own claim again, so no other store can take it."""
    settings = Settings.load(home)
    with MemoryService(settings, scheduler=False) as svc:
        svc.remember("local:default", "The boat is moored at pier 7")
        assert svc.upkeep.drain(180)
        name = settings.chroma_url.rsplit("/", 1)[1]
        admin_client(os.environ["CMMS_TEST_CHROMA_URL"]).delete_database(name)
        tea = svc.remember("local:default", "Ana drinks green tea every morning")
        assert svc.upkeep.drain(180) and svc.indexer.vectors.present("local:default", [tea]) == {tea}
        import chromadb

        raw = chromadb.HttpClient(**_server_address(settings.chroma_url), database=name)
        assert raw.get_collection(OWNER).metadata["store"] == svc.store.identity()


@server_only
def test_doctor_reads_the_chroma_server_and_makes_nothing_there(home):
    """doctor on a store whose Chroma database does not exist yet: an ok line that says so, and
    still no database afterwards (a typo in the URL is not made into a database by a check)."""
    MemoryService(Settings.load(home, embedder="none"), scheduler=False).close()
    env = dict(os.environ, HERMES_HOME=str(home), HF_HUB_OFFLINE="1")
    done = subprocess.run([CLI, "doctor"], capture_output=True, text=True, env=env, timeout=120)
    said = [line for line in done.stdout.splitlines() if line.startswith("ok   vectors:")]
    assert said and "its database is made at the first write" in said[0], done.stdout
    with pytest.raises(Exception, match="(?i)not found|does not exist"):
        admin_client(os.environ["CMMS_TEST_CHROMA_URL"]).get_database(os.environ["CMMS_CHROMA_URL"].rsplit("/", 1)[1])


@server_only
def test_reindex_rebuilds_a_lost_chroma_database_from_sql(home):
    notes = ["The boat is moored at pier 7", "Lena's violin lesson is on Thursdays",
             "The attic smoke alarm needs a new battery"]
    with MemoryService(Settings.load(home), scheduler=False) as svc:
        ids = [svc.remember("test:rebuild", note) for note in notes]
        assert svc.upkeep.drain(180) and svc.indexer.vectors.count() == 3
    admin_client(os.environ["CMMS_TEST_CHROMA_URL"]).delete_database(os.environ["CMMS_CHROMA_URL"].rsplit("/", 1)[1])  # the server lost it all
    env = dict(os.environ, HERMES_HOME=str(home), HF_HUB_OFFLINE="1")
    done = subprocess.run([CLI, "reindex"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    with MemoryService(Settings.load(home), scheduler=False) as svc:
        assert svc.upkeep.wait_vectors(120) and svc.indexer.vectors.count() == 3
        assert svc.upkeep.audit("vector_drift")["counts"]["vector_drift"] == 0
        found = svc.semantic_search("test:rebuild", "music practice for the child", top_k=1)
        assert [item.id for item in found] == [ids[1]]


@server_only
def test_every_process_sharing_the_servers_writes_vectors(home):
    settings = Settings.load(home)
    first, second = MemoryService(settings, scheduler=False), MemoryService(settings, scheduler=False)
    try:
        a = first.remember("test:shared", "The red kayak is stored in the barn")
        b = second.remember("test:other", "The green tent has a broken pole")
        assert first.upkeep.drain(180) and second.upkeep.drain(180)
        assert first.indexer.writer and second.indexer.writer  # each writes the scopes it claims
        assert sql(home, "SELECT owner FROM jobs WHERE name = 'indexer'") in ([], [("",)])  # no lease
        assert first.indexer.vectors.present("test:shared", [a]) == {a}
        assert second.indexer.vectors.present("test:other", [b]) == {b}
    finally:
        first.close()
        second.close()


@pytest.mark.store
def test_status_and_doctor_never_show_the_database_password(home, monkeypatch):
    import json

    from sqlalchemy.engine import make_url

    from hermes_cmms.ops import doctor
    from hermes_cmms.provider import CmmsMemoryProvider

    base = os.environ.get("CMMS_DATABASE_URL") or f"postgresql+psycopg://cmms@127.0.0.1:{free_port()}/x"
    url = make_url(base).set(password="hunter2-secret").render_as_string(hide_password=False)
    monkeypatch.setenv("CMMS_DATABASE_URL", url)  # PostgreSQL's trust auth ignores the password
    shown = CmmsMemoryProvider().get_status_config({})
    assert "hunter2-secret" not in json.dumps(shown) and ":***@" in shown["database_url"]
    (status, _, detail), *_ = doctor._database(Settings.load(home))
    assert "hunter2-secret" not in detail and status == ("ok" if SERVER else "FAIL"), detail


@pytest.mark.store
def test_the_vector_writer_lease_survives_a_long_batch_unless_another_process_took_it(home):
    from hermes_cmms.vectors.indexer import LeaseLock

    store = Store(Settings.load(home).database_url)
    try:
        mine, theirs = LeaseLock(store), LeaseLock(store)
        mine.LEASE_S = theirs.LEASE_S = 0.5
        assert mine.acquire() and mine.held and not theirs.acquire()
        time.sleep(0.6)  # a batch longer than the lease, nobody else waiting
        mine.check()  # renewed, not failed
        assert mine.held
        time.sleep(0.6)
        assert theirs.acquire()  # it ran out and another process took it
        with pytest.raises(RuntimeError, match="another process took the indexer lease"):
            mine.check()
        assert not mine.held and theirs.held
        assert sql(home, "SELECT owner FROM jobs WHERE name = 'indexer'") == [(theirs.owner,)]
    finally:
        store.close()
