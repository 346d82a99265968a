"""The redaction corpus (tests/data/secrets_corpus.json): realistic pasted secrets are masked
and near-misses survive; and no door that stores or logs text keeps a secret anywhere.

Every field gets a secret as it was pasted (with its key or prefix). A bare value with nothing
around it (a password alone, 32 hex digits alone) looks like any other word or hash: no
redactor can tell, so that is not what these tests send."""
import json
import logging
import re
import uuid
from pathlib import Path

import pytest

from hermes_cmms.common.plugins import make_plugin_manager
from hermes_cmms.provider import CmmsMemoryProvider
from hermes_cmms.redact import redact_key, redact_text

from db import dump, on_postgres
from inprocess import cli, memory_bridge
from mcp_client import run

CORPUS = json.loads((Path(__file__).parents[1] / "data" / "secrets_corpus.json").read_text())
SECRETS, NEAR_MISSES = CORPUS["secrets"], CORPUS["near_misses"]
ALL_SECRETS = [secret for entry in SECRETS for secret in entry["secrets"]]


def test_the_corpus_is_big_and_well_formed():
    assert len(SECRETS) >= 60 and len(NEAR_MISSES) >= 25
    assert all(secret in entry["text"] for entry in SECRETS for secret in entry["secrets"])
    assert len({entry["label"] for entry in SECRETS + NEAR_MISSES}) == len(SECRETS) + len(NEAR_MISSES)


@pytest.mark.quick
@pytest.mark.parametrize("entry", SECRETS, ids=[e["label"] for e in SECRETS])
def test_every_secret_of_the_corpus_is_masked(entry):
    out = redact_text(entry["text"])
    assert [secret for secret in entry["secrets"] if secret in out] == []
    assert "[REDACTED:" in out
    assert redact_text(out) == out  # redacting twice changes nothing


@pytest.mark.parametrize("entry", NEAR_MISSES, ids=[e["label"] for e in NEAR_MISSES])
def test_every_near_miss_survives_unchanged(entry):
    assert redact_text(entry["text"]) == entry["text"]


def test_the_words_around_a_secret_are_kept():
    assert redact_text("DB_HOST=db1\nDB_PASSWORD=v9#Lq2!x\nDB_PORT=5432") == \
        "DB_HOST=db1\nDB_PASSWORD=[REDACTED:password]\nDB_PORT=5432"
    assert redact_text("db settings: password=Hunter2Hunter2 host=db1") == \
        "db settings: password=[REDACTED:password] host=db1"
    assert redact_text("pay with 4242-4242-4242-4242 today") == "pay with [REDACTED:card-number] today"


def test_a_redacted_key_is_stable_and_keeps_distinct_secrets_distinct():
    a, b = "sess-sk_live_" + "a1B2" * 8, "sess-sk_live_" + "c3D4" * 8
    assert redact_key(a) == redact_key(a) != redact_key(b)
    assert all("sk_live_" not in redact_key(key) and redact_key(key).startswith("sess-[REDACTED:stripe-key:")
               for key in (a, b))
    assert redact_key("session-2026-12-01") == "session-2026-12-01"


def test_redacting_a_redacted_key_changes_nothing():
    key = redact_key("sess-ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98")
    assert key.count("[REDACTED:") == 1 and key.startswith("sess-[REDACTED:github-token:")
    assert redact_key(key) == redact_text(key) == key  # the marker's "token:<digest>" is no pair


def test_log_records_of_every_hermes_cmms_logger_are_redacted(caplog):
    make_plugin_manager(load_entry_points=False)
    secret = SECRETS[0]["secrets"][0]
    with caplog.at_level(logging.INFO):
        for name in ("hermes_cmms", "hermes_cmms.service", "hermes_cmms.hooks.auto_retain",
                     "hermes_cmms.mcp_bridge.server", "hermes_cmms.knowledge.extract._facts"):
            logging.getLogger(name).warning("hermes-cmms: failed for key=%s", secret)
        try:
            raise ValueError(f"the store refused {secret}")
        except ValueError:
            logging.getLogger("hermes_cmms.store.store").exception("hermes-cmms: write failed")
    assert len(caplog.records) == 6
    assert secret not in caplog.text and "[REDACTED:stripe-key]" in caplog.text


# -- every door, end to end ---------------------------------------------------------------------

def _provider_turns(home) -> None:
    """Hermes' own path: every corpus text as a user turn, and a tool call whose error echoes it."""
    p = CmmsMemoryProvider()
    p.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="default")
    for entry in SECRETS + NEAR_MISSES:
        p.sync_turn(entry["text"], "Noted.", session_id="s1")
    for entry in SECRETS:
        answer = json.loads(p.handle_tool_call("cmms_forget", {"memory_id": entry["text"]}))
        assert "error" in answer
    p.shutdown()


async def _mcp_doors(home) -> list[str]:
    """store_memory with the pasted secret in the text, actor and source; forget_memory whose
    error echoes it; then everything list_memories and recall_memory return."""
    answers = []
    async with memory_bridge(home) as bridge:
        for entry in SECRETS:
            pasted = entry["text"]
            stored = await bridge.call("store_memory", content=pasted, scope="mcp:dana", actor=pasted, source=pasted)
            failed = await bridge.call("forget_memory", scope="mcp:dana", memory_id=pasted, actor=pasted)
            assert failed.error  # its message echoes the caller's own argument back: not stored
            answers.append(stored.text)
        for offset in (0, 100):
            answers.append(json.dumps(await bridge.ok("list_memories", scope="mcp:dana", limit=100, offset=offset)))
        for entry in SECRETS:
            answers.append(json.dumps(await bridge.ok("recall_memory", query="about " + entry["text"][:200], scope="mcp:dana")))
    return answers


