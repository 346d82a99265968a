"""`hermes-cmms import` of Hermes' own stores: state.db (sessions and messages, each user into the
scope the provider gives them), MEMORY.md / USER.md, and the holographic provider's
memory_store.db (trust as confidence), through the command line on a real store. The fixtures
are SQL and text under tests/data/imports/hermes/, built into a Hermes home per test."""
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from imports import imported, run

FIXTURES = Path(__file__).parents[1] / "data" / "imports" / "hermes"
TELEGRAM = "user:telegram:555000111"


def built(folder: Path, name: str, sql: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / name)
    conn.executescript((FIXTURES / sql).read_text(encoding="utf-8"))
    conn.commit()
    conn.close()
    return folder / name


def exported(home, scope):
    out = run(home, "export", "--scope", scope, "--quiet").stdout
    return [json.loads(line) for line in out.splitlines()[1:] if json.loads(line)["type"] == "memory"]


@pytest.mark.store
def test_sessions_go_to_each_users_scope_and_only_what_was_said(home, tmp_path):
    state = built(tmp_path / "hermes", "state.db", "state.sql")
    dry = imported(home, "--dry-run", str(state))
    assert dry["format"] == "hermes-state"
    assert {scope: plan["memories"]["new"] for scope, plan in dry["scopes"].items()} == {"local:default": 5, TELEGRAM: 2}
    assert {reason for reason in dry["skipped"]} == {
        "a tool call", "a tool's output", "a rewound message", "a background review prompt",
        "the reply to a background review prompt", "gateway bookkeeping", "a group message not addressed to the agent",
        "a sub-agent's session"}
    summary = imported(home, str(state))
    assert summary["scopes"][TELEGRAM]["memories"]["added"] == 2
    local = [m["content"] for m in exported(home, "local:default")]
    assert local == ["My balcony faces south.", "Noted: south-facing balcony.", "Here is a photo of the pots. [image]",
                     "How often should I water them?", "Every morning in summer."]  # Hermes' order, not the clock's
    assert not any("memory-context" in text or "System note" in text or "forget the tomatoes" in text for text in local)
    assert [m["content"] for m in exported(home, TELEGRAM)][0].startswith("My cat is called Miso")
    again = imported(home, str(state))["scopes"]
    assert again["local:default"]["memories"] == {"added": 0, "skipped": 5}
    assert json.loads(run(home, "search", "Miso", "--json").stdout)["results"] == []  # not the local user's
    found = json.loads(run(home, "search", "Miso", "--scope", TELEGRAM, "--json").stdout)["results"]
    assert found[0]["source"] == "import:hermes-state"


@pytest.mark.quick
@pytest.mark.store
def test_the_live_files_wal_is_read_and_the_file_left_as_it_was(home, tmp_path):
    state = built(tmp_path / "hermes", "state.db", "state.sql")
    live = sqlite3.connect(state)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                 "('20260105_093000_d4e5f6', 'user', 'The pots are terracotta.', 1767605600.0)")
    live.commit()  # (still open: the row is in state.db-wal only)
    before = {path.name: path.read_bytes() for path in state.parent.iterdir()}
    imported(home, str(state))
    assert {path.name: path.read_bytes() for path in state.parent.iterdir()} == before  # (nothing beside it either)
    live.close()
    assert "The pots are terracotta." in [m["content"] for m in exported(home, "local:default")]


@pytest.mark.store
def test_an_import_that_stopped_half_way_is_finished_by_importing_again(home, tmp_path):
    """A state.db with its last sessions not yet written stands for what a killed run had
    committed: the whole file then adds only the rest."""
    state = built(tmp_path / "hermes", "state.db", "state.sql")
    early = built(tmp_path / "early", "state.db", "state.sql")
    with sqlite3.connect(early) as conn:
        conn.execute("DELETE FROM sessions WHERE source = 'telegram'")
    assert imported(home, str(early))["scopes"]["local:default"]["memories"]["added"] == 5
    rest = imported(home, str(state))["scopes"]
    assert rest["local:default"]["memories"] == {"added": 0, "skipped": 5}
    assert rest[TELEGRAM]["memories"] == {"added": 2, "skipped": 0}


@pytest.mark.store
def test_memory_files_and_holographic_facts(home, tmp_path):
    hermes = tmp_path / "hermes"
    (hermes / "memories").mkdir(parents=True)
    for name in ("MEMORY.md", "USER.md"):
        shutil.copy(FIXTURES / name, hermes / "memories" / name)
    files = imported(home, str(hermes / "memories"))
    assert files["format"] == "hermes-memory"
    assert files["scopes"]["local:default"]["memories"]["added"] == 5  # the repeated MEMORY.md entry once
    assert files["skipped"] == {"an entry the file holds twice": {"count": 1, "first": "MEMORY.md, entry 3"}}
    store = built(hermes, "memory_store.db", "memory_store.sql")
    facts = imported(home, str(store))
    assert facts["format"] == "hermes-holographic"
    notes = {m["content"]: m for m in exported(home, "local:default")}
    assert notes["Works night shifts;\nreplies are best after 14:00 UTC"]["tags"] == ["hermes-user"]
    assert "Uses the § sign in legal notes, e.g. \"§ 12 BGB\"" in notes  # not split at its §
    assert notes["Old guess: Sam lives in Oslo"]["confidence"] == 0.2  # trust kept as confidence
    assert notes["Sam prefers metric units"]["tags"] == ["hermes-holographic", "user_pref", "units", "preferences"]
    assert notes["Sam prefers metric units"]["created_at"] == 1767604502.0  # 2026-01-05 09:15:02 UTC
    assert imported(home, str(store))["scopes"]["local:default"]["memories"] == {"added": 0, "skipped": 3}


