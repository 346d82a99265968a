"""Export, import and backup: round trips that keep every row, idempotent imports, moving a
store from SQLite to PostgreSQL, clear errors for malformed files, the command line, and what
`hermes backup` is told to copy. Real stores on both backends; no mocks."""
from __future__ import annotations

import fcntl
import json
import re
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import SERVER, embedded_only, server_databases, server_only
from db import sql
from inprocess import cli
from hermes_cmms import InvalidInput, MemoryService, Settings
from hermes_cmms.store.models import AuditEvent, Belief, ConversationSession, Evidence, Fact, Link, Memory
from hermes_cmms.ops.transfer import export_scope, external_paths, import_file, import_records

HERMES = str(Path(sys.executable).with_name("hermes"))
SCOPE = "local:default"
TABLES = {"memories": (Memory, {"seq"}), "facts": (Fact, set()), "beliefs": (Belief, set()),
          "evidence": (Evidence, {"id"}), "links": (Link, set()), "sessions": (ConversationSession, set()),
          "audit_log": (AuditEvent, {"id"})}


# -- helpers --------------------------------------------------------------------------------

@contextmanager
def other_store(tmp_path, name="other", embedder="none", database_url=None):
    """A second, empty store beside the test's own: SQLite in a home of its own, or a fresh
    PostgreSQL database and Chroma database on the server backend."""
    home = tmp_path / name
    home.mkdir()
    if SERVER and database_url is None:
        with server_databases() as (url, chroma):
            svc = MemoryService(Settings.load(home, database_url=url, chroma_url=chroma, embedder=embedder),
                                scheduler=False)
            try:
                yield svc
            finally:
                svc.close()
        return
    svc = MemoryService(Settings.load(home, embedder=embedder, database_url=database_url), scheduler=False)
    try:
        yield svc
    finally:
        svc.close()


def fill(svc, scope=SCOPE) -> dict:
    """A scope with something of everything: turns, notes with tags and receipts, a working
    memory, superseded facts, learned knowledge with links, beliefs with evidence, a forget."""
    svc.retain_turn(scope, "s1", "My name is Ana and I work at Acme in Lisbon.", "Nice to meet you, Ana!")
    svc.retain_turn(scope, "s1", "I prefer green tea over coffee in the morning.", "Noted: green tea.")
    svc.retain_turn(scope, "s2", "Remind me: the dentist appointment is on Friday.", "I will remember.")
    note = svc.remember(scope, "The deploy key rotates every 90 days.", tags=["ops", "security"], source="cli")
    svc.remember(scope, "The deploy key rotates every 90 days.", tags=["ops", "security"], source="mcp")  # receipt
    svc.remember(scope, "Parking spot 42 is free today.", ttl_seconds=3600)
    old = svc.remember_fact(scope, "Ana", "works at", "Acme")
    new = svc.remember_fact(scope, "Ana", "works at", "Globex")
    svc.remember_fact(scope, "Globex", "is based in", "Porto")
    learned = svc.learn(scope, "Bruno manages the Porto office. I think the staging API is stable.")
    svc.set_belief(scope, "The staging API is not stable.", confidence=0.4, evidence="it failed twice")
    gone = svc.remember(scope, "A memory that will be forgotten.")
    svc.forget(scope, gone)
    svc.flush_session(scope, "s1")
    return {"note": note, "old_fact": old, "new_fact": new, "learned": learned}


def dump(where, scope=SCOPE, skip_actions=("import", "export")) -> dict:
    """Every row of `scope` in the tables an export carries, without physical keys, sorted;
    the graph as names (entity ids are made anew on import)."""
    out = {}
    for table, (model, dropped) in TABLES.items():
        columns = [c.name for c in model.__table__.columns if c.name not in dropped | {"scope"}]
        rows = sql(where, f"SELECT {', '.join(columns)} FROM {table} WHERE scope = ?", scope)
        if table == "audit_log":
            rows = [r for r in rows if r[columns.index("action")] not in skip_actions]
        out[table] = sorted(rows, key=repr)
    out["graph"] = sorted(sql(where, "SELECT s.name, r.predicate, t.name, r.memory_id FROM relations r "
                                     "JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
                                     "WHERE r.scope = ?", scope))
    return out


