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
    from hermes_cmms.store.store import Store

    store = Store(url)
    try:
        return store.identity()
    finally:
        store.close()


def _location(url: str) -> str:
    from hermes_cmms.store.store import Store

    store = Store(url)
    try:
        return store.location()
    finally:
        store.close()
