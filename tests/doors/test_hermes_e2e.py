"""End to end: real Hermes drives the cmms provider against a fake LLM on 127.0.0.1.

Nothing is mocked. The fake LLM (tests/fake_llm.py) is a real HTTP server in its own
process that logs every chat-completions request, so each test reads back the exact
bytes Hermes sent to the model and looks inside the `<memory-context>` block Hermes
appended to the user message. The Hermes home gets its model config first, then the
plugin through the project's own installer. Every Hermes session runs in a fresh
process with HERMES_HOME set before Hermes is imported (Hermes caches paths derived
from it at import time), so recall in a later session also proves the memory
survived a restart.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conftest import hermes_bin, subprocess_env
from hermes_cmms import MemoryService, Settings
from hermes_cmms.install import install
from hermes_cmms.store.store import Store
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

# Real Hermes processes. The gateway test runs on both backends (a gateway serving many users is
# what PostgreSQL + a Chroma server are for); the others check the Hermes door over the engine,
# which the `store` tests cover on both: the embedded pass is enough for them.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parents[1]
CAT = "My cat is called Biscuit."
QUESTION = "What is my cat's name?"
BLOCK = re.compile(r"<memory-context>(.*?)</memory-context>", re.S)
PROCESS_TIMEOUT_S = 120
QUIET_ENV = {"TIRITH_ENABLED": "false"}  # no background download of Hermes' command scanner

# One Hermes session: a fresh AIAgent, the given user turns, then the CLI's exit sequence.
AGENT_DRIVER = '''
import json, sys

spec = json.loads(sys.argv[1])
from hermes_state import SessionDB  # imported only now: HERMES_HOME is already set
from run_agent import AIAgent

agent = AIAgent(quiet_mode=True, session_db=SessionDB(), **spec["agent"])
manager = agent._memory_manager
history, replies = [], []
for message in spec["messages"]:
    result = agent.run_conversation(message, conversation_history=history)
    history = result["messages"]
    replies.append(result.get("final_response"))
if manager is not None:
    manager.flush_pending(timeout=10)  # as cli.py does before ending the session
agent.shutdown_memory_provider(agent._session_messages)
agent.close()
providers = [p.name for p in manager.providers] if manager else []
print("RESULT " + json.dumps({"session_id": agent.session_id, "replies": replies,
                              "providers": providers}))
'''

# Hermes' gateway runner with a network-free Telegram adapter. Covered: GatewayRunner's
# own message pipeline (_handle_message: user authorisation from TELEGRAM_ALLOWED_USERS,
# per-chat session keys and the session store, the per-chat agent cache, AIAgent built
# with user_id/user_name/chat_id/platform exactly as the gateway builds it, /new tearing
# the old agent down through _cleanup_agent_resources, the gateway hooks from
# $HERMES_HOME/hooks, and stop() shutting every cached agent down). Not covered: start()
# connecting real platforms, and the adapter's handle_message() task spawning in front of
# _handle_message; the fake adapter is registered the way start() registers one.
GATEWAY_DRIVER = '''
import asyncio, json, sys

spec = json.loads(sys.argv[1])
from gateway.config import GatewayConfig, Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, SendResult
from gateway.run import GatewayRunner
from gateway.session import SessionSource


class FakeTelegram(BasePlatformAdapter):
    """Telegram without a network: what the bot sends is kept in a list."""

    def __init__(self, config):
        super().__init__(config, Platform.TELEGRAM)
        self.sent = []

    async def connect(self, *, is_reconnect=False):
        return True

    async def disconnect(self):
        pass

    async def send(self, chat_id, content, reply_to=None, metadata=None):
        self.sent.append([chat_id, content])
        return SendResult(success=True, message_id=str(len(self.sent)))

    async def get_chat_info(self, chat_id):
        return {"name": chat_id, "type": "dm"}


async def main():
    config = GatewayConfig(platforms={Platform.TELEGRAM: PlatformConfig(enabled=True, token="fake")})
    runner = GatewayRunner(config)
    runner.hooks.discover_and_load()
    adapter = FakeTelegram(config.platforms[Platform.TELEGRAM])
    runner.adapters[Platform.TELEGRAM] = adapter
    adapter.set_message_handler(runner._handle_message)
    adapter.set_session_store(runner.session_store)
    replies = []
    for number, (user_id, user_name, text) in enumerate(spec["messages"], 1):
        source = SessionSource(platform=Platform.TELEGRAM, chat_id=user_id, chat_type="dm",
                               user_id=user_id, user_name=user_name)
        event = MessageEvent(text=text, source=source, message_id=str(number))
        replies.append(await runner._handle_message(event))
    await runner.stop()
    print("RESULT " + json.dumps({"replies": replies, "sent": adapter.sent,
                                  "hooks": [h["name"] for h in runner.hooks.loaded_hooks]}))


asyncio.run(main())
'''


class FakeLLM:
    """The fake LLM server process and the requests it logged."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path):
        self.proc, self.port, self.log = proc, port, log
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def chat_requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        records = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [r["body"] for r in records
                if r["method"] == "POST" and r["path"].rstrip("/").endswith("/chat/completions")]

    def turn(self, text: str) -> dict:
        """The request of the agent turn whose user message is `text` (not auxiliary calls)."""
        found = [body for body in self.chat_requests() if last_user_message(body).startswith(text)]
        assert len(found) == 1, f"expected one chat request for {text!r}, got {len(found)}"
        return found[0]


