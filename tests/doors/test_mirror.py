"""The mirror: Hermes' own MEMORY.md/USER.md writes (real tools.memory_tool code), a real
watchdog observer and a real store; every assertion reads the stored rows back."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import func, select
from tools.memory_tool import MemoryStore

from hermes_cmms.hermes.mirror import ACTOR, MAX_INBOX_BYTES, Mirror
from hermes_cmms.store.models import AuditEvent, Memory

SCOPE = "local:mirror"
DEBOUNCE = 0.2


def wait_for(condition, timeout: float = 2.0) -> float:
    """Poll `condition` until it is true; return the seconds it took."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(0.01)
    return time.monotonic() - started


def rows(service, name: str = "MEMORY.md", scope: str = SCOPE, current: bool = False) -> list[Memory]:
    query = select(Memory).where(Memory.scope == scope, Memory.source == f"hermes:file:{name}")
    if current:
        query = query.where(Memory.superseded_by.is_(None))
    with service.store.read() as conn:
        return [Memory.model_construct(**r._mapping) for r in conn.execute(query.order_by(Memory.seq))]


def texts(service, name: str = "MEMORY.md", scope: str = SCOPE) -> set[str]:
    return {m.content for m in rows(service, name, scope, current=True)}


def counts(service) -> tuple[int, int]:
    """(memory rows, audit events) in the whole store."""
    with service.store.read() as conn:
        return (conn.execute(select(func.count()).select_from(Memory)).scalar(),
                conn.execute(select(func.count()).select_from(AuditEvent)).scalar())


def forget_events(service, memory_id: str) -> list[AuditEvent]:
    return service.store.audit_events(SCOPE, memory_id=memory_id, action="forget")


def hermes() -> MemoryStore:
    """Hermes' built-in memory store on $HERMES_HOME (set by the `home` fixture)."""
    store = MemoryStore()
    store.load_from_disk()
    return store


def write(home: Path, entries: list[str], name: str = "MEMORY.md") -> None:
    """Write a whole memory file exactly as Hermes does (temp file, fsync, os.replace)."""
    (home / "memories").mkdir(exist_ok=True)
    MemoryStore._write_file(home / "memories" / name, entries)


@pytest.fixture
def mirror(keyword_service, home):
    m = Mirror(keyword_service, home, SCOPE, inbox=home / "inbox", debounce=DEBOUNCE).start()
    yield m
    started = time.monotonic()
    assert m.stop()
    assert time.monotonic() - started < 2.0


@pytest.mark.quick
def test_entries_are_stored_within_two_seconds(keyword_service, mirror, home):
    assert hermes().add("memory", "The deploy server is called atlas.")["success"]
    assert hermes().add("memory", "Backups run nightly at 02:00 UTC.")["success"]
    latency = wait_for(lambda: len(texts(keyword_service)) == 2)  # from the last write
    print(f"\nmirror pickup latency: {latency:.3f} s (debounce {DEBOUNCE} s)")
    assert latency < 2.0
    stored = rows(keyword_service)
    assert {m.content for m in stored} == {"The deploy server is called atlas.",
                                           "Backups run nightly at 02:00 UTC."}
    assert all(m.tier == "semantic" and m.superseded_by is None for m in stored)
    assert all('"memory-file"' in m.tags and '"MEMORY.md"' in m.tags for m in stored)


def test_an_edited_entry_supersedes_and_a_removed_one_is_forgotten(keyword_service, mirror, home):
    store = hermes()
    store.add("memory", "The deploy server is called atlas.")
    store.add("memory", "The user's editor is vim with a dark theme.")
    wait_for(lambda: len(texts(keyword_service)) == 2)
    old = next(m for m in rows(keyword_service) if "editor" in m.content)
    store.replace("memory", "editor is vim", "The user's editor is neovim with a dark theme.")
    wait_for(lambda: "The user's editor is neovim with a dark theme." in texts(keyword_service))
    new = next(m for m in rows(keyword_service, current=True) if "neovim" in m.content)
    kept = {m.id: m for m in rows(keyword_service)}
    assert kept[old.id].superseded_by == new.id  # the old version is kept, marked
    assert texts(keyword_service) == {"The deploy server is called atlas.", new.content}

    store.remove("memory", "neovim")
    wait_for(lambda: new.id not in {m.id for m in rows(keyword_service)})
    # the removed entry and the version it had superseded are both gone (nothing comes back)
    assert {m.content for m in rows(keyword_service)} == {"The deploy server is called atlas."}
    for gone in (old, new):
        events = forget_events(keyword_service, gone.id)
        assert len(events) == 1 and events[0].actor == ACTOR and gone.content in events[0].snapshot


