"""What imported history becomes: the user's turns of an imported ChatGPT export read for facts
(entities and graph too), after the import or later by the scheduler, each turn once, dated when
it was said; and decay dated by when it was imported, not only when it was said.

The exports are written as ChatGPT writes conversations.json (hermes_cmms/bench/_chatgpt.py: a
mapping tree from a message-less root through a hidden system message, create_time in epoch
seconds, author.role, content.parts; ../shared/formats/chatgpt-export.md), and the fixture of
test_import_chatgpt.py has the same keys (checked below)."""
import base64
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hermes_cmms import MemoryService, Settings, service as service_module
from hermes_cmms.bench import _chatgpt
from hermes_cmms.cli import _transfer as cli_transfer
from hermes_cmms.common import lifecycle_rules
from hermes_cmms.knowledge import learn
from hermes_cmms.store.models import Fact, Memory
from typing import Optional

from sqlalchemy import select, update
from imports import imported, run

FIXTURE = Path(__file__).parents[1] / "data" / "imports" / "chatgpt" / "conversations.json"
SCOPE = "local:default"
ID_2023 = "6f1c2a52-2023-4a7e-9e1e-000000000001"
ID_2024 = "6f1c2a52-2024-4a7e-9e1e-000000000002"
NOTHING_WAITS = {"sessions": 0, "turns": 0, "learned": 0, "waiting": 0, "waiting_turns": 0}


def _at(year: int, month: int = 5, day: int = 8) -> float:
    return datetime(year, month, day, 13, 56, tzinfo=timezone.utc).timestamp()


def _export(path: Path, *conversations: tuple[str, int, list[str]]) -> Path:
    """conversations.json of (id, year, the user's messages), each answered by the assistant."""
    written = []
    for conversation_id, year, said in conversations:
        messages = []
        for n, text in enumerate(said):
            messages += [("user", text, _at(year) + 60 * n), ("assistant", "Noted.", _at(year) + 60 * n + 5)]
        written.append(_chatgpt.conversation(conversation_id, f"chat of {year}", messages))
    return _chatgpt.write(path, written)


def _current_facts(home: Path, subject: str, predicate: str) -> list[tuple[str, float]]:
    """(object, when it was said) of the current facts of `subject` and `predicate`."""
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service, \
            service.store.read() as conn:
        return [tuple(row) for row in conn.execute(select(Fact.object, Memory.created_at).join(
            Memory, Memory.id == Fact.memory_id).where(Fact.subject == subject, Fact.predicate == predicate,
                                                       Memory.superseded_by.is_(None)))]


def _memories(service: MemoryService) -> list[Memory]:
    with service.store.read() as conn:
        return [Memory.model_validate(row._mapping) for row in conn.execute(select(Memory))]


def test_the_writer_gives_chatgpts_keys():
    ours = _chatgpt.conversation(ID_2023, "t", [("user", "hi", 1.0), ("assistant", "hello", 2.0)])
    theirs = json.loads(FIXTURE.read_text())[0]
    assert set(ours) <= set(theirs) and set(ours["mapping"][ours["current_node"]]) == set(theirs["mapping"]["u-3"])
    assert set(ours["mapping"][ours["current_node"]]["message"]) == set(theirs["mapping"]["u-3"]["message"])


@pytest.mark.quick
@pytest.mark.store
def test_what_was_said_in_an_imported_conversation_is_learned_into_the_graph(home, tmp_path):
    export = _export(tmp_path / "conversations.json", (ID_2023, 2023, ["My sister Ilse lives in Tromsø."]))
    dry = imported(home, "--dry-run", str(export))
    assert dry["scopes"][SCOPE]["to_learn_from"] == {"user_turns": 1}
    summary = imported(home, str(export))
    assert summary["learned"] == {"sessions": 1, "turns": 1, "learned": 2, "waiting": 0, "waiting_turns": 0}
    graph = run(home, "graph", "search", "Ilse")
    assert graph.returncode == 0 and "Tromsø" in graph.stdout, graph.stdout
    assert _current_facts(home, "Ilse", "lives in") == [("Tromsø", _at(2023))]  # dated when it was said
    again = imported(home, str(export))  # re-import: nothing new, nothing read twice
    assert again["learned"] == NOTHING_WAITS
    assert imported(home, "--dry-run", str(export))["scopes"][SCOPE]["to_learn_from"] == {"user_turns": 0}
    assert len(_current_facts(home, "Ilse", "lives in")) == 1


