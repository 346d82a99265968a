"""Copies of one store share its id (store_identity): a Chroma server's database names the store it
holds and where that store lives (Store.location), so a copy elsewhere (a copied SQLite file, a
PostgreSQL database cloned) is refused there as clearly as another store, while the store itself,
and a backup put back in place, keep working without a claim. The copies are made the way a user
makes them: `cp` of the SQLite file, `CREATE DATABASE … TEMPLATE` of the PostgreSQL one."""
from __future__ import annotations

import os
import shutil
import uuid

import pytest

from conftest import embedded_only, server_only
from inprocess import cli

SCOPE = "local:default"


def _files(home):
    return [p for p in (home / "cmms").glob("cmms.db*")]


def _sqlite(home) -> dict:
    return {"database_url": f"sqlite:///{home / 'cmms' / 'cmms.db'}"}


def _service(home, **settings):
    from hermes_cmms import MemoryService, Settings

    return MemoryService(Settings.load(home, **settings), scheduler=False)


def _refused(service, text: str) -> str:
    """Store `text` in a copy refused by the Chroma database: the write waits, keywords find it."""
    memory = service.remember(SCOPE, text)
    assert not service.upkeep.drain(5) and service.store.counts()["outbox"] == 1  # waits, not lost
    assert [h.id for h in service.search(SCOPE, text)][:1] == [memory]  # keyword-only
    return memory


def _written(service, text: str) -> str:
    memory = service.remember(SCOPE, text)
    assert service.upkeep.drain(180) and service.indexer.vectors.present(SCOPE, [memory]) == {memory}
    return memory


def _doctor_says(home, env: dict) -> str:
    done = cli(home, "doctor", env=env)
    said = [line for line in done.stdout.splitlines() if line.startswith("FAIL vectors:")]
    return said[0] if said else done.stdout


@pytest.mark.quick
@embedded_only  # (a copied SQLite file)
def test_a_store_says_where_it_lives_and_a_copied_file_lives_elsewhere(tmp_path):
    from hermes_cmms.store.store import Store

    (tmp_path / "a").mkdir()
    store = Store(f"sqlite:///{tmp_path / 'a' / 'cmms.db'}")
    here = store.location()
    store.close()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    copy = Store(f"sqlite:///{tmp_path / 'b' / 'cmms.db'}")
    again = Store(f"sqlite:///{tmp_path / 'a' / '.' / 'cmms.db'}")  # the same file, named another way
    try:
        assert copy.identity() == again.identity()  # a copy shares the id ...
        assert copy.location() != here == again.location()  # ... not where it lives
    finally:
        copy.close()
        again.close()


@pytest.mark.quick
@embedded_only  # (a SQLite file)
def test_the_same_file_reached_by_another_path_is_the_same_store_and_a_copy_is_not(tmp_path):
    from hermes_cmms.store.store import Store
    from hermes_cmms.vectors.chroma import same_location

    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    store = Store(f"sqlite:///{tmp_path / 'a' / 'cmms.db'}")
    here = store.location()
    store.close()
    os.link(tmp_path / "a" / "cmms.db", tmp_path / "b" / "cmms.db")  # one file, a second path (as a bind mount)
    shutil.copy2(tmp_path / "a" / "cmms.db", tmp_path / "c" / "cmms.db")
    linked, copy = (Store(f"sqlite:///{tmp_path / name / 'cmms.db'}") for name in ("b", "c"))
    try:
        there = linked.location()
        assert str(tmp_path / "b") in there and there != here  # named by the path it was opened by ...
        assert same_location(here, there) and same_location(there, here)  # ... the same file all the same
        assert not same_location(here, copy.location())
    finally:
        linked.close()
        copy.close()


@server_only
def test_the_same_sqlite_file_by_another_path_is_not_refused_as_a_copy(home, tmp_path):
    shared = os.environ["CMMS_CHROMA_URL"]
    (home / "cmms").mkdir()
    with _service(home, **_sqlite(home)) as original:
        boat = _written(original, "The boat is moored at pier 7")
    other = tmp_path / "mounted_home"  # the same file by another path (a bind mount, a Docker volume)
    (other / "cmms").mkdir(parents=True)
    os.link(home / "cmms" / "cmms.db", other / "cmms" / "cmms.db")  # (closed: no -wal to share)
    with _service(other, chroma_url=shared, **_sqlite(other)) as mounted:
        tea = _written(mounted, "Ana drinks green tea every morning")
        assert mounted.indexer.vectors.present(SCOPE, [boat, tea]) == {boat, tea}
    env = {"CMMS_CHROMA_URL": shared, "CMMS_DATABASE_URL": _sqlite(other)["database_url"], "HF_HUB_OFFLINE": "1"}
    assert "FAIL vectors" not in _doctor_says(other, env)


@server_only
def test_a_copied_sqlite_file_is_refused_on_the_chroma_database_of_the_store_it_copies(home, tmp_path):
    shared = os.environ["CMMS_CHROMA_URL"]
    (home / "cmms").mkdir()
    with _service(home, **_sqlite(home)) as original:
        boat = _written(original, "The boat is moored at pier 7")
    other = tmp_path / "copy_home"
    (other / "cmms").mkdir(parents=True)
    for path in _files(home):
        shutil.copy2(path, other / "cmms" / path.name)  # `cp`: a copy of the store, its id and all
    with _service(other, chroma_url=shared, **_sqlite(other)) as copy:
        assert copy.store.identity() == _identity(_sqlite(home)["database_url"])
        tea = _refused(copy, "Ana drinks green tea every morning")
    env = {"CMMS_CHROMA_URL": shared, "CMMS_DATABASE_URL": _sqlite(other)["database_url"], "HF_HUB_OFFLINE": "1"}
    said = _doctor_says(other, env)
    assert said.startswith("FAIL vectors: The Chroma database at") and "this is a copy of it at sqlite:" in said
    assert "`hermes-cmms reindex --claim`" in said and "a database of its own" in said
    with _service(home, **_sqlite(home)) as original:  # the store it copies goes on as before
        _written(original, "The boat's spare key hangs by the door")
        assert original.indexer.vectors.present(SCOPE, [boat, tea]) == {boat}
    # it replaces the store that lived there (restored or moved): the claim the message names
    done = cli(other, "reindex", "--claim", "--quiet", env=env)
    assert done.returncode == 0, done.stderr
    with _service(other, chroma_url=shared, **_sqlite(other)) as copy:
        assert copy.upkeep.wait_vectors(120) and copy.indexer.vectors.present(SCOPE, [tea]) == {tea}
    with _service(home, **_sqlite(home)) as original:  # now the other one is refused
        _refused(original, "The boathouse is painted green")