def test_a_deleted_file_forgets_every_entry(keyword_service, mirror, home):
    write(home, ["Alpha project uses Postgres.", "Beta project uses SQLite.", "Gamma ships on Fridays."])
    wait_for(lambda: len(texts(keyword_service)) == 3)
    ids = [m.id for m in rows(keyword_service)]
    (home / "memories" / "MEMORY.md").unlink()
    wait_for(lambda: not rows(keyword_service))
    assert all(forget_events(keyword_service, i)[0].actor == ACTOR for i in ids)


def test_user_md_is_mirrored_the_same_way(keyword_service, mirror, home):
    store = hermes()
    store.add("user", "Prefers short answers.")
    store.add("memory", "The CI runs on GitHub Actions.")
    wait_for(lambda: texts(keyword_service, "USER.md") == {"Prefers short answers."}
             and texts(keyword_service) == {"The CI runs on GitHub Actions."})
    assert '"USER.md"' in rows(keyword_service, "USER.md")[0].tags
    store.replace("user", "short answers", "Prefers short answers with code first.")
    wait_for(lambda: texts(keyword_service, "USER.md") == {"Prefers short answers with code first."})
    assert len(rows(keyword_service, "USER.md")) == 2  # the old version kept, superseded
    store.remove("user", "code first")
    wait_for(lambda: not rows(keyword_service, "USER.md"))
    assert texts(keyword_service) == {"The CI runs on GitHub Actions."}  # MEMORY.md untouched


def test_restart_reconciles_and_a_no_op_restart_writes_nothing(keyword_service, home):
    write(home, ["Alpha uses Postgres.", "The staging host is zeus.", "Tests run with pytest.",
                 "Lint with ruff before pushing."])
    with Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE):
        assert len(texts(keyword_service)) == 4  # the first sync runs in start()
    by_text = {m.content: m for m in rows(keyword_service)}
    # edited, removed (two) and added while no mirror was running
    write(home, ["Alpha uses Postgres.", "The staging host is hera.", "Releases are tagged vX.Y.Z."])
    with Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE):
        assert texts(keyword_service) == {"Alpha uses Postgres.", "The staging host is hera.",
                                          "Releases are tagged vX.Y.Z."}
    hera = next(m for m in rows(keyword_service, current=True) if "hera" in m.content)
    after = {m.id: m for m in rows(keyword_service)}
    assert after[by_text["The staging host is zeus."].id].superseded_by == hera.id
    assert after[by_text["Alpha uses Postgres."].id].superseded_by is None  # unchanged: same row
    for gone in ("Tests run with pytest.", "Lint with ruff before pushing."):
        assert by_text[gone].id not in after
        assert forget_events(keyword_service, by_text[gone].id)[0].actor == ACTOR

    before = counts(keyword_service)
    m = Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE).start()
    report = m.sync()
    assert m.stop()
    assert report["MEMORY.md"] == {"unchanged": 3, "added": 0, "edited": 0, "forgotten": 0}
    assert counts(keyword_service) == before  # no row, no audit event


