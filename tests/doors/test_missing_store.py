"""A typo in --hermes-home or $HERMES_HOME conjures no store: a command that reads says there is
none and creates nothing; one that adds memories starts a store only in a home Hermes has used,
or where --create asks for one. The store named in a home's config.yaml (a PostgreSQL database
on the server pass) is found only through that home."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from hermes_cmms import MemoryService, Settings
from inprocess import cli

pytestmark = pytest.mark.store

FACT = "The spare key hangs behind the boiler."
READING = [("status",), ("search", "spare key"), ("audit-log",), ("audit",), ("export",), ("metrics",),
           ("beliefs", "list"), ("graph", "search", "boiler"), ("route", "where is the key"),
           ("forget", "--scope", "local:default", "--all"), ("consolidate", "--scope", "local:default"),
           ("maintain",), ("reindex",)]
ADDING = [("learn", FACT), ("beliefs", "set", "Keys belong on hooks."), ("import", "-")]


@pytest.fixture
def hermes_home(home, monkeypatch):
    """A Hermes home whose store is named in its config.yaml, as `hermes memory setup` writes it
    (on the server pass: the PostgreSQL and Chroma URLs move there from the environment), with
    one memory in it; and a typo of its name next to it."""
    section = {"embedder": "none"}
    for setting, name in (("database_url", "CMMS_DATABASE_URL"), ("chroma_url", "CMMS_CHROMA_URL")):
        if os.environ.get(name):
            section[setting] = os.environ[name]
            monkeypatch.delenv(name)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "cmms", "cmms": section}}))
    with MemoryService(Settings.load(home), scheduler=False) as service:
        service.remember("local:default", FACT)
    return home


def _typo(home):
    return home.with_name(home.name + "s")


def _no_store(typo) -> str:
    return f"error: No cmms store at {typo / 'cmms' / 'cmms.db'}; check --hermes-home or $HERMES_HOME (nothing was created).\n"


@pytest.mark.parametrize("command", READING, ids=lambda c: "-".join(c[:2]))
def test_a_command_that_reads_a_typod_home_says_there_is_no_store_and_creates_nothing(hermes_home, command):
    typo = _typo(hermes_home)
    for done in (cli(hermes_home, *command, "--hermes-home", str(typo)), cli(typo, *command)):  # flag, $HERMES_HOME
        assert (done.returncode, done.stdout, done.stderr) == (1, "", _no_store(typo))
        assert not typo.exists()


@pytest.mark.quick
def test_the_home_that_names_the_store_still_reads_it(hermes_home):
    found = cli(hermes_home, "search", "spare key", "--json")
    assert found.returncode == 0 and [r["content"] for r in json.loads(found.stdout)["results"]] == [FACT]


def test_doctor_on_a_typod_home_fails_and_creates_nothing(hermes_home):
    typo = _typo(hermes_home)
    done = cli(typo, "doctor")
    assert done.returncode == 1
    assert (f"FAIL database: no cmms store at {typo / 'cmms' / 'cmms.db'}, and {typo} is not a Hermes home; "
            "check --hermes-home or $HERMES_HOME") in done.stdout.splitlines()
    assert not typo.exists()


def test_doctor_in_a_hermes_home_before_its_first_chat_warns_and_creates_nothing(tmp_path, monkeypatch):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "config.yaml").write_text("memory:\n  provider: cmms\n")
    monkeypatch.delenv("CMMS_DATABASE_URL", raising=False)  # the embedded default of that home
    done = cli(fresh, "doctor")
    assert (f"warn database: no cmms store at {fresh / 'cmms' / 'cmms.db'} yet: Hermes makes it at its first "
            "chat with cmms") in done.stdout.splitlines()
    assert sorted(p.name for p in fresh.iterdir()) == ["config.yaml"]


def test_a_command_that_reads_a_hermes_home_before_its_first_chat_says_so(tmp_path, monkeypatch):
    """Right after install-hermes-plugin: the home is right, so no 'check --hermes-home'."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "config.yaml").write_text("memory:\n  provider: cmms\n")
    monkeypatch.delenv("CMMS_DATABASE_URL", raising=False)  # the embedded default of that home
    for command in (("status",), ("search", "spare key")):
        done = cli(fresh, *command)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (f"error: No cmms store at {fresh / 'cmms' / 'cmms.db'} yet: Hermes makes it at its "
                               "first chat with cmms (nothing was created).\n")
    assert sorted(p.name for p in fresh.iterdir()) == ["config.yaml"]


@pytest.mark.parametrize("command", ADDING, ids=lambda c: c[0])
def test_a_command_that_adds_memories_starts_no_store_where_hermes_never_ran(hermes_home, command):
    typo = _typo(hermes_home)
    export = cli(hermes_home, "export").stdout
    done = cli(typo, *command, stdin=export)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"error: No cmms store at {typo / 'cmms' / 'cmms.db'}, and {typo} is not a Hermes home; "
                           "check --hermes-home or $HERMES_HOME, or pass --create to start a new store there.\n")
    assert not typo.exists()
    asked = cli(typo, *command, "--create", stdin=export)  # asked for: a new store there
    assert asked.returncode == 0, asked.stderr
    assert (typo / "cmms" / "cmms.db").is_file()


def test_the_mcp_bridge_starts_no_store_where_hermes_never_ran(hermes_home):
    typo = _typo(hermes_home)
    done = cli(hermes_home, "mcp", "--hermes-home", str(typo))
    assert done.returncode == 1 and "is not a Hermes home" in done.stderr and "--create" in done.stderr
    assert not typo.exists()


def test_a_hermes_home_gets_its_store_at_the_first_memory_added(tmp_path, monkeypatch):
    fresh = tmp_path / "fresh"
    (fresh / "sessions").mkdir(parents=True)  # Hermes ran here (it makes sessions/ at every start)
    monkeypatch.delenv("CMMS_DATABASE_URL", raising=False)
    monkeypatch.delenv("CMMS_CHROMA_URL", raising=False)
    done = cli(fresh, "beliefs", "set", "Keys belong on hooks.", env={"CMMS_EMBEDDER": "none"})
    assert done.returncode == 0, done.stderr
    assert (fresh / "cmms" / "cmms.db").is_file()