@pytest.mark.store
def test_no_learn_leaves_the_turns_to_a_later_run_which_reads_each_once(home, tmp_path):
    said = [(f"6f1c2a52-0000-4a7e-9e1e-{n:012d}", 2023, [f"I use Tool{n} for notes."]) for n in range(3)]
    summary = imported(home, "--no-learn", str(_export(tmp_path / "conversations.json", *said)))
    assert "learned" not in summary
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        first = service.upkeep.learn_history(limit=1)  # a run that stopped after one turn: one conversation
        assert (first["sessions"], first["turns"], first["waiting"], first["waiting_turns"]) == (1, 1, 2, 2)
        [(scope, session_id)] = service.store.unread_sessions(1)
        assert service.upkeep.extract_session(scope, session_id) > 0
        assert service.upkeep.extract_session(scope, session_id) == 0  # claimed: never read twice
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        rest = service.upkeep.learn_history()  # a new process continues with what is left
        assert rest == {"sessions": 1, "turns": 1, "learned": rest["learned"], "waiting": 0, "waiting_turns": 0}
        assert rest["learned"] > 0 and service.upkeep.learn_history() == NOTHING_WAITS
        learned = [m for m in _memories(service) if m.source == "extract:session"]
    tools = sorted(m.content for m in learned if m.kind == "fact")
    assert len(tools) == len(set(tools)) == 3, tools


@pytest.mark.store
def test_the_fact_said_last_is_current_whatever_order_the_files_come_in(home, tmp_path):
    later = _export(tmp_path / "2024.json", (ID_2024, 2024, ["I live in Oslo."]))
    earlier = _export(tmp_path / "2023.json", (ID_2023, 2023, ["I live in Bergen."]))
    imported(home, str(later))
    imported(home, str(earlier))  # the older file imported last
    assert _current_facts(home, "user", "lives in") == [("Oslo", _at(2024))]


@pytest.mark.store
def test_an_imported_2023_memory_is_not_archived_by_the_next_decay_but_still_ages(home, tmp_path):
    export = _export(tmp_path / "conversations.json", (ID_2023, 2023, ["We talked about the garden shed."]))
    imported(home, "--no-learn", str(export))
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        service.upkeep.decay(now=time.time())
        states = {m.content: (m.state, m.created_at) for m in _memories(service)}
        assert states["We talked about the garden shed."][0] not in lifecycle_rules.FADED
        assert states["We talked about the garden shed."][1] == _at(2023)  # recall's recency: when it was said
        horizon = lifecycle_rules.ARCHIVE_AFTER_TTLS * lifecycle_rules.ttl_days("message") * 86400
        service.upkeep.decay(now=time.time() + horizon + 86400)  # untouched that long after the import
        states = {m.content: m.state for m in _memories(service)}
        assert states["We talked about the garden shed."] == "archived"


@pytest.mark.store
def test_an_imported_message_carries_the_end_of_the_one_before_and_is_worth_a_live_turn(home, tmp_path):
    long = "word " * 200 + "Which bakery sells the rye?"
    export = _chatgpt.write(tmp_path / "conversations.json", [_chatgpt.conversation(ID_2023, "t", [
        ("user", "Where is the ferry?", _at(2023)), ("assistant", "At pier 4.", _at(2023) + 1),
        ("user", long, _at(2023) + 2), ("assistant", "Fjordbrød.", _at(2023) + 3)])])
    imported(home, "--no-learn", str(export))
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        context = {m.content: m.context for m in _memories(service)}
        worth = {m.confidence for m in _memories(service)}
    assert worth == {lifecycle_rules.TURN_RELIABILITY}  # what the same turn kept live through Hermes is worth
    assert context["Where is the ferry?"] is None and context["At pier 4."] == "Where is the ferry?"
    assert context[long] == "At pier 4."
    assert context["Fjordbrød."].endswith("Which bakery sells the rye?") and context["Fjordbrød."].startswith("word ")
    assert len(context["Fjordbrød."]) <= 400


@pytest.mark.store
def test_the_schedulers_learn_job_reads_a_batch_of_imported_conversations_a_run(home, tmp_path, monkeypatch):
    said = [(f"6f1c2a52-0000-4a7e-9e1e-{n:012d}", 2023, [f"I use Tool{n} for notes."]) for n in range(3)]
    imported(home, "--no-learn", str(_export(tmp_path / "conversations.json", *said)))
    monkeypatch.setattr(service_module, "HISTORY_BATCH", 2)  # user turns
    service = MemoryService(Settings.load(home), start_indexer=False)
    try:  # (its first lease only starts the clocks, a sweep interval ahead; the job is run here)
        interval, job = service.scheduler.jobs["learn"]
        assert interval == service.settings.sweep_interval_s
        assert job(time.time())["sessions"] == 2
        service.scheduler.stop()  # closing: the job reads nothing more, and the turn waits
        assert job(time.time()) == {**NOTHING_WAITS, "waiting": 1, "waiting_turns": 1}
    finally:
        service.close()
    with MemoryService(Settings.load(home), start_indexer=False) as service:
        _, job = service.scheduler.jobs["learn"]
        assert job(time.time())["sessions"] == 1 and job(time.time()) == NOTHING_WAITS