def test_twenty_rapid_writes_coalesce_into_few_syncs(keyword_service, home):
    with Mirror(keyword_service, home, SCOPE, debounce=0.3) as m:
        before = m.syncs["MEMORY.md"]
        final = [f"Fact number {i} about the build farm." for i in range(20)]
        for i in range(20):
            write(home, final[:i + 1])
        wait_for(lambda: texts(keyword_service) == set(final), timeout=3.0)
        time.sleep(0.5)  # longer than the debounce: a late extra sync would show here
        assert 1 <= m.syncs["MEMORY.md"] - before <= 3
    assert len(rows(keyword_service)) == 20  # nothing stored twice, nothing superseded
    assert not keyword_service.store.audit_events(SCOPE, action="forget")


def test_garbage_bytes_do_not_stop_the_watcher(keyword_service, mirror, home):
    (home / "memories" / "MEMORY.md").write_bytes(b"\xff\xfe half-written entry\n\xc2\xa7\nsecond \x00entry")
    wait_for(lambda: len(texts(keyword_service)) == 2)
    assert "\ufffd\ufffd half-written entry" in texts(keyword_service)
    write(home, ["A clean entry after the garbage."])
    wait_for(lambda: texts(keyword_service) == {"A clean entry after the garbage."})


def test_memory_tool_copies_are_adopted_not_duplicated(keyword_service, mirror, home):
    """The provider's on_memory_write already stored the entry: the mirror adds no copy, and
    forgets it when the entry is removed (Hermes' remove is not sent to on_memory_write)."""
    tool_id = keyword_service.remember(SCOPE, "The nightly export lands in the archive bucket.",
                                       tags=["hermes-memory"], source="hermes:memory-tool")
    write(home, ["The nightly export lands in the archive bucket."])
    mirror.sync()
    with keyword_service.store.read() as conn:
        same = conn.execute(select(Memory.id).where(Memory.scope == SCOPE)).scalars().all()
    assert same == [tool_id]
    write(home, [])
    wait_for(lambda: bool(forget_events(keyword_service, tool_id)))
    assert forget_events(keyword_service, tool_id)[0].actor == ACTOR


def test_memories_land_in_the_mirror_scope_only(keyword_service, home):
    other = keyword_service.store_note("local:other", "Shared words in two scopes.",
                                       source="hermes:file:MEMORY.md", tags=["memory-file", "MEMORY.md"])
    write(home, ["Shared words in two scopes.", "Only in the mirrored scope."])
    with Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE):
        pass
    assert texts(keyword_service) == {"Shared words in two scopes.", "Only in the mirrored scope."}
    assert {m.id for m in rows(keyword_service, scope="local:other")} == {other.id}
    assert rows(keyword_service, scope="local:other")[0].access_count == 0  # not reinforced
    write(home, [])
    with Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE):
        pass
    assert not rows(keyword_service)
    assert texts(keyword_service, scope="local:other") == {"Shared words in two scopes."}


# -- inbox ------------------------------------------------------------------------------


def inbox_rows(service, name: str) -> list[Memory]:
    query = select(Memory).where(Memory.scope == SCOPE, Memory.source == f"inbox:{name}")
    with service.store.read() as conn:
        return [Memory.model_construct(**r._mapping) for r in conn.execute(query)]


def test_inbox_files_are_learned_and_moved(keyword_service, home):
    inbox = home / "inbox"
    with Mirror(keyword_service, home, SCOPE, inbox=inbox, debounce=DEBOUNCE):
        (inbox / "notes.md").write_text("The release train leaves every Tuesday.", encoding="utf-8")
        (inbox / "todo.txt").write_text("Renew the TLS certificate in March.", encoding="utf-8")
        (inbox / "report.pdf").write_bytes(b"%PDF-1.4 not text")
        (inbox / "adr.md").write_text("We decided to use Kafka because it keeps every event.", encoding="utf-8")
        wait_for(lambda: (inbox / "processed" / "notes.md").exists()
                 and (inbox / "processed" / "todo.txt").exists() and (inbox / "processed" / "adr.md").exists())
        (inbox / "notes.md").write_text("A second file with a taken name.", encoding="utf-8")
        wait_for(lambda: (inbox / "processed" / "notes-1.md").exists())
    for name, text in (("notes.md", "The release train leaves every Tuesday."),
                       ("todo.txt", "Renew the TLS certificate in March.")):
        [row] = [r for r in inbox_rows(keyword_service, name) if r.content == text]
        assert (row.kind, row.tier) == ("observation", "episodic")
    assert "A second file with a taken name." in {r.content for r in inbox_rows(keyword_service, "notes.md")}
    assert (inbox / "report.pdf").exists() and not inbox_rows(keyword_service, "report.pdf")
    assert sorted(p.name for p in inbox.iterdir()) == ["processed", "report.pdf"]
    with keyword_service.store.read() as conn:  # what was learned from a file links to it
        learned = conn.execute(select(Memory.kind, Memory.detail).where(
            Memory.scope == SCOPE, Memory.source == "learn:inbox:adr.md")).all()
    assert [kind for kind, _ in learned] == ["decision"] and "Kafka" in learned[0][1]