def no_ids(value):
    """A graph answer without entity ids."""
    if isinstance(value, dict):
        return {k: no_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [no_ids(v) for v in value]
    return value


def records_of(lines: list[str]) -> list[dict]:
    """The records of an export but its header and the audit events of exports and imports."""
    records = [json.loads(line) for line in lines[1:]]
    return [r for r in records if r["type"] != "audit" or r["action"] not in ("import", "export")]


def lines_of(svc, scope=SCOPE) -> list[str]:
    return [json.dumps(record, ensure_ascii=False) for record in export_scope(svc, scope)]


def everything(where) -> dict:
    """Every row of every table (for 'nothing was written')."""
    tables = ["memories", "facts", "beliefs", "evidence", "links", "sessions", "audit_log", "entities",
              "relations", "outbox"]
    return {t: sorted(sql(where, f"SELECT * FROM {t}" if t != "memories" else "SELECT id, scope, content, "
                                 "superseded_by FROM memories"), key=repr) for t in tables}


# -- round trip -----------------------------------------------------------------------------

@pytest.mark.quick
def test_round_trip_keeps_every_row_chain_and_graph(keyword_service, tmp_path):
    made = fill(keyword_service)
    lines = lines_of(keyword_service)
    header = json.loads(lines[0])
    assert header["format"] == "hermes-cmms-export" and header["version"] == 1 and header["scope"] == SCOPE
    assert header["counts"]["memories"] == sum(1 for line in lines if '"type": "memory"' in line)
    assert not any("seq" in json.loads(line) or "content_hash" in json.loads(line) for line in lines[1:])
    with other_store(tmp_path) as target:
        summary = import_records(target.engine, lines)
        assert summary["memories"] == {"added": header["counts"]["memories"], "skipped": 0}
        assert summary["queued_for_indexing"] == header["counts"]["memories"]
        assert dump(target) == dump(keyword_service)
        # supersede chain, receipts and tags exactly as they were
        old = sql(target, "SELECT superseded_by FROM memories WHERE id = ?", made["old_fact"])
        assert old == [(made["new_fact"],)]
        note = sql(target, "SELECT receipts, tags, access_count FROM memories WHERE id = ?", made["note"])[0]
        assert [r["source"] for r in json.loads(note[0])] == ["mcp"] and json.loads(note[1]) == ["ops", "security"]
        assert note[2] == 1
        # the knowledge layer answers the same
        # (entity ids are made anew: the graph is rebuilt from the facts)
        assert no_ids(target.graph_search(SCOPE, query="Where does Ana work?")) == \
            no_ids(keyword_service.graph_search(SCOPE, query="Where does Ana work?"))
        assert target.get_belief(SCOPE)["total"] == keyword_service.get_belief(SCOPE)["total"] == 2
        assert target.reflect(SCOPE, "contradictions") == keyword_service.reflect(SCOPE, "contradictions")
        assert target.upkeep.audit("orphans", SCOPE)["ok"]
        # every new memory waits for the indexer; the import is on the audit trail
        assert sql(target, "SELECT count(*) FROM outbox WHERE op = 'upsert'") == [(header["counts"]["memories"],)]
        event = target.audit_log(SCOPE, action="import")[0]
        assert event.detail["memories"]["added"] == header["counts"]["memories"]
        # and it exports to the same records (but for the trail of this export and import)
        assert records_of(lines_of(target)) == records_of(lines)


def test_import_twice_changes_nothing(keyword_service, tmp_path):
    fill(keyword_service)
    path = tmp_path / "scope.jsonl"
    path.write_text("\n".join(lines_of(keyword_service)) + "\n", encoding="utf-8")
    with other_store(tmp_path) as target:
        first = import_file(target.engine, path)
        before = dump(target, skip_actions=("import",)), sql(target, "SELECT count(*) FROM outbox")
        second = import_file(target.engine, path)
        assert (dump(target, skip_actions=("import",)), sql(target, "SELECT count(*) FROM outbox")) == before
        counted = [k for k, v in second.items() if isinstance(v, dict)]
        assert {k: second[k]["added"] for k in counted} == dict.fromkeys(counted, 0)
        assert {k: second[k]["skipped"] for k in counted} == {k: first[k]["added"] for k in counted}
        assert second["queued_for_indexing"] == 0
        assert len(target.audit_log(SCOPE, action="import")) == 2
    # restoring into the very store it came from skips everything too
    again = import_file(keyword_service.engine, path)
    assert again["memories"] == {"added": 0, "skipped": first["memories"]["added"]}


def test_import_into_another_scope_name(keyword_service, tmp_path):
    made = fill(keyword_service)
    with other_store(tmp_path) as target:
        summary = import_records(target.engine, lines_of(keyword_service), scope="user:telegram:123")
        assert summary["scope"] == "user:telegram:123" and summary["source_scope"] == SCOPE
        assert dump(target, "user:telegram:123") == dump(keyword_service)
        assert sql(target, "SELECT count(*) FROM memories WHERE scope = ?", SCOPE) == [(0,)]
        hits = target.search("user:telegram:123", "green tea")
        assert hits and "green tea" in hits[0].content
        assert target.search(SCOPE, "green tea") == []
        assert list(target.store.get([made["note"]], "user:telegram:123")) == [made["note"]]


def test_recall_and_forget_after_import(service, tmp_path):
    """Into a store with the real embedding model: keyword recall at once, semantic recall
    once the indexer has embedded the queued memories, and forget really forgets."""
    with other_store(tmp_path) as source:
        fill(source)
        lines = lines_of(source)
    summary = import_records(service.engine, lines)
    assert summary["queued_for_indexing"] > 0
    assert any("green tea" in hit.content for hit in service.search(SCOPE, "green tea"))
    assert service.upkeep.drain(120)
    found = service.semantic_search(SCOPE, "What hot drink does she like in the morning?", top_k=3)
    assert any("green tea" in memory.content for memory in found)
    tea = next(m for m in found if "green tea" in m.content)
    service.forget(SCOPE, tea.id)
    assert service.upkeep.drain(60)
    assert sql(service, "SELECT count(*) FROM memories WHERE id = ?", tea.id) == [(0,)]
    assert all(hit.id != tea.id for hit in service.search(SCOPE, "green tea coffee morning"))
    assert all(m.id != tea.id for m in service.semantic_search(SCOPE, "green tea in the morning", top_k=10))
    assert tea.id not in {record.get("id") for record in records_of(lines_of(service))}


@server_only
def test_sqlite_to_postgresql(tmp_path, home, keyword_service):
    """The move the docs describe: export from a SQLite store, import into PostgreSQL."""
    with other_store(tmp_path, "sqlite", database_url=f"sqlite:///{tmp_path / 'old.db'}") as old:
        assert old.store.engine.dialect.name == "sqlite"
        fill(old)
        lines = lines_of(old)
        assert keyword_service.store.engine.dialect.name == "postgresql"
        summary = import_records(keyword_service.engine, lines)
        assert summary["memories"]["skipped"] == 0
        assert dump(keyword_service) == dump(old)
        assert any("green tea" in h.content for h in keyword_service.search(SCOPE, "green tea"))
        assert no_ids(keyword_service.graph_search(SCOPE, query="Ana")) == no_ids(old.graph_search(SCOPE, query="Ana"))


# -- redaction ------------------------------------------------------------------------------

def test_import_redacts_a_hand_edited_file(keyword_service, tmp_path):
    fill(keyword_service)
    records = [json.loads(line) for line in lines_of(keyword_service)]
    secret = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234"
    memory = next(r for r in records if r["type"] == "memory" and r["kind"] == "fact")
    memory["content"] += f" api_key={secret}"
    memory["tags"] = [f"token {secret}"]
    fact = next(r for r in records if r["type"] == "fact")
    fact["object"] = f"Acme {secret}"
    with other_store(tmp_path) as target:
        summary = import_records(target.engine, records)
        assert summary["redacted"] == 2
        stored = " ".join(map(str, sql(target, "SELECT content, tags FROM memories WHERE id = ?", memory["id"])[0]))
        stored += sql(target, "SELECT object FROM facts WHERE memory_id = ?", fact["memory_id"])[0][0]
        assert secret not in stored and stored.count("[REDACTED:") == 3
        assert secret not in json.dumps(everything(target))
        again = import_records(target.engine, records)  # what was redacted is recognised as stored
        assert again["memories"]["added"] == 0


# -- malformed files ------------------------------------------------------------------------

def _broken(lines: list[str], case: str) -> list[str]:
    records = [json.loads(line) for line in lines]
    if case == "bad json":
        return [*lines[:2], '{"type": "memory", "id": ', *lines[3:]]
    if case == "unknown type":
        records[4]["type"] = "wormhole"
    elif case == "missing id":
        del next(r for r in records if r["type"] == "memory")["id"]
    elif case == "version":
        records[0]["version"] = 2
    elif case == "count":
        records[0]["counts"]["memories"] += 1
    elif case == "dangling":
        next(r for r in records if r["type"] == "memory")["superseded_by"] = "f" * 32
    elif case == "duplicate":
        records.append(next(r for r in records if r["type"] == "memory"))
        records[0]["counts"]["memories"] += 1
    elif case == "nan":
        return [line.replace('"confidence": 0.8', '"confidence": NaN', 1) for line in lines]
    elif case == "state":
        next(r for r in records if r["type"] == "memory")["state"] = "asleep"
    elif case == "no header":
        records = records[1:]
    elif case == "huge turn":  # more than PostgreSQL's INTEGER holds
        next(r for r in records if r["type"] == "memory" and r.get("turn") is not None)["turn"] = 2 ** 31
    elif case == "huge time":  # more than a float holds
        first = next(n for n, r in enumerate(records) if r["type"] == "memory")
        huge = re.sub(r'"created_at": [-0-9.e+]+', '"created_at": 1' + "0" * 400, lines[first], count=1)
        return [*lines[:first], huge, *lines[first + 1:]]
    return [json.dumps(r) for r in records]


BROKEN = {"bad json": "Line 3: not valid JSON", "unknown type": "Line 5: unknown record type 'wormhole'",
          "missing id": "the memory record has no 'id'", "version": "Line 1: format version 2 is not supported",
          "count": "but its header says", "dangling": f"superseded_by {'f' * 32!r} is not a memory",
          "duplicate": "is already on line", "nan": "not valid JSON", "state": "unknown state 'asleep'",
          "no header": "Line 1: the first line must be the header",
          "huge turn": "must be a whole number between -2147483648 and 2147483647",
          "huge time": "must be a finite number"}


def test_malformed_files_write_nothing(keyword_service, tmp_path):
    fill(keyword_service)
    lines = lines_of(keyword_service)
    with other_store(tmp_path) as target:
        target.remember(SCOPE, "Already here before the imports.")
        before = everything(target)
        for case, message in BROKEN.items():
            with pytest.raises(InvalidInput) as error:
                import_records(target.engine, _broken(lines, case))
            text = str(error.value)
            assert message in text and text.endswith("nothing was imported.") and "\n" not in text, (case, text)
            assert everything(target) == before, case
        with pytest.raises(InvalidInput, match="The file is empty"):
            import_records(target.engine, [])


def test_ids_of_another_scope_are_refused(keyword_service):
    fill(keyword_service)
    lines = lines_of(keyword_service)
    before = everything(keyword_service)
    with pytest.raises(InvalidInput) as error:
        import_records(keyword_service.engine, lines, scope="user:telegram:123")
    assert "already belongs to scope 'local:default'" in str(error.value)
    assert "ids are unique across scopes" in str(error.value)
    assert re.match(r"Line \d+: memory id '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' ",
                    str(error.value))  # the export's own line, the id dashed as every door shows it
    assert everything(keyword_service) == before


@pytest.mark.quick
@embedded_only
def test_a_foreign_file_an_other_scope_owns_is_refused_without_a_spool_line(home):
    """A ChatGPT export imported into one scope, then into another: the refusal names the memory
    by its dashed id and no line (its records are no lines of the file), and changes nothing."""
    chatgpt = Path(__file__).parents[1] / "data" / "imports" / "chatgpt" / "conversations.json"
    env = {"CMMS_EMBEDDER": "none"}
    assert cli(home, "import", "--create", str(chatgpt), env=env).returncode == 0
    database = next((home / "cmms").glob("cmms.db"))
    before = database.read_bytes()
    for dry in ((), ("--dry-run",)):
        refused = cli(home, "import", *dry, "--scope", "user:other", str(chatgpt), env=env)
        assert refused.returncode == 1 and re.fullmatch(
            r"error: Memory id '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' already belongs to scope "
            r"'local:default' in this store, and ids are unique across scopes, so it cannot be imported into "
            r"'user:other'; nothing was imported.\n", refused.stderr), refused.stderr
    assert database.read_bytes() == before


def test_a_file_that_cannot_be_read(keyword_service, tmp_path):
    with pytest.raises(InvalidInput, match="Cannot read .*nothing.jsonl"):
        import_file(keyword_service.engine, tmp_path / "nothing.jsonl")
    header = lines_of(keyword_service)[0].encode()
    (tmp_path / "latin1.jsonl").write_bytes(header + b"\n\n" + "caf\u00e9".encode("latin-1") + b"\n")
    with pytest.raises(InvalidInput) as refused:
        import_file(keyword_service.engine, tmp_path / "latin1.jsonl")
    assert str(refused.value) == f"{str(tmp_path / 'latin1.jsonl')!r}, line 3: not valid UTF-8; nothing was imported."


# -- command line ---------------------------------------------------------------------------

@contextmanager
def second_home(tmp_path, name="fresh"):
    """A fresh Hermes home for the CLI, with a database of its own on the server backend."""
    home = tmp_path / name
    home.mkdir()
    if not SERVER:
        yield home, {}
        return
    with server_databases() as (url, chroma):
        yield home, {"CMMS_DATABASE_URL": url, "CMMS_CHROMA_URL": chroma}


def test_cli_export_and_import(keyword_service, home, tmp_path, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    fill(keyword_service)
    keyword_service.close()
    out = cli(home, "export", "--scope", SCOPE)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no progress bar when standard error is not a terminal
    assert json.loads(out.stdout.splitlines()[0])["type"] == "header"
    written = cli(home, "export", "--scope", SCOPE, "--output", str(tmp_path / "x.jsonl"))
    assert written.returncode == 0 and json.loads(written.stdout)["counts"]["memories"] > 0
    assert records_of((tmp_path / "x.jsonl").read_text().splitlines()) == records_of(out.stdout.splitlines())
    assert not list(tmp_path.glob("*.partial"))
    with second_home(tmp_path) as (fresh, env):
        first = cli(fresh, "import", "-", "--create", stdin=out.stdout, env=env)  # not a Hermes home
        assert first.returncode == 0, first.stderr
        assert first.stderr == ""
        summary = json.loads(first.stdout)
        assert summary["memories"]["added"] == json.loads(written.stdout)["counts"]["memories"]
        second = cli(fresh, "import", str(tmp_path / "x.jsonl"), "--quiet", env=env)
        assert second.returncode == 0 and json.loads(second.stdout)["memories"]["added"] == 0
        found = cli(fresh, "search", "green tea", "--json", env=env)
        assert "green tea" in found.stdout
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(out.stdout.splitlines()[:2] + ["{oops"]) + "\n", encoding="utf-8")
        failed = cli(fresh, "import", str(bad), env=env)
        assert failed.returncode == 1 and failed.stdout == ""
        assert failed.stderr.startswith(f"error: {str(bad)!r}, line 3: not valid JSON")  # the file named
        assert failed.stderr.count("\n") == 1
        missing = cli(fresh, "import", str(tmp_path / "nope.jsonl"), env=env)
        assert missing.returncode == 1 and "Cannot read" in missing.stderr
        other = cli(fresh, "import", "-", "--scope", "user:telegram:9", stdin=out.stdout, env=env)
        assert other.returncode == 1 and "already belongs to scope 'local:default'" in other.stderr


def test_progress_bar_only_on_a_terminal(keyword_service, home, tmp_path, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    fill(keyword_service)
    keyword_service.close()
    data = cli(home, "export", "--scope", SCOPE).stdout
    (tmp_path / "x.jsonl").write_text(data, encoding="utf-8")

    def on_terminal(*args, env):
        """Run the command with standard error on a terminal; what it showed there."""
        main, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
        shown: list[bytes] = []

        def read():
            while True:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the terminal closed
                    return
                if not chunk:
                    return
                shown.append(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            with open(child, "w", encoding="utf-8", closefd=False) as terminal:
                done = cli(home_of[0], *args, env=env, stderr=terminal)
        finally:
            os.close(child)
            reader.join(10)
            os.close(main)
        return done, b"".join(shown).decode(errors="replace")

    with second_home(tmp_path) as (fresh, env):
        home_of = [fresh]
        done, seen = on_terminal("import", str(tmp_path / "x.jsonl"), "--quiet", "--create", env=env)
        assert done.returncode == 0 and seen == ""
        done, seen = on_terminal("import", str(tmp_path / "x.jsonl"), env=env)
        assert done.returncode == 0 and "importing" in seen and "records" in seen
        home_of[0] = home
        done, seen = on_terminal("export", "--scope", SCOPE, "--output", str(tmp_path / "y.jsonl"), env={})
        assert done.returncode == 0 and "exporting" in seen


# -- backup ---------------------------------------------------------------------------------

def _settings(home, monkeypatch, **env) -> Settings:
    for name in ("CMMS_DATABASE_URL", "CMMS_CHROMA_URL", "CMMS_INBOX"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.load(home)


@embedded_only
def test_backup_paths_cover_what_lives_outside_the_home(home, tmp_path, monkeypatch):
    from hermes_cmms.provider import CmmsMemoryProvider

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    # the embedded default keeps everything in the home: nothing to add
    settings = _settings(home, monkeypatch, CMMS_EMBEDDER="none")
    MemoryService(settings, scheduler=False).close()
    assert external_paths(settings) == [] and CmmsMemoryProvider().backup_paths() == []
    # a SQLite file outside the home, with its WAL files while it is open; an inbox outside it
    database = outside / "memory.db"
    settings = _settings(home, monkeypatch, CMMS_DATABASE_URL=f"sqlite:///{database}", CMMS_EMBEDDER="none",
                         CMMS_INBOX=str(outside / "inbox"))
    (outside / "inbox").mkdir()
    svc = MemoryService(settings, scheduler=False)
    try:
        svc.remember(SCOPE, "Kept outside the home.")
        found = CmmsMemoryProvider().backup_paths()
        assert str(database) in found and str(outside / "inbox") in found
        assert {Path(p).name for p in found} >= {"memory.db", "memory.db-wal", "inbox"}
        assert all(Path(p).exists() for p in found)
    finally:
        svc.close()
    # an inbox inside the home is walked by Hermes already
    settings = _settings(home, monkeypatch, CMMS_INBOX=str(home / "inbox"))
    (home / "inbox").mkdir()
    assert external_paths(settings) == []
    # PostgreSQL and a Chroma server have nothing on this disk
    settings = _settings(home, monkeypatch, CMMS_DATABASE_URL="postgresql+psycopg://u@db.example/cmms",
                         CMMS_CHROMA_URL="http://chroma.example:8000")
    assert external_paths(settings) == [] and CmmsMemoryProvider().backup_paths() == []


@embedded_only
def test_backup_paths_follow_a_symlinked_data_folder(home, tmp_path, monkeypatch):
    real = tmp_path / "disk" / "cmms"
    (real / "chroma").mkdir(parents=True)
    (real / "cmms.db").write_bytes(b"")
    (home / "cmms").symlink_to(real, target_is_directory=True)
    found = external_paths(_settings(home, monkeypatch))
    assert found == [real / "cmms.db", real / "chroma"]


@embedded_only
def test_hermes_backup_takes_the_database_outside_the_home(tmp_path):
    """Through Hermes' own `hermes backup`: the provider's backup_paths end up in the zip."""
    user_home, hermes_home = tmp_path / "user", tmp_path / "user" / ".hermes"
    hermes_home.mkdir(parents=True)
    ours = {"HOME": str(user_home), "CMMS_EMBEDDER": "none",
            "CMMS_DATABASE_URL": f"sqlite:///{user_home / 'data' / 'cmms.db'}"}
    unset = dict.fromkeys((k for k in os.environ if k.startswith("CMMS_")), None)
    assert cli(hermes_home, "install-hermes-plugin", env={**unset, **ours}).returncode == 0
    assert cli(hermes_home, "beliefs", "set", "Backups matter.", env={**unset, **ours}).returncode == 0  # makes it
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMMS_")}
    env.update(ours, HERMES_HOME=str(hermes_home))
    done = subprocess.run([HERMES, "backup", "-o", str(tmp_path / "backup.zip")], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    names = zipfile.ZipFile(tmp_path / "backup.zip").namelist()
    assert "_external/data/cmms.db" in names and "plugins/cmms/__init__.py" in names


def test_the_commands_in_docs_backup_parse():
    """Every `hermes-cmms` command line shown in docs/backup.md is one the CLI accepts."""
    import re
    import shlex

    from hermes_cmms.cli import build_parser

    doc = (Path(__file__).resolve().parents[2] / "docs" / "backup.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", doc, re.S)
    shown = [line.strip() for block in blocks for line in block.splitlines()
             if line.strip().startswith("hermes-cmms ")]
    assert {line.split()[1] for line in shown} >= {"export", "import", "reindex"}
    for line in shown:
        words = shlex.split(line)
        words = words[:next((i for i, w in enumerate(words) if w in ("<", ">")), len(words))]
        args = build_parser().parse_args(words[1:])
        assert args.func.__name__.startswith("cmd_"), line
