"""A gateway platform without user ids (Hermes' api_server) never shares the owner's memory:
each API conversation, or each client session key, has a scope of its own.

The API test runs Hermes' real APIServerAdapter (aiohttp on 127.0.0.1) and posts OpenAI-style
requests to it, so the provider is initialised with exactly the kwargs the gateway passes
(platform "api_server", the session id it derives, X-Hermes-Session-Key as
gateway_session_key, no user_id). The model is the fake LLM of tests/fake_llm.py.
"""
from __future__ import annotations

import json

import pytest

from conftest import free_port
from hermes_cmms.provider import CmmsMemoryProvider, on_gateway_event, scope_for
from test_hermes_e2e import (assert_not_recalled_in, assert_recalled_in, configure, llm,  # noqa: F401
                             run_driver, stored)

KEY = "a-strong-api-server-key-0123456789abcdef"
CAT, DOG, LOCKER = "My cat is called Biscuit.", "My dog is called Rex.", "My locker code is 4711."

API_DRIVER = '''
import asyncio, json, sys, time

import aiohttp

spec = json.loads(sys.argv[1])
from gateway.config import PlatformConfig
from gateway.platforms.api_server import APIServerAdapter
from hermes_cmms import Settings
from hermes_cmms.store.store import Store


async def main():
    adapter = APIServerAdapter(PlatformConfig(enabled=True, extra={
        "host": "127.0.0.1", "port": spec["port"], "key": spec["key"]}))
    assert await adapter.connect(), "the API server did not start"
    url = f"http://127.0.0.1:{spec['port']}/v1/chat/completions"
    answers = []
    try:
        async with aiohttp.ClientSession() as client:
            for headers, text in spec["requests"]:
                body = {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}
                async with client.post(url, json=body, headers={"Authorization": "Bearer " + spec["key"],
                                                                 **headers}) as reply:
                    answers.append([reply.status, await reply.text()])
                await asyncio.sleep(0)
                wait_for_turns(len(answers))  # the api_server syncs turns in the background
    finally:
        await adapter.disconnect()
    print("RESULT " + json.dumps(answers))


def wait_for_turns(count, timeout=30.0):
    store, deadline = Store(Settings.load().database_url), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with store.read() as conn:
                done = conn.exec_driver_sql(
                    "SELECT count(*) FROM memories WHERE role = 'user' AND source = 'hermes:api_server'").scalar()
            if done >= count:
                return
            time.sleep(0.1)
        raise SystemExit(f"only {done} of {count} API turns were stored")
    finally:
        store.close()


asyncio.run(main())
'''


def _owner(home):
    """The profile's owner at the CLI: the provider as Hermes' CLI initialises it."""
    provider = CmmsMemoryProvider()
    provider.initialize("cli-1", platform="cli", hermes_home=str(home), agent_context="primary",
                        agent_identity="default", agent_workspace="hermes")
    return provider


@pytest.mark.slow
@pytest.mark.store
def test_api_conversations_and_the_owner_see_none_of_each_others_memories(home, tmp_path, llm, monkeypatch):
    configure(home, llm)
    monkeypatch.setenv("CMMS_EMBEDDER", "none")  # keyword recall is enough here, and quick to start
    monkeypatch.setenv("CMMS_SCHEDULER", "off")
    owner = _owner(home)
    owner.sync_turn(CAT, "What a lovely name!", session_id="cli-1")
    owner.shutdown()
    requests = [
        [{}, DOG],                                                 # conversation 1
        [{}, "What is my cat's name? And my dog's?"],              # conversation 2
        [{"X-Hermes-Session-Key": "client-1"}, LOCKER],            # client 1, one transcript
        [{"X-Hermes-Session-Key": "client-1"}, "Which locker code did I give you?"],  # client 1, another
        [{"X-Hermes-Session-Key": "client-2"}, "Tell me my locker code."],            # client 2
    ]
    answers = run_driver(home, tmp_path, API_DRIVER, {"port": free_port(), "key": KEY, "requests": requests},
                         API_SERVER_KEY=KEY)
    assert [status for status, _ in answers] == [200] * len(requests), answers

    second = llm.turn("What is my cat's name?")
    for text in ("Biscuit", "Rex"):
        assert_not_recalled_in(second, text)
    assert_recalled_in(llm.turn("Which locker code did I give you?"), "4711")  # same key: remembered
    assert_not_recalled_in(llm.turn("Tell me my locker code."), "4711")  # another key
    owner = _owner(home)
    block = owner.prefetch("Do you know my dog's name, or my locker code, or my cat's?")
    owner.shutdown()
    assert "Biscuit" in block and "Rex" not in block and "4711" not in block, block

    scopes = {r.content: r.scope for r in stored(home, "") if r.role == "user" and r.kind == "message"}
    assert scopes[CAT] == "local:default"
    assert scopes[DOG].startswith("conversation:api_server:api-")
    assert scopes[LOCKER] == scopes["Which locker code did I give you?"] == "conversation:api_server:client-1"
    assert len({scopes[DOG], scopes["What is my cat's name? And my dog's?"], scopes[LOCKER],
                scopes["Tell me my locker code."], scopes[CAT]}) == 5


# -- the rule, and the gateway hook, in process --------------------------------------------------


@pytest.mark.quick
@pytest.mark.parametrize("platform", [None, "cli", "tui", "desktop", "acp", "local"])
def test_only_the_local_platforms_get_the_owners_scope(platform):
    assert scope_for(platform, None, "work") == "local:work"


@pytest.mark.parametrize("platform", ["api_server", "webhook", "homeassistant", "some_plugin"])
def test_a_platform_without_user_ids_gets_a_scope_per_conversation(platform):
    assert scope_for(platform, None, "default", "key-1") == f"conversation:{platform}:key-1"
    assert scope_for(platform, None, "default", None) != scope_for(platform, None, "default", None)
    assert scope_for(platform, "42", "default", "key-1") == f"user:{platform}:42"


def _api_provider(home, session_id, **extra):
    """The provider initialised with the kwargs agent_init passes for an api_server agent."""
    provider = CmmsMemoryProvider()
    provider.initialize(session_id=session_id, platform="api_server", hermes_home=str(home),
                        agent_context="primary", agent_identity="default", agent_workspace="hermes", **extra)
    return provider


@pytest.mark.store
def test_the_gateway_hook_flushes_a_conversation_named_by_its_session_key(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    keyed = _api_provider(home, "api-1", gateway_session_key="client-1")
    keyed.sync_turn(LOCKER, "Noted.", session_id="api-1")
    plain = _api_provider(home, "api-2")
    plain.sync_turn(DOG, "Noted.", session_id="api-2")
    assert (keyed.scope, plain.scope) == ("conversation:api_server:client-1", "conversation:api_server:api-2")
    on_gateway_event("session:end", {"platform": "api_server", "user_id": None, "session_key": "client-1"})
    open_sessions = keyed.service.store.unflushed_sessions()
    assert open_sessions == [("conversation:api_server:api-2", "api-2")], open_sessions
    assert json.loads(plain.handle_tool_call("cmms_recall", {"query": "locker code"}))["results"] == []
    keyed.shutdown()
    plain.shutdown()