def test_a_file_still_being_written_is_not_learned_half_way(keyword_service, home):
    inbox = home / "inbox"
    parts = [f"Line {i} of a slowly written meeting summary.\n" for i in range(25)]
    with Mirror(keyword_service, home, SCOPE, inbox=inbox, debounce=DEBOUNCE):
        with open(inbox / "slow.md", "w", encoding="utf-8") as f:
            for part in parts:  # 25 writes over ~1.25 s, far longer than the debounce
                f.write(part)
                f.flush()
                time.sleep(0.05)
            assert (inbox / "slow.md").exists() and not inbox_rows(keyword_service, "slow.md")
        wait_for(lambda: (inbox / "processed" / "slow.md").exists())
    [row] = inbox_rows(keyword_service, "slow.md")
    assert row.content == "".join(parts)


def test_files_left_in_the_inbox_are_processed_on_start(keyword_service, home):
    inbox = home / "inbox"
    inbox.mkdir()
    (inbox / "left.txt").write_text("Dropped while the agent was down.", encoding="utf-8")
    (inbox / "huge.md").write_bytes(b"x" * (MAX_INBOX_BYTES + 1))
    with Mirror(keyword_service, home, SCOPE, inbox=inbox, debounce=DEBOUNCE):
        wait_for(lambda: (inbox / "processed" / "left.txt").exists()
                 and (inbox / "rejected" / "huge.md").exists())
    [row] = inbox_rows(keyword_service, "left.txt")
    assert row.content == "Dropped while the agent was down."
    assert not inbox_rows(keyword_service, "huge.md")
    assert not [p for p in inbox.iterdir() if p.is_file()]


def test_two_processes_on_one_home_mirror_once_and_hand_over(keyword_service, home):
    from hermes_cmms import MemoryService, Settings

    other = MemoryService(Settings.load(home, embedder="none"), scheduler=False)  # a second process' engine
    first = Mirror(keyword_service, home, SCOPE, debounce=DEBOUNCE, lease_s=0.6).start()
    second = Mirror(other, home, SCOPE, debounce=DEBOUNCE, lease_s=0.6).start()
    elsewhere = Mirror(other, home / "profiles" / "work", "local:work", debounce=DEBOUNCE, lease_s=0.6).start()
    try:
        assert (first.holding, second.holding) == (True, False)
        assert elsewhere.holding  # another profile's files, into another scope, on the same store
        write(home, ["The VPN endpoint is vpn.example.org."])
        wait_for(lambda: texts(keyword_service) == {"The VPN endpoint is vpn.example.org."})
        time.sleep(0.5)  # the second mirror saw the same event and left it to the holder
        assert [m.access_count for m in rows(keyword_service)] == [0] and second.syncs["MEMORY.md"] == 0
        first.stop()  # the holder goes away: the other takes over at its next tick and catches up
        write(home, ["The VPN endpoint is vpn2.example.org."])
        wait_for(lambda: texts(keyword_service) == {"The VPN endpoint is vpn2.example.org."})
        assert second.holding and second.syncs["MEMORY.md"] >= 1
    finally:
        for mirror in (first, second, elsewhere):
            mirror.stop()
        other.close()