@pytest.mark.store
def test_import_reads_a_bounded_number_and_maintain_reads_the_rest(home, tmp_path, monkeypatch):
    said = [(f"6f1c2a52-0000-4a7e-9e1e-{n:012d}", 2023, [f"I use Tool{n} for notes."]) for n in range(3)]
    monkeypatch.setattr(cli_transfer, "LEARN_AT_IMPORT", 2)  # user turns
    dry = imported(home, "--dry-run", str(_export(tmp_path / "conversations.json", *said)))
    assert dry["learning"] == {"user_turns": 3, "at_import": 2, "waiting": 1, "then": cli_transfer.READ_LATER}
    summary = imported(home, str(_export(tmp_path / "conversations.json", *said)))
    assert summary["learned"] == {"sessions": 2, "turns": 2, "learned": summary["learned"]["learned"], "waiting": 1,
                                  "waiting_turns": 1, "then": cli_transfer.READ_LATER}
    assert "maintain --job learn" in cli_transfer.READ_LATER
    done = run(home, "maintain", "--job", "learn")
    assert done.returncode == 0 and json.loads(done.stdout)["learn"]["sessions"] == 1, done.stderr
    assert json.loads(run(home, "maintain", "--job", "learn").stdout)["learn"] == NOTHING_WAITS


@pytest.mark.quick
@pytest.mark.store
@pytest.mark.embedded_only  # (reads the store's own files)
def test_a_private_key_in_an_imported_turn_leaves_no_line_of_itself_in_the_next_ones_context(home, tmp_path):
    body = base64.b64encode(bytes(range(256)) * 4 + bytes(range(166))).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    export = _chatgpt.write(tmp_path / "conversations.json", [_chatgpt.conversation(ID_2023, "t", [
        ("user", "Why does ssh reject this key?\n" + pem, _at(2023)), ("assistant", "Let me look.", _at(2023) + 1),
        ("user", "Also this one", _at(2023) + 2), ("assistant", "Here it is:\n" + pem, _at(2023) + 3),
        ("user", "ok", _at(2023) + 4)])])
    imported(home, str(export))
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        context = {m.content: m.context for m in _memories(service)}
    assert context["Let me look."].endswith("[REDACTED:private-key]"), context  # as a live turn's context
    assert context["ok"].endswith("[REDACTED:private-key]"), context
    exported = run(home, "export", "--output", "-")
    assert exported.returncode == 0, exported.stderr
    stored = b"".join(path.read_bytes() for path in (home / "cmms").rglob("*") if path.is_file())
    assert "ssh reject" in exported.stdout and stored.count(b"ssh reject")
    found = [line for line in lines if line.encode() in stored or line in exported.stdout]
    assert not found, f"{len(found)} of the key's {len(lines)} lines stored"


def _told_live(home: Path, session_id: str, said: str, at: Optional[float] = None) -> None:
    """`said` told in a live Hermes turn, flushed (its learned facts dated `at`, if given)."""
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        service.retain_turn(SCOPE, session_id, said, "Noted.")
        service.flush_session(SCOPE, session_id)
        if at is not None:
            with service.store.writing([SCOPE]) as conn:
                conn.execute(update(Memory).where(Memory.source == "extract:session").values(created_at=at))


def _facts_of(home: Path, subject: str, predicate: str) -> dict[str, bool]:
    """object -> whether it is current, of every fact of `subject` and `predicate`."""
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service, \
            service.store.read() as conn:
        return {obj: replaced is None for obj, replaced in conn.execute(select(Fact.object, Memory.superseded_by).join(
            Memory, Memory.id == Fact.memory_id).where(Fact.subject == subject, Fact.predicate == predicate))}


@pytest.mark.store
def test_a_live_fact_told_again_today_counts_as_said_today_against_imported_history(home, tmp_path):
    _told_live(home, "live-1", "I live in Oslo.", at=_at(2022))  # first told in 2022
    _told_live(home, "live-2", "I live in Oslo.")  # and again today: reinforced
    imported(home, str(_export(tmp_path / "2024.json", (ID_2024, 2024, ["I live in Ghent."]))))
    assert _facts_of(home, "user", "lives in") == {"Oslo": True, "Ghent": False}
    _told_live(home, "live-3", "I live in Ghent now.")  # live against live: the one said last, as before
    assert _facts_of(home, "user", "lives in") == {"Oslo": False, "Ghent": True}