@pytest.mark.store
def test_install_says_how_much_history_there_is_and_imports_it_when_asked(home):
    state = built(home, "state.db", "state.sql")
    said = run(home, "install-hermes-plugin")
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[-1] == (
        f"Hermes holds 4 sessions (13 messages, 2026-01-05 to 2026-01-07) from before hermes-cmms: import them with "
        f"`hermes-cmms import {state}` (add --dry-run to see what would be added first), or install with "
        f"--import-history.")
    done = run(home, "install-hermes-plugin", "--import-history")
    assert done.stdout.splitlines()[-1].startswith("Imported 7 messages of Hermes' 4 sessions (13 messages, ")
    assert len(exported(home, "local:default")) == 5 and len(exported(home, TELEGRAM)) == 2
    again = run(home, "install-hermes-plugin", "--import-history")
    assert again.stdout.splitlines()[-1].startswith("Imported 0 messages")


@pytest.mark.store
def test_a_session_the_provider_kept_while_hermes_ran_is_not_imported_twice(home, tmp_path):
    from hermes_cmms import MemoryService, Settings

    state = built(tmp_path / "hermes", "state.db", "state.sql")
    imported(home, "--dry-run", str(state))  # (starts the store)
    with MemoryService(Settings.load(home), scheduler=False) as service:  # what the provider kept of one session
        service.retain_turn("local:default", "20260105_091500_a1b2c3", "My balcony faces south.",
                            "Noted: south-facing balcony.")
    summary = imported(home, str(state))
    assert summary["skipped"]["a session hermes-cmms kept while it ran"]["count"] == 1
    assert summary["skipped"]["a message of a session hermes-cmms kept while it ran"]["count"] == 3
    assert summary["scopes"]["local:default"]["memories"]["added"] == 2  # the other session's
    assert [m["content"] for m in exported(home, "local:default")].count("My balcony faces south.") == 1


@pytest.mark.store
def test_the_turns_retaindb_never_sent_go_to_each_users_scope(home, tmp_path):
    """The bundled RetainDB provider keeps the turns its service has not taken in
    retaindb_queue.db: each user's into the scope the provider gives them (the platform from
    state.db), none of a user whose platform is unknown, every secret masked."""
    hermes = tmp_path / "hermes"
    built(hermes, "state.db", "state.sql")
    queue = built(hermes, "retaindb_queue.db", "retaindb_queue.sql")
    dry = imported(home, "--dry-run", str(queue))
    assert dry["format"] == "hermes-retaindb"
    assert {scope: plan["memories"]["new"] for scope, plan in dry["scopes"].items()} == {"local:default": 3, TELEGRAM: 2}
    assert set(dry["skipped"]) == {"a gateway user's turn whose platform state.db does not name",
                                   "a queued turn without a message to keep"}
    imported(home, str(queue))
    local = exported(home, "local:default")
    assert [m["content"] for m in local][:2] == ["My bike is a green Brompton.", "A green Brompton, noted."]
    assert "sk-proj-AbCdEf" not in json.dumps(local) and local[2]["content"].startswith("The lock code is in my notes")
    assert local[0]["created_at"] == 1768032005.0 and local[0]["source"] == "import:hermes-retaindb"
    telegram = exported(home, TELEGRAM)
    assert [m["content"] for m in telegram if m["kind"] == "message"] == ["I moved to Ghent last spring.", "Ghent, got it."]
    assert [m["content"] for m in telegram if m["kind"] == "fact"] == ["user lives in Ghent"]  # learned from it
    assert not any("Whose words" in m["content"] for scope in ("local:default", TELEGRAM) for m in exported(home, scope))
    assert imported(home, str(queue))["scopes"]["local:default"]["memories"] == {"added": 0, "skipped": 3}
    live = sqlite3.connect(queue)  # the queue grew (or an import stopped before it): the next run adds the rest
    live.execute("INSERT INTO pending (user_id, session_id, messages_json, created_at) VALUES ('default', "
                 "'20260110_080000_aa11bb', '[{\"role\": \"user\", \"content\": \"The bike lives in the hall.\"}]', "
                 "'2026-01-10T10:00:00+00:00')")
    live.commit()
    live.close()
    assert imported(home, str(queue))["scopes"]["local:default"]["memories"] == {"added": 1, "skipped": 3}
