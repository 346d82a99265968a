"""The MCP bridge through real MCP client sessions: in memory against the real server object
(tests/inprocess.py) for what the tools do, and end to end (`hermes-cmms mcp` as a process, over
stdio and streamable HTTP) for the transports, their bounds and tokens, and several processes
sharing one store. CI runs this whole module again on mcp 1.26 (the `bridge` mark)."""
from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from conftest import SERVER
from hermes_cmms import MemoryService, Settings, __version__
from hermes_cmms.common.ids import shown_id
from hermes_cmms.mcp_bridge import local_scope
from hermes_cmms.recall.render import HEADER
from hermes_cmms.store.availability import store_file
from inprocess import memory_bridge
from mcp_client import bridge_command, http_bridge, input_schema, run, stdio_bridge
from servers import free_port
from hermes_cmms.recall.search import search as ranked  # the engine's ranking: which index found each hit

pytestmark = [pytest.mark.store, pytest.mark.bridge]

CMMS_TOOLS = {"ping", "remember", "search", "get_context", "semantic_search", "learn", "graph_search", "route",
              "audit", "metrics", "set_belief", "get_belief", "resolve_conflict", "reflect"}
MEMSER_TOOLS = {"store_memory", "recall_memory", "forget_memory", "list_memories", "consolidate_memories",
                "audit_log"}
KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}
README = Path(__file__).parents[2] / "docs" / "mcp.md"  # (moved from the README)