def last_user_message(body: dict) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def memory_context(body: dict) -> str | None:
    """The inside of the `<memory-context>` block on the current user message, if any."""
    blocks = BLOCK.findall(last_user_message(body))
    return blocks[-1] if blocks else None


@pytest.fixture
def llm(tmp_path):
    log = tmp_path / "llm_requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(HERE / "fake_llm.py"), str(log)],
                            stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().split()  # "PORT <n>" once it listens
        assert first[:1] == ["PORT"], f"fake LLM did not start: {first!r}"
        yield FakeLLM(proc, int(first[1]), log)
    finally:
        proc.terminate()
        proc.wait(10)


def configure(home: Path, llm: FakeLLM, **extra) -> Path:
    """Write the model config, then install cmms with the project's installer."""
    model = {"default": "fake-model", "provider": "custom", "base_url": llm.base_url,
             "api_key": "sk-fake"}
    (home / "config.yaml").write_text(yaml.safe_dump({"model": model, **extra}), encoding="utf-8")
    install(home)
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    assert config["memory"]["provider"] == "cmms" and config["model"] == model
    return home


@pytest.fixture
def hermes_home(home, llm):
    return configure(home, llm)


def run(home: Path, args: list[str], **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, env=subprocess_env(home, **QUIET_ENV, **env), capture_output=True,
                          text=True, timeout=PROCESS_TIMEOUT_S)
    assert proc.returncode == 0, f"{args[:2]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def run_driver(home: Path, tmp_path: Path, source: str, spec: dict, **env: str) -> dict:
    script = tmp_path / "driver.py"
    script.write_text(source, encoding="utf-8")
    proc = run(home, [sys.executable, str(script), json.dumps(spec)], **env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"driver printed no result:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def agent_session(home: Path, tmp_path: Path, llm: FakeLLM, *messages: str) -> dict:
    agent = {"base_url": llm.base_url, "api_key": "sk-fake", "provider": "custom",
             "model": "fake-model", "platform": "cli"}
    result = run_driver(home, tmp_path, AGENT_DRIVER, {"agent": agent, "messages": list(messages)})
    assert result["providers"] == ["cmms"], "Hermes did not activate the cmms provider"
    assert all(reply and reply.startswith("FAKE-REPLY") for reply in result["replies"])
    return result


def stored(home: Path, text: str) -> list:
    """Every stored memory whose content contains `text`, across all scopes (raw rows)."""
    from sqlalchemy import select

    from hermes_cmms.store.models import Memory

    store = Store(Settings.load(home).database_url)
    try:
        with store.read() as conn:
            rows = conn.execute(select(Memory).where(Memory.content.contains(text)))
            return [Memory.model_validate(row._mapping) for row in rows]
    finally:
        store.close()


def assert_recalled_in(body: dict, text: str) -> None:
    block = memory_context(body)
    assert block is not None, f"no <memory-context> block in {last_user_message(body)!r}"
    assert text in block, f"{text!r} not inside the memory-context block:\n{block}"


def assert_not_recalled_in(body: dict, text: str) -> None:
    assert text not in (memory_context(body) or ""), f"{text!r} was recalled: {memory_context(body)}"


@pytest.mark.one_backend
def test_agent_recalls_a_fact_from_the_previous_session(hermes_home, tmp_path, llm):
    first = agent_session(hermes_home, tmp_path, llm, CAT)
    second = agent_session(hermes_home, tmp_path, llm, QUESTION)

    assert first["session_id"] != second["session_id"]
    assert_not_recalled_in(llm.turn(CAT), "Biscuit")  # nothing recalled before it was said
    assert_recalled_in(llm.turn(QUESTION), CAT)

    rows = stored(hermes_home, "Biscuit")
    assert [(r.role, r.content, r.session_id, r.turn, r.source) for r in rows if r.kind == "message"] == [
        ("user", CAT, first["session_id"], 1, "hermes:cli")]
    # the session flush learned a fact from the user's turn, linked to it
    learned = [(r.kind, r.content, r.source) for r in rows if r.kind != "message"]
    assert learned == [("fact", "user has cat Biscuit", "extract:session")]
    rows = [r for r in rows if r.kind == "message"]
    scope = rows[0].scope
    assert scope.startswith("local:"), scope
    replies = [r for r in stored(hermes_home, "FAKE-REPLY") if r.session_id == first["session_id"]]
    assert [(r.role, r.turn, r.scope) for r in replies] == [("assistant", 1, scope)]
    service = MemoryService(Settings.load(hermes_home))
    try:
        # The CLI exit sequence (flush_pending, then on_session_end) closed session 1.
        assert service.store.unflushed_sessions(scope=scope, session_id=first["session_id"]) == []
        service.upkeep.drain(60)  # whoever indexes the outbox, the vectors must be queryable
        hit = next(h for h in ranked(service.engine, scope, "cat") if h.memory.content == CAT)
        assert hit.keyword_rank is not None
        if service.indexer.active:  # keyword-only is a supported setup; with vectors, check them
            assert hit.vector_rank is not None
    finally:
        service.close()


@pytest.mark.one_backend
def test_a_changed_fact_reaches_the_block_as_the_current_one(hermes_home, tmp_path, llm):
    """What is true now: told one thing, then that it changed, Hermes' model is given the newer
    value marked (now) and the older, if at all, marked (earlier) (docs/lifecycle.md)."""
    agent_session(hermes_home, tmp_path, llm, "I live in Berlin.", "I like tea.")
    agent_session(hermes_home, tmp_path, llm, "I moved from Berlin to Lisbon last month.",
                  "I prefer coffee over tea now.")
    for question in ("Where do I live now?", "Do I prefer tea or coffee?"):  # a session each: none skips
        agent_session(hermes_home, tmp_path, llm, question)  # what the other's block showed

    def learned(question: str) -> list[str]:
        block = memory_context(llm.turn(question)) or ""
        return [line for line in block.splitlines() if line.startswith(("- fact", "- preference"))]

    assert [line for line in learned("Where do I live now?") if "lives in" in line] == [
        "- fact (earlier): user lives in Berlin", "- fact (now): user lives in Lisbon"]
    assert [line for line in learned("Do I prefer tea or coffee?") if "likes" in line] == [
        "- preference (earlier): user likes tea", "- preference (now): user likes coffee"]


@pytest.mark.one_backend
def test_a_chat_whose_store_cannot_be_written_is_told_that_memory_is_off(hermes_home, tmp_path, llm):
    """Hermes 0.19 leaves out a provider whose is_available() is False without a word: the chat
    went on, its turns were stored nowhere, and only agent.log said why. Now cmms stays in to say
    it: on the CLI's warning line, and to the model in the system prompt."""
    (hermes_home / "cmms").write_text("not a directory\n", encoding="utf-8")  # a file in the way stops root too
    script = tmp_path / "driver.py"
    script.write_text(AGENT_DRIVER, encoding="utf-8")
    agent = {"base_url": llm.base_url, "api_key": "sk-fake", "provider": "custom", "model": "fake-model",
             "platform": "cli"}
    proc = run(hermes_home, [sys.executable, str(script), json.dumps({"agent": agent, "messages": [CAT]})])
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["providers"] == ["cmms"] and result["replies"][0].startswith("FAKE-REPLY")
    why = f"The memory store cannot be written at {hermes_home / 'cmms'}: Not a directory."
    assert f"cmms memory is off, so nothing of this session will be remembered: {why}" in proc.stdout
    system = "".join(m["content"] for m in llm.turn(CAT)["messages"] if m["role"] == "system")
    assert f"Long-term memory (cmms) is OFF in this session: {why}" in system


@pytest.mark.one_backend
def test_hermes_z_whose_store_cannot_be_written_says_memory_is_off_on_stderr(hermes_home, llm):
    """`hermes -z` (0.19) sends standard error and its own warning line to the null device for the
    whole run and prints only the reply: memory that is off was said to nobody. Now cmms writes
    the one line to the process's standard error, and the reply on standard output is as it was."""
    (hermes_home / "cmms").write_text("not a directory\n", encoding="utf-8")  # a file in the way stops root too
    proc = run(hermes_home, [hermes_bin(), "-z", CAT])
    why = f"The memory store cannot be written at {hermes_home / 'cmms'}: Not a directory."
    assert proc.stdout.startswith("FAKE-REPLY") and "cmms" not in proc.stdout, proc.stdout
    assert proc.stderr == f"cmms memory is off, so nothing of this session will be remembered: {why}\n", proc.stderr


@pytest.mark.one_backend
def test_oneshot_cli_recalls_a_fact_from_the_previous_run(hermes_home, llm):
    hermes = hermes_bin()
    for text in (CAT, QUESTION):
        proc = run(hermes_home, [hermes, "-z", text])
        assert "FAKE-REPLY" in proc.stdout

    assert_not_recalled_in(llm.turn(CAT), "Biscuit")
    assert_recalled_in(llm.turn(QUESTION), CAT)
    # Under -z Hermes ends the session without flushing the sync queue first, so
    # on_session_end can run before the last sync_turn; the turn must be kept anyway.
    rows = [r for r in stored(hermes_home, "Biscuit") if r.kind == "message"]
    assert [(r.role, r.content, r.turn, r.source) for r in rows] == [("user", CAT, 1, "hermes:cli")]
    assert rows[0].scope.startswith("local:"), rows[0].scope


@pytest.mark.store
def test_gateway_keeps_each_users_memory_to_themselves(home, tmp_path, llm):
    configure(home, llm, approvals={"destructive_slash_confirm": False})
    alice, bob = ("111", "alice"), ("222", "bob")
    alice_asks = "Remind me: " + QUESTION
    result = run_driver(home, tmp_path, GATEWAY_DRIVER, {"messages": [
        [*alice, CAT], [*bob, QUESTION], [*alice, "/new"], [*alice, alice_asks]]},
        TELEGRAM_ALLOWED_USERS="111,222")

    assert "cmms-session-flush" in result["hooks"]
    assert result["replies"][0].startswith("FAKE-REPLY") and result["replies"][3].startswith("FAKE-REPLY")
    bob_request = llm.turn(QUESTION)
    assert "Biscuit" not in json.dumps(bob_request)  # not in recall, nor anywhere else
    assert_not_recalled_in(llm.turn(CAT), "Biscuit")
    assert_recalled_in(llm.turn(alice_asks), CAT)

    rows = {r.content: r for r in stored(home, "cat")}
    assert rows[CAT].scope == "user:telegram:111"
    assert rows[QUESTION].scope == "user:telegram:222"
    assert rows[alice_asks].scope == "user:telegram:111"
    assert rows[alice_asks].session_id != rows[CAT].session_id  # /new gave alice a fresh agent


@pytest.mark.one_backend
def test_gateway_whose_store_cannot_be_written_tells_the_model_and_logs_a_warning(home, tmp_path, llm):
    """0.19's gateway hands a provider no line to the chat (its status_callback is the agent's,
    set after the provider starts): what reaches someone is the system prompt, which asks the
    model to say memory is off, and the gateway's log, where Hermes and cmms write a WARNING."""
    configure(home, llm, approvals={"destructive_slash_confirm": False})
    (home / "cmms").write_text("not a directory\n", encoding="utf-8")
    result = run_driver(home, tmp_path, GATEWAY_DRIVER, {"messages": [["111", "alice", CAT]]},
                        TELEGRAM_ALLOWED_USERS="111")
    assert result["replies"][0].startswith("FAKE-REPLY")
    why = f"The memory store cannot be written at {home / 'cmms'}: Not a directory."
    system = "".join(m["content"] for m in llm.turn(CAT)["messages"] if m["role"] == "system")
    assert f"Long-term memory (cmms) is OFF in this session: {why}" in system
    logged = "".join(p.read_text(encoding="utf-8", errors="replace") for p in (home / "logs").glob("*.log"))
    assert f"WARNING hermes_cmms.hermes.provider: cmms memory is unavailable: {why}" in logged, logged[-3000:]
    assert f"Memory provider 'cmms' initialize failed: {why}" in logged, logged[-3000:]


# Hermes' own loader, then a session of near-paraphrases that ends (and so is consolidated).
CONSOLIDATION_DRIVER = '''
import json, sys

spec = json.loads(sys.argv[1])
from plugins.memory import load_memory_provider

p = load_memory_provider("cmms")
p.initialize("walks", platform="cli", agent_context="primary", hermes_home=spec["home"])
for text in spec["turns"]:
    p.sync_turn(text, "Lovely.", session_id="walks")
p.on_session_end([])
summariser = p.service.engine.summariser is not None
p.shutdown()
print("RESULT " + json.dumps({"summariser": summariser}))
'''
EPISODE = ["I walked the dog along the beach this morning.",
           "This morning I took the dog for a walk on the beach.",
           "The dog and I went walking on the beach early today."]


@pytest.mark.one_backend
def test_consolidation_summaries_come_from_the_users_model_through_hermes(home, tmp_path, llm):
    configure(home, llm, memory={"cmms": {"consolidation_llm": "hermes"}})
    result = run_driver(home, tmp_path, CONSOLIDATION_DRIVER, {"home": str(home), "turns": EPISODE})
    assert result["summariser"]
    asked = [b for b in llm.chat_requests() if last_user_message(b).startswith("Summarise these related")]
    assert len(asked) == 1 and all(text in last_user_message(asked[0]) for text in EPISODE)
    [summary] = [m for m in stored(home, "FAKE-REPLY") if m.kind == "summary"]
    assert (summary.tier, summary.source) == ("semantic", "consolidation")
    members = [m for m in stored(home, "beach") if m.superseded_by == summary.id]
    assert sorted(m.content for m in members) == sorted(EPISODE)


@pytest.mark.one_backend
def test_learning_at_session_end_uses_the_users_model_through_hermes(home, tmp_path, llm_server):
    model = SimpleNamespace(base_url=llm_server.url)  # every reply, the agent's too, is this text
    llm_server.say('FAKE-REPLY: [{"kind": "fact", "subject": "user", "predicate": "drives", '
                   '"object": "a green Volvo"}, {"kind": "fact", "subject": "user"}]')
    configure(home, model, memory={"cmms": {"llm": "hermes"}})
    agent_session(home, tmp_path, model, "Morning! Off to the garage later.")
    asked = [b for b in llm_server.requests() if "Extract durable knowledge" in json.dumps(b)]
    assert len(asked) == 1 and "Off to the garage" in json.dumps(asked[0])
    rows = [r for r in stored(home, "green Volvo") if r.kind != "message"]  # (the reply holds it too)
    # the malformed second item was dropped
    assert [(r.kind, r.content, r.source) for r in rows] == [("fact", "user drives a green Volvo", "extract:session")]


ROUTE_DRIVER = '''
import json, sys

spec = json.loads(sys.argv[1])
from plugins.memory import load_memory_provider

p = load_memory_provider("cmms")
p.initialize("r1", platform="cli", agent_context="primary", hermes_home=spec["home"])
p.service.store_note(p.scope, "The zebra crossing near the office was repainted.")
answer = json.loads(p.handle_tool_call("cmms_recall", {"query": "zebra crossing paint", "route": True}))
p.shutdown()
print("RESULT " + json.dumps(answer))
'''


@pytest.mark.one_backend
def test_the_router_asks_hermes_own_model_when_nothing_else_answers(home, tmp_path, llm_server):
    model = SimpleNamespace(base_url=llm_server.url)
    llm_server.say("FAKE-REPLY: keyword")
    configure(home, model, memory={"cmms": {"embedder": "none"}})  # llm is off: Hermes' model is used
    answer = run_driver(home, tmp_path, ROUTE_DRIVER, {"home": str(home)})
    assert (answer["stage"], answer["route"], answer["answered"]) == ("llm", "keyword", True)
    assert answer["results"][0]["content"] == "The zebra crossing near the office was repainted."
    asked = [b for b in llm_server.requests() if "Which memory retriever" in json.dumps(b)]
    assert len(asked) == 1 and "zebra crossing paint" in json.dumps(asked[0])