@server_only
def test_a_backup_put_back_in_place_keeps_working_without_a_claim(home, tmp_path):
    (home / "cmms").mkdir()
    backup = tmp_path / "backup"
    backup.mkdir()
    with _service(home, **_sqlite(home)) as store:
        boat = _written(store, "The boat is moored at pier 7")
    for path in _files(home):
        shutil.copy2(path, backup / path.name)
    with _service(home, **_sqlite(home)) as store:
        _written(store, "A note the restore takes back")
    for path in _files(backup):  # restored over the file in place (`cp backup/cmms.db cmms/`)
        shutil.copyfile(path, home / "cmms" / path.name)
    with _service(home, **_sqlite(home)) as store:
        _written(store, "Written after the restore")
        assert store.indexer.vectors.present(SCOPE, [boat]) == {boat}


@server_only
def test_a_cloned_postgresql_database_is_refused_on_the_chroma_database_of_the_store_it_clones(home):
    from sqlalchemy.engine import make_url

    from servers import _admin_sql

    with _service(home) as original:
        boat = _written(original, "The boat is moored at pier 7")
    url = make_url(os.environ["CMMS_DATABASE_URL"])
    clone = f"c_{uuid.uuid4().hex[:16]}"  # staging, cloned from production
    admin = make_url(os.environ["CMMS_TEST_PG_URL"])
    _admin_sql(admin, f"CREATE DATABASE {clone} TEMPLATE {url.database}")
    try:
        clone_url = url.set(database=clone).render_as_string(hide_password=False)
        with _service(home, database_url=clone_url) as copy:
            assert copy.store.identity() == _identity(os.environ["CMMS_DATABASE_URL"])
            assert copy.store.location() != _location(os.environ["CMMS_DATABASE_URL"])
            tea = _refused(copy, "Ana drinks green tea every morning")
        with _service(home) as original:
            _written(original, "The boat's spare key hangs by the door")
            assert original.indexer.vectors.present(SCOPE, [boat, tea]) == {boat}
    finally:
        _admin_sql(admin, f"DROP DATABASE IF EXISTS {clone} WITH (FORCE)")


def _identity(url: str) -> str:
    return _asked(url, "identity")


def _location(url: str) -> str:
    return _asked(url, "location")


def _asked(url: str, what: str) -> str:
    """What a store at `url` answers to `what` (identity, location), the store closed after."""
    from hermes_cmms.store.store import Store

    store = Store(url)
    try:
        return getattr(store, what)()
    finally:
        store.close()


@server_only
def test_a_postgresql_store_lives_in_the_same_place_however_a_role_without_the_identifier_connects(home):
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from hermes_cmms.store import _postgres
    from hermes_cmms.vectors.chroma import same_location
    from servers import _admin_sql

    url = make_url(os.environ["CMMS_DATABASE_URL"])
    admin = make_url(os.environ["CMMS_TEST_PG_URL"])
    role, clone = f"r_{uuid.uuid4().hex[:12]}", f"c_{uuid.uuid4().hex[:16]}"
    owner = create_engine(url.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT")
    with owner.connect() as conn:  # a role that may not read the server's system identifier
        conn.execute(text("REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC"))
        sockets = conn.execute(text("SHOW unix_socket_directories")).scalar().split(",")[0].strip()
    owner.dispose()
    _admin_sql(admin, f"CREATE ROLE {role} LOGIN")
    _admin_sql(admin, f"CREATE DATABASE {clone} TEMPLATE {url.database}")

    def location(database: str, **where) -> tuple[str, object]:
        """The store's location as `role` sees it, and the server address it connected to."""
        engine = create_engine(url.set(username=role, password=None, database=database, **where))
        try:
            with engine.connect() as conn:
                return _postgres.location(conn), conn.execute(text("SELECT inet_server_addr()")).scalar()
        finally:
            engine.dispose()

    try:
        by_tcp, address = location(url.database)
        assert str(address) == "127.0.0.1" and by_tcp.startswith("postgresql:oid "), (address, by_tcp)
        assert by_tcp.endswith(f"/{url.database}"), by_tcp
        by_socket = location(url.database, host=None, port=None, query={"host": sockets, "port": str(url.port)})
        assert by_socket == (by_tcp, None)  # (a Unix socket: no server address)
        assert location(clone)[0] != by_tcp  # a clone on the same server: another database, another oid
        for claimed in (f"postgresql:127.0.0.1:{url.port}/{url.database}", f"postgresql::/{url.database}"):
            assert same_location(claimed, by_tcp)  # claimed by the address, before: the same database
        assert not same_location(f"postgresql:127.0.0.1:{url.port}/{clone}", by_tcp)
    finally:
        _admin_sql(admin, f"DROP DATABASE IF EXISTS {clone} WITH (FORCE)")
        _admin_sql(admin, f"DROP ROLE IF EXISTS {role}")