@pytest.mark.store
def test_a_fact_from_an_imported_turn_of_unknown_date_replaces_no_dated_or_live_one(home, tmp_path):
    _told_live(home, "live-1", "I live in Oslo.", at=time.time() - 86400)  # yesterday
    undated = _chatgpt.write(tmp_path / "undated.json", [_chatgpt.conversation(ID_2024, "t", [
        ("user", "I live in Ghent.", None), ("assistant", "Noted.", None)])])
    summary = imported(home, str(undated))  # dated by the file's modification time: now
    assert summary["dated"] == {"sessions dated by the file's modification time": 1,
                                "memories dated by their conversation": 2}
    assert _facts_of(home, "user", "lives in") == {"Oslo": True, "Ghent": False}
    imported(home, str(_export(tmp_path / "2023.json", (ID_2023, 2023, ["My sister Ilse lives in Tromsø."]))))
    undated = _chatgpt.write(tmp_path / "undated-2.json", [_chatgpt.conversation(
        "6f1c2a52-0000-4a7e-9e1e-000000000003", "t", [("user", "My sister Ilse lives in Bergen.", None)])])
    imported(home, str(undated))  # a dated import's fact stays current too
    assert _facts_of(home, "Ilse", "lives in") == {"Tromsø": True, "Bergen": False}


@pytest.mark.store
def test_an_imported_date_to_come_is_brought_back_to_the_import_and_replaces_nothing(home, tmp_path):
    _told_live(home, "live-1", "I live in Oslo.", at=time.time() - 86400)  # yesterday
    future = _export(tmp_path / "2030.json", ("6f1c2a52-2030-4a7e-9e1e-000000000002", 2030, ["I live in Ghent."]))
    dry = imported(home, "--dry-run", str(future))
    assert dry["dated"] == {"sessions dated in the future, dated at the import": 1,
                            "memories dated in the future, dated at the import": 2}
    started = time.time()
    summary = imported(home, str(future))
    assert summary["to"] is not None and summary["to"] < "2030"
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        dates = [m.created_at for m in _memories(service) if m.source == "import:chatgpt"]
    assert len(dates) == 2 and all(started - 60 < at <= time.time() for at in dates), dates
    assert _facts_of(home, "user", "lives in") == {"Oslo": True, "Ghent": False}


@pytest.mark.quick
@pytest.mark.store
def test_a_long_conversation_is_claimed_a_chunk_at_a_time_so_a_stopped_run_loses_no_turn(home, tmp_path):
    said = [f"I use Tool{n} for notes." for n in range(120)]
    imported(home, "--no-learn", str(_export(tmp_path / "conversations.json", (ID_2023, 2023, said))))
    asked = []

    def stop() -> bool:  # a closing process: true once the first claim is read
        asked.append(1)
        return len(asked) > 2
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        first = service.upkeep.learn_history(stop=stop)
        assert (first["turns"], first["waiting"], first["waiting_turns"]) == (learn.CLAIM_TURNS, 1, 120 - learn.CLAIM_TURNS)
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        [(scope, session_id)] = service.store.unread_sessions()
        claimed = service.store.claim_unextracted(scope, session_id, 10)  # claimed, then killed before reading
        assert [m.content for m in claimed] == said[learn.CLAIM_TURNS:learn.CLAIM_TURNS + 10]
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        rest = service.upkeep.learn_history(limit=1000)  # a new process continues after the claim lost
        assert (rest["turns"], rest["waiting"], rest["waiting_turns"]) == (120 - learn.CLAIM_TURNS - 10, 0, 0)
        read = [m.content for m in _memories(service) if m.source == "extract:session" and m.kind == "fact"]
    tools = sorted(int(text.split("Tool")[1].split()[0]) for text in read)
    assert tools == [n for n in range(120) if not learn.CLAIM_TURNS <= n < learn.CLAIM_TURNS + 10], tools


@pytest.mark.store
def test_the_learning_budget_counts_user_turns_not_conversations(home, tmp_path):
    said = [(ID_2023, 2023, [f"I use Tool{n} for notes." for n in range(70)]),
            (ID_2024, 2024, ["I use Vim for code."])]
    imported(home, "--no-learn", str(_export(tmp_path / "conversations.json", *said)))
    with MemoryService(Settings.load(home), scheduler=False, start_indexer=False) as service:
        done = []
        first = service.upkeep.learn_history(limit=60, progress=lambda n, total: done.append((n, total)))
        assert (first["sessions"], first["turns"], first["waiting"], first["waiting_turns"]) == (1, 60, 2, 11)
        assert done == [(learn.CLAIM_TURNS, 60), (60, 60)]