def _import_file(path: Path) -> Path:
    """An export file whose every string field (role, kind, speaker, session_id, source...) holds
    a secret of the corpus, as it was pasted."""
    now = 1796000000.0
    sessions, memories = [], []
    for i, entry in enumerate(SECRETS):
        pasted = entry["text"]
        sessions.append({"type": "session", "session_id": f"sess-{pasted}", "started_at": now, "last_turn": 1,
                         "flushed_at": None, "extracted_turn": 0})
        memories.append({"type": "memory", "id": uuid.uuid4().hex, "tier": "episodic", "kind": f"message {pasted}",
                         "role": pasted, "content": pasted, "context": pasted, "session_id": f"sess-{pasted}",
                         "turn": 1, "source": pasted, "tags": [pasted], "confidence": 0.8, "state": "active",
                         "superseded_by": None, "created_at": now + i, "updated_at": now, "expires_at": None,
                         "speaker": pasted, "access_count": 0, "receipts": [{"source": pasted}], "reliability": 0.8,
                         "last_seen_at": now, "consolidated_at": None, "detail": {"note": pasted}})
    audits = [{"type": "audit", "at": now + i, "action": "retain", "actor": entry["text"], "memory_id": None,
               "detail": {"error": f"bad argument {entry['text']}"}, "snapshot": None}
              for i, entry in enumerate(SECRETS[:10])]
    header = {"type": "header", "format": "hermes-cmms-export", "version": 1, "scope": "import:dana",
              "exported_at": now, "counts": {"sessions": len(sessions), "memories": len(memories),
                                             "audit_events": len(audits)}}
    path.write_text("\n".join(json.dumps(r) for r in [header, *sessions, *memories, *audits]) + "\n")
    return path


SHORT = 8  # a secret this short (a PIN) also turns up by chance inside ids and timestamps


def _leaks(text: str) -> list[str]:
    """The corpus secrets found in `text`, in any case (the keyword index lower-cases words);
    a short one only as a word of its own (not a group of a UUID: "-4831-")."""
    lowered = text.lower()
    return [secret for secret in ALL_SECRETS
            if (re.search(rf"(?<![0-9a-z\-]){re.escape(secret.lower())}(?![0-9a-z\-])", lowered)
                if len(secret) < SHORT else secret in text or secret.lower() in lowered)]


def _stored(home) -> str:
    """Everything the store holds: the raw bytes of every file under $HERMES_HOME/cmms (embedded:
    SQLite pages, WAL, FTS5 segments, Chroma), or a dump of every table (PostgreSQL)."""
    if on_postgres(home):
        return dump(home)
    return b"".join(p.read_bytes() for p in sorted((home / "cmms").rglob("*")) if p.is_file()).decode(
        "utf-8", "replace")


@pytest.mark.store
def test_no_door_stores_or_returns_a_secret(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    _provider_turns(home)
    answers = run(_mcp_doors(home))
    imported = cli(home, "import", str(_import_file(tmp_path / "secrets.jsonl")), "--quiet")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["memories"]["added"] == len(SECRETS)
    outputs = [cli(home, "export", "--scope", scope, "--quiet") for scope in ("local:default", "mcp:dana", "import:dana")]
    outputs.append(cli(home, "audit-log", "--json", "--snapshots", "--limit", "5000"))
    assert all(out.returncode == 0 for out in outputs), [out.stderr for out in outputs]
    exported = "".join(out.stdout for out in outputs)
    assert _leaks(exported) == []
    assert _leaks("".join(answers)) == []
    assert _leaks(_stored(home)) == []
    kept = [entry["text"] for entry in NEAR_MISSES if json.dumps(entry["text"])[1:-1] not in outputs[0].stdout]
    assert kept == []  # near-misses come back exactly as said
    assert '"session_id": "sess-[REDACTED:' in outputs[2].stdout  # ids masked, not dropped
    assert exported.count("[REDACTED:") > 4 * len(SECRETS)


def test_a_tool_error_is_redacted_before_it_is_cut(keyword_service):
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98"
    keyword_service.upkeep.record_call("mcp:test", "forget_memory", "test:audit", False,
                                "x" * 273 + f" id {token} was not found")  # a cut at 300 keeps 23 of its characters
    [event] = keyword_service.audit_log("test:audit")
    error = event.detail["error"]
    assert len(error) <= 300 and token[:12] not in error and error.startswith("x" * 273)


@pytest.mark.quick
def test_the_store_redacts_what_a_plugin_writes_past_admission(keyword_service, home):
    from hermes_cmms import NewMemory

    pasted = [entry["text"] for entry in SECRETS[:6]]
    [memory_id] = keyword_service.store.add([NewMemory(
        scope="test:store", content=pasted[0], role=pasted[1], kind=pasted[2], source=pasted[3],
        tags=(pasted[4],), detail={"note": pasted[5]})])
    assert keyword_service.store.get([memory_id], "test:store")[memory_id].content.count("[REDACTED:") == 1
    assert _leaks(_stored(home)) == []