def test_catalogue_has_both_seeds_names_each_described(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            return await bridge.tools()

    tools = run(main())
    assert set(tools) == CMMS_TOOLS | MEMSER_TOOLS
    for name, tool in tools.items():
        assert tool.description and "\n" not in tool.description and tool.description.endswith("."), name
        for prop, schema in input_schema(tool)["properties"].items():
            assert schema.get("description"), (name, prop)
    assert input_schema(tools["remember"])["required"] == ["subject", "predicate", "object"]
    assert input_schema(tools["store_memory"])["required"] == ["content", "scope"]
    assert input_schema(tools["search"])["properties"]["limit"]["type"] == "integer"


def test_the_server_names_itself_with_the_package_version(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            return bridge.server_info

    info = run(main())
    assert (info.name, info.version) == ("hermes-cmms", __version__)


@pytest.mark.quick
def test_cmms_tools_work_in_the_default_scope(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            pong = await bridge.ok("ping")
            stored = await bridge.ok("remember", subject="Alice", predicate="lives in", object="Lisbon",
                                     tags=["family"])
            await bridge.ok("remember", subject="Bob", predicate="lives in", object="Oslo", confidence=0.5)
            await bridge.ok("remember", subject="Alice", predicate="works as", object="a nurse")
            by_query = await bridge.ok("search", query="does Alice live in Lisbon")
            alice = await bridge.ok("search", query="", subject="alice")
            lives = await bridge.ok("search", query="Lisbon", predicate="lives in", limit=5)
            by_source = await bridge.ok("search", query="lives", source="user")
            no_source = await bridge.ok("search", query="lives", source="slack")
            context = await bridge.ok("get_context", task="plan a visit to Alice", max_results=3)
            return pong, stored, by_query, alice, lives, by_source, no_source, context

    pong, stored, by_query, alice, lives, by_source, no_source, context = run(main())
    scope = local_scope(home)
    assert pong["ok"] and pong["scope"] == scope and pong["memories"] == 0
    assert stored["id"] and stored["scope"] == scope
    top = by_query["results"][0]
    assert (top["id"], top["subject"], top["predicate"], top["object"]) == (stored["id"], "Alice", "lives in", "Lisbon")
    assert top["tags"] == ["family"] and top["kind"] == "fact"
    assert [r["confidence"] for r in by_query["results"] if r["subject"] == "Bob"] == [0.5]
    assert sorted(r["object"] for r in alice["results"]) == ["Lisbon", "a nurse"]
    assert [r["object"] for r in lives["results"]] == ["Lisbon"]
    assert len(by_source["results"]) == 2 and no_source["results"] == []
    assert "Alice lives in Lisbon" in context["context"] and context["memories"]
    with MemoryService(Settings.load(home, embedder="none")) as service:  # the same store
        assert service.store.counts()["memories"] == 3


RECALL_PLUGIN = Path(__file__).parents[1] / "recall_plugin_fixture"


def test_get_context_is_the_block_the_recall_hook_builds_as_for_hermes(home, monkeypatch):
    scope = local_scope(home)
    with MemoryService(Settings.load(home, embedder="none")) as service:
        service.store_note(scope, "The stamp album is in the attic.")
        budget = service.settings.recall_tokens
    monkeypatch.syspath_prepend(str(RECALL_PLUGIN))  # the plugin's dist-info: its entry point is found

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            return (await bridge.ok("get_context", task="where is the stamp album"),
                    await bridge.ok("get_context", task="where is the album", max_results=1))

    stamped, built_in = run(main())
    assert stamped["context"] == f"STAMPED for {scope} within {budget} tokens"  # a recall plugin's block
    assert stamped["memories"][0]["content"] == "The stamp album is in the attic."  # the items: search
    assert built_in["context"].startswith(HEADER) and "attic" in built_in["context"]
    assert [m["content"] for m in built_in["memories"]] == ["The stamp album is in the attic."]

def test_memser_tools_store_recall_list_and_forget_in_a_named_scope(home):
    scope, other = "user:telegram:42", "user:telegram:43"

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            ids = [(await bridge.ok("store_memory", content=text, scope=scope, tags=tags, actor="tester"))["id"]
                   for text, tags in [("The wifi password is in the blue folder", ["home"]),
                                      ("Dentist on Tuesday at nine", ["health", "home"]),
                                      ("Budget review with finance", ["work"])]]
            await bridge.ok("store_memory", content="Other user's folder", scope=other)
            temp = await bridge.ok("store_memory", content="Parking spot 14 until noon", scope=scope,
                                   ttl_seconds=1)
            recalled = await bridge.ok("recall_memory", query="folder", scope=scope, k=5)
            tagged = await bridge.ok("recall_memory", query="dentist folder", scope=scope, tags=["home", "health"])
            first = await bridge.ok("list_memories", scope=scope, limit=2)
            second = await bridge.ok("list_memories", scope=scope, limit=2, offset=2)
            working = await bridge.ok("list_memories", scope=scope, tier="working")
            await anyio.sleep(1.3)
            expired = await bridge.ok("list_memories", scope=scope, tier="working")
            parking = await bridge.ok("recall_memory", query="parking spot", scope=scope)
            gone_tag = await bridge.ok("forget_memory", scope=scope, tags=["home"])
            gone_id = await bridge.ok("forget_memory", scope=scope, memory_id=ids[2])
            missing = await bridge.call("forget_memory", scope=scope, memory_id=ids[2])
            left = await bridge.ok("list_memories", scope=scope)
            theirs = await bridge.ok("list_memories", scope=other)
            return (ids, temp, recalled, tagged, first, second, working, expired, parking, gone_tag,
                    gone_id, missing, left, theirs)

    (ids, temp, recalled, tagged, first, second, working, expired, parking, gone_tag, gone_id,
     missing, left, theirs) = run(main())
    assert [r["id"] for r in recalled["results"]] == [ids[0]]  # never the other scope's folder
    assert recalled["results"][0]["source"] == "mcp:store_memory by tester"
    assert [r["id"] for r in tagged["results"]] == [ids[1]]
    assert first["total"] == 4 and len(first["memories"]) == 2 and len(second["memories"]) == 2
    assert {m["id"] for m in first["memories"] + second["memories"]} == {*ids, temp["id"]}
    assert temp["tier"] == "working" and [m["id"] for m in working["memories"]] == [temp["id"]]
    assert expired["total"] == 0 and parking["results"] == []  # expired: never listed or recalled
    assert sorted(gone_tag["ids"]) == sorted(ids[:2]) and gone_id["forgotten"] == 1
    assert missing.error and "Unknown memory id" in missing.text
    assert left["total"] == 0 and theirs["total"] == 1


def test_bad_arguments_get_one_clear_sentence(home):
    calls = [("search", {"query": "x", "limit": "lots"}, "Argument 'limit' must be a whole number, not a string."),
             ("search", {"query": "x", "limit": 0}, "Argument 'limit' must be between 1 and 1000, not 0."),
             ("search", {"query": "x" * 10_001}, "Argument 'query' must hold 1 to 10,000 characters."),
             ("remember", {"subject": "", "predicate": "is", "object": "x"}, "The fact's subject must be a non-empty string."),
             ("remember", {"subject": "a", "predicate": "is", "object": "b", "confidence": 3},
              "Confidence must be a number from 0 to 1, not 3."),
             ("semantic_search", {"query": "x", "score_threshold": 2}, "Argument 'score_threshold' must be between 0 and 1, not 2."),
             ("store_memory", {"content": "hi", "scope": ""}, "A scope must be a non-empty string."),
             ("store_memory", {"content": "hi", "scope": "s", "ttl_seconds": -5}, "ttl_seconds must be a number of seconds"),
             ("store_memory", {"content": "hi", "scope": "s", "tags": "a"}, "Argument 'tags' must be a list of strings, not a string."),
             ("store_memory", {"content": "hi", "scope": "s", "tags": [["a"]]},
              "Argument 'tags' must be a list of strings, not a list holding a list."),
             ("recall_memory", {"query": "x", "scope": "s", "tags": ["a", 3]},
              "Argument 'tags' must be a list of strings, not a list holding a whole number."),
             ("search", {"query": {"text": "x"}}, "Argument 'query' must be a string, not an object."),
             ("forget_memory", {"scope": "s"}, "Name a memory id, a tier or tags to forget; nothing was forgotten."),
             ("forget_memory", {"scope": "s", "tier": "deep"}, "Unknown tier 'deep'"),
             ("list_memories", {"scope": "s", "limit": 100000}, "Argument 'limit' must be between 1 and 500"),
             ("get_context", {}, "Missing required argument 'task'."),
             ("store_memory", {"content": "hi"}, "Missing required argument 'scope'."),
             ("remember", {"subject": "a", "predicate": "b"}, "Missing required argument 'object'."),
             ("get_context", {"task": 5}, "Argument 'task' must be a string, not a whole number."),
             ("recall_memory", {"query": "x" * 10_001, "scope": "s"}, "Argument 'query' must hold 1 to 10,000 characters."),
             ("remember", {"subject": "s" * 2001, "predicate": "is", "object": "x"},
              "The fact's subject is 2,001 characters; the limit is 2,000."),
             ("store_memory", {"content": "hi", "scope": "s", "tags": ["ok", ""]}, "Tags must be a list of non-empty strings."),
             ("forget_memory", {"scope": "s", "memory_id": "nope"}, "Unknown memory id 'nope' in this scope."),
             ("forget_memory", {"scope": "s", "memory_id": "x", "tags": ["a"]}, "Give either memory_id or tier/tags, not both."),
             ("list_memories", {"scope": "s", "offset": -1}, "Argument 'offset' must be between 0 and"),
             ("ping", {"extra": 1}, "ping takes no arguments; 'extra' is not one of them."),
                 ("search", {"query": "x", "no_such_argument": 1},
                  "search takes query, subject, predicate, limit, object, source; 'no_such_argument' is not one of them.")]

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            results = [await bridge.call(name, **args) for name, args, _ in calls]
            still = await bridge.ok("ping")
            return results, still

    results, still = run(main())
    for (name, _, expected), result in zip(calls, results):
        assert result.error, name
        assert expected in result.text and "\n" not in result.text, (name, result.text)
    assert still["ok"] and still["memories"] == 0  # nothing was written by the bad calls


def _nested(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


def _call_line(request_id: int, arguments: str, id_last: bool = False) -> bytes:
    """A tools/call request as raw JSON text; `id_last` orders it as mcp 1.x's client does."""
    params = f'{{"name": "recall_memory", "arguments": {arguments}}}'
    if id_last:
        return f'{{"method": "tools/call", "params": {params}, "jsonrpc": "2.0", "id": {request_id}}}'.encode()
    return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'.encode()


class RawStdio:
    """JSON-RPC lines written straight to the bridge's stdin: no client SDK in between."""

    def __init__(self, home):
        self.process = subprocess.Popen(bridge_command(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={**os.environ, **KEYWORD_ONLY})
        self.send(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": '
                  b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}')
        assert self.receive(60)["id"] == 0
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 20) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


@pytest.mark.slow
def test_deep_or_huge_requests_on_stdio_are_answered_with_their_id_and_the_session_goes_on(home):
    raw = RawStdio(home)
    try:
        answers = []
        for request_id, line in ((1, _call_line(1, f'{{"query": "x", "scope": "s", "tags": {_nested(1000)}}}')),
                                 (2, _call_line(2, f'{{"query": "x", "scope": "s", "tags": {_nested(65)}}}', True)),
                                 (3, _call_line(3, '{"query": "%s", "scope": "s"}' % ("x" * 5_000_000), True)),
                                 (4, _call_line(4, '{"query": "x", "scope": "s"}'))):
            raw.send(line)
            answers.append(raw.receive())
    finally:
        raw.close()
    deep, deep_id_last, huge, fine = answers
    for answer, request_id in ((deep, 1), (deep_id_last, 2)):
        assert answer["id"] == request_id and answer["error"]["code"] == -32600
        assert answer["error"]["message"] == ("The request nests lists or objects deeper than 64 levels; "
                                              "nothing was done.")
    assert huge["id"] == 3 and huge["error"]["message"] == ("The request is larger than 4,194,304 bytes; "
                                                            "nothing was done.")
    assert fine["id"] == 4 and not fine["result"]["isError"]


@pytest.mark.slow
def test_a_stdio_session_lists_the_tools_reads_back_and_refuses_deep_or_huge_requests(home):
    """`hermes-cmms mcp` as a process, through a real client session over stdio: it names itself
    with the package version and lists the whole catalogue; what store_memory and remember write,
    recall_memory and search read back; arguments nested too deep or too large are refused in one
    sentence, and the session goes on."""
    async def main():
        async with stdio_bridge(home, env=KEYWORD_ONLY) as bridge:
            tools = await bridge.tools()
            stored = await bridge.ok("store_memory", content="The boat is at pier 7", scope="local:web")
            recalled = await bridge.ok("recall_memory", query="where is the boat", scope="local:web")
            fact = await bridge.ok("remember", subject="Alice", predicate="lives in", object="Lisbon")
            found = await bridge.ok("search", query="does Alice live in Lisbon")
            refused = []
            for args in ({"tags": json.loads(_nested(100))}, {"query": "x" * 5_000_000}):
                with pytest.raises(Exception) as error:
                    await bridge.call("recall_memory", **{"query": "x", "scope": "s", **args})
                refused.append(str(error.value))
            fine = await bridge.ok("recall_memory", query="x", scope="s", tags=["a"])
            return bridge.server_info, tools, (stored, recalled, fact, found), refused, fine

    info, tools, (stored, recalled, fact, found), (deep, huge), fine = run(main())
    assert (info.name, info.version) == ("hermes-cmms", __version__)
    assert set(tools) == CMMS_TOOLS | MEMSER_TOOLS
    assert recalled["results"][0]["id"] == stored["id"]
    assert (found["results"][0]["id"], found["results"][0]["object"]) == (fact["id"], "Lisbon")
    assert deep == "The request nests lists or objects deeper than 64 levels; nothing was done."
    assert huge == "The request is larger than 4,194,304 bytes; nothing was done."
    assert fine["results"] == []


def _post(url: str, body: bytes, headers: dict) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read().split(b"data: ")[-1])
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), json.loads(refused.read() or b"{}")


@pytest.mark.slow
def test_streamable_http_needs_the_bearer_token_in_any_case_of_the_scheme_and_bounds_requests(home):
    """`hermes-cmms mcp --transport http` as a process (uvicorn): a request without the token, or
    with a wrong one, is refused (401) before it is read; the scheme's case does not matter; a
    request nested too deep or too large is answered with its id; a real client session with the
    token stores and recalls, and is refused deep arguments in one sentence."""
    port, token = free_port(), "s3cret-token"
    process = _start_http(home, port, {"CMMS_MCP_TOKEN": token})
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        request = urllib.request.Request(url, data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as no_token:
            urllib.request.urlopen(request, timeout=10)
        assert no_token.value.code == 401
        initialize = (b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": '
                      b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}')
        for scheme in ("bearer", "BEARER", "Bearer"):
            status, _, answer = _post(url, initialize, {"Authorization": f"{scheme} {token}"})
            assert status == 200 and answer["id"] == 0 and "result" in answer, (scheme, answer)
        assert _post(url, initialize, {"Authorization": f"bearer {token}x"})[0] == 401
        auth = {"Authorization": f"Bearer {token}"}
        deep = _post(url, _call_line(7, f'{{"query": "x", "scope": "s", "tags": {_nested(1000)}}}'), auth)
        huge = _post(url, _call_line(8, '{"query": "%s", "scope": "s"}' % ("x" * 5_000_000), True), auth)
        assert _post(url, _call_line(9, _nested(1000)), {})[0] == 401  # the token is checked first

        async def main():
            async with http_bridge(url, token=token) as bridge:
                stored = await bridge.ok("store_memory", content="The boat is at pier 7", scope="local:web")
                found = await bridge.ok("recall_memory", query="where is the boat", scope="local:web")
                with pytest.raises(Exception) as error:
                    await bridge.call("recall_memory", query="x", scope="s", tags=[[["a"]]] * 3 + [_deep(80)])
                return (stored, found), str(error.value), await bridge.ok("recall_memory", query="x", scope="s")

        (stored, found), refused, fine = run(main())
    finally:
        process.terminate()
        process.wait(20)
    for (status, _, answer), request_id in ((deep, 7), (huge, 8)):
        assert status == 200 and answer["id"] == request_id and answer["error"]["code"] == -32600
    assert deep[2]["error"]["message"].startswith("The request nests lists or objects deeper than 64 levels")
    assert huge[2]["error"]["message"] == "The request is larger than 4,194,304 bytes; nothing was done."
    assert found["results"][0]["id"] == stored["id"]
    assert refused == "The request nests lists or objects deeper than 64 levels; nothing was done."
    assert fine["results"] == []


def _deep(depth: int) -> list:
    value: list = ["x"]
    for _ in range(depth):
        value = [value]
    return value


def test_default_scope_is_the_hermes_cli_users(home, monkeypatch):
    from hermes_cmms.provider import CmmsMemoryProvider

    profile = home / "profiles" / "work"
    profile.mkdir(parents=True)
    for hermes_home, expected in ((home, "local:default"), (profile, "local:work")):
        monkeypatch.setenv("HERMES_HOME", str(hermes_home))
        from hermes_cli.profiles import get_active_profile_name  # what Hermes hands the provider

        provider = CmmsMemoryProvider()
        provider.initialize("s1", hermes_home=str(hermes_home), platform="cli",
                            agent_context="primary", agent_identity=get_active_profile_name())
        try:
            assert provider.scope == local_scope(hermes_home) == expected
        finally:
            provider.shutdown()


def test_gateway_users_are_reachable_only_by_naming_their_scope(home):
    with MemoryService(Settings.load(home, embedder="none")) as service:
        service.retain_turn("user:telegram:42", "s1", "My locker code is 7781", "Noted.")
        service.retain_turn(local_scope(home), "s2", "My bike is green", "Nice.")

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            return (await bridge.ok("search", query="locker code"),
                    await bridge.ok("get_context", task="locker code"),
                    await bridge.ok("search", query="bike"),
                    await bridge.ok("recall_memory", query="locker code", scope="user:telegram:42"))

    default_locker, context, bike, named = run(main())
    assert default_locker["memories"] == [] and "7781" not in context["context"]
    assert bike["memories"][0]["content"] == "My bike is green" and bike["results"] == []  # a turn, not a fact
    assert named["results"][0]["content"] == "My locker code is 7781"


def _start_http(home, port: int, env: dict) -> subprocess.Popen:
    process = subprocess.Popen(bridge_command(home, "--transport", "http", "--port", str(port)),
                               env={**os.environ, **KEYWORD_ONLY, **env},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            assert process.poll() is None, process.communicate()[1][-2000:]
            time.sleep(0.2)
    process.kill()
    raise AssertionError("the HTTP bridge did not start listening")


@pytest.mark.slow
def test_http_on_a_non_loopback_host_needs_a_token(home):
    env = {k: v for k, v in os.environ.items() if k != "CMMS_MCP_TOKEN"}
    done = subprocess.run(bridge_command(home, "--transport", "http", "--host", "0.0.0.0"),
                          env={**env, **KEYWORD_ONLY}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "without a bearer token: set CMMS_MCP_TOKEN" in done.stderr
    assert done.stderr.count("\n") == 1  # one line, no traceback


# -- one store, several processes ------------------------------------------------------------


def _provider(home):
    from hermes_cmms.provider import CmmsMemoryProvider

    provider = CmmsMemoryProvider()
    provider.initialize("cli-1", hermes_home=str(home), platform="cli", agent_context="primary",
                        agent_identity="default")
    assert provider.service.upkeep.wait_vectors(120) and provider.service.indexer.active
    return provider


async def _until(probe, timeout: float):
    """Seconds until `probe()` (async) returns truthy; fails after `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if await probe():
            return time.monotonic() - started
        await anyio.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


@pytest.mark.slow
def test_a_write_through_either_door_is_recallable_through_the_other_within_a_second(home):
    provider = _provider(home)  # Hermes, in this process: it writes the vector index
    scope = provider.scope
    provider.sync_turn("I bought a red kayak last summer.", "Sounds fun!")
    assert provider.service.upkeep.drain(30)
    try:
        async def main():
            async with stdio_bridge(home, "--scope", scope) as bridge:
                await _until(lambda: _ready(bridge), 120)  # the bridge's own model has loaded
                # embedded: Hermes holds the writer lock; PostgreSQL + a Chroma server: every process
                # embeds (each the scopes it claims)
                assert (await bridge.ok("ping"))["writer"] is SERVER
                # the bridge has the vector index open: embedded Chroma would keep it stale
                assert (await bridge.ok("semantic_search", query="boat", top_k=5))["results"]
                provider.sync_turn("My cat is called Biscuit and she naps on the radiator.", "Lovely!")
                written = time.monotonic()
                keyword = await _until(lambda: _found(bridge, "search", query="Biscuit"), 5)
                assert await _found(bridge, "recall_memory", query="what is my cat called", scope=scope)
                semantic = await _until(lambda: _found(bridge, "semantic_search",
                                                       query="which animal lives with me", top_k=3), 5)
                semantic = time.monotonic() - written
                stored = await bridge.ok("store_memory", content="The spare key is under the blue flowerpot",
                                         scope=scope)
                written = time.monotonic()

                async def in_hermes(vector: bool):
                    hits = ranked(provider.service.engine, scope, "where is the spare key hidden")
                    return any(shown_id(h.memory.id) == stored["id"] and (h.vector_rank is not None or not vector)
                               for h in hits)
                back_keyword = await _until(lambda: in_hermes(False), 5)
                await _until(lambda: in_hermes(True), 5)
                back_semantic = time.monotonic() - written
                injected = provider.prefetch("where is the spare key hidden?")
                assert "blue flowerpot" in injected  # what Hermes puts in <memory-context>

                provider.shutdown()  # Hermes exits: the bridge takes over writing the index
                await _until(lambda: _is_writer(bridge), 5)
                await bridge.ok("store_memory", content="Biscuit's vet is Dr Okafor", scope=scope)
                await _until(lambda: _found(bridge, "semantic_search", "Okafor", query="veterinarian", top_k=5), 10)
                return keyword, semantic, back_keyword, back_semantic

        keyword, semantic, back_keyword, back_semantic = run(main())
        print(f"hermes->bridge keyword {keyword:.2f} s semantic {semantic:.2f} s; "
              f"bridge->hermes keyword {back_keyword:.2f} s semantic {back_semantic:.2f} s")
        assert max(keyword, semantic, back_keyword, back_semantic) < 1.0
    finally:
        provider.shutdown()


async def _is_writer(bridge) -> bool:
    return (await bridge.ok("ping"))["writer"]


async def _ready(bridge) -> bool:
    return (await bridge.ok("ping"))["embedder"] != "loading"


async def _found(bridge, tool: str, word: str = "Biscuit", **args) -> bool:
    found = await bridge.ok(tool, **args)  # search: every hit under memories (its results are facts)
    return any(word in r["content"] for r in found["memories" if tool == "search" else "results"])


@pytest.mark.slow
def test_concurrent_writers_in_three_processes_lose_nothing(home):
    import threading

    provider = _provider(home)
    per_writer = 500  # memories per writer
    errors: list[str] = []

    def hermes_turns():
        try:
            for n in range(per_writer // 2):  # a turn is two memories
                provider.sync_turn(f"hermes question {n}", f"hermes answer {n}")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))

    async def bridge_writes(name: str):
        async with stdio_bridge(home, env=KEYWORD_ONLY) as bridge:
            for n in range(per_writer):
                result = await bridge.call("store_memory", content=f"{name} note {n}", scope="shared:team")
                if result.error:
                    errors.append(result.text)

    async def bridges():
        async with anyio.create_task_group() as group:
            group.start_soon(bridge_writes, "bridge-a")
            group.start_soon(bridge_writes, "bridge-b")

    try:
        thread = threading.Thread(target=hermes_turns)
        thread.start()
        run(bridges())
        thread.join(120)
        assert errors == []
        store = provider.service.store
        with store.read() as conn:
            from sqlalchemy import text
            rows = [r[0] for r in conn.execute(text("SELECT content FROM memories"))]
        expected = ({f"hermes question {n}" for n in range(per_writer // 2)}
                    | {f"hermes answer {n}" for n in range(per_writer // 2)}
                    | {f"bridge-{w} note {n}" for w in "ab" for n in range(per_writer)})
        assert sorted(rows) == sorted(expected)  # every write once: none lost, none doubled
        assert len(rows) == 3 * per_writer
        assert provider.service.upkeep.drain(300)  # Hermes' indexer embedded the bridges' too
        vectors = provider.service.indexer.vectors
        ids = {m.id for m in provider.service.store.page("shared:team", limit=500)[0]
               + provider.service.store.page("shared:team", limit=500, offset=500)[0]}
        assert len(ids) == 2 * per_writer and len(vectors.get("shared:team", list(ids))) == len(ids)
        assert vectors.count() == len(expected)
    finally:
        provider.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_the_readme_dev_server_recipe_runs_under_the_sdks_own_loader(home, tmp_path, where):
    """docs/mcp.md's `mcp run` / `mcp dev` line: its path command, then the SDK's loader on that file."""
    recipe = re.search(r'`mcp run "\$\(python -c \'(.+?)\'\)"`', README.read_text()).group(1)
    cwd = str(Path(__file__).parents[2]) if where == "checkout" else str(tmp_path)
    env = {**os.environ, **KEYWORD_ONLY, "HERMES_HOME": str(home)}
    found = subprocess.run([sys.executable, "-c", recipe], cwd=cwd, capture_output=True, text=True,
                           timeout=60, env=env)
    assert found.returncode == 0, found.stderr[-2000:]
    assert not (home / "cmms").exists()  # finding the file opens no store
    mcp_cli = str(Path(sys.executable).with_name("mcp"))
    typo = tmp_path / "hermes-hoem"
    if store_file(Settings.load(typo)) is not None:  # (a database server's store is there once named)
        refused = subprocess.run([mcp_cli, "run", found.stdout.strip()], cwd=cwd, capture_output=True, text=True,
                                 timeout=60, env={**env, "HERMES_HOME": str(typo)}, stdin=subprocess.DEVNULL)
        assert refused.returncode == 1 and not typo.exists(), refused  # a typo'd home: nothing created
        assert refused.stderr.strip().splitlines()[-1].startswith(f"error: No cmms store at {typo / 'cmms'}"), refused
    (home / "config.yaml").touch()  # a home Hermes has used: the dev server may start its store

    async def go():
        async with stdio_bridge(home, env=env, cwd=cwd, command=[mcp_cli, "run", found.stdout.strip()]) as b:
            assert set(await b.tools()) == CMMS_TOOLS | MEMSER_TOOLS
            await b.ok("remember", subject="the dev server", predicate="keeps", object="notes")
            hits = await b.ok("search", query="what does the dev server keep")
            assert "notes" in json.dumps(hits)

    run(go())
