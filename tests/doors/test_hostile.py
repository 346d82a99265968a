"""Hostile input, property-based: every Hermes tool, every MCP tool and message content get
unicode of all planes (RTL, combining, lone surrogates), control characters and NUL, huge
strings, deep JSON, wrong types, SQL / FTS5 / tsquery syntax and hostile scope names.

Properties: nothing raises out of a door, every rejection is one clear sentence (never the
"failed inside hermes-cmms" internal error, never an HTTP 500), everything acknowledged reads
back byte-exact (modulo the documented cleaning: NUL dropped, lone surrogates replaced,
secrets redacted), the audit and the database's own check are clean afterwards, and under
concurrency no result of another scope is ever returned.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.checks import scope_of
from hermes_cmms.common.errors import CmmsError
from hermes_cmms.common.ids import stored_id
from hermes_cmms.common.lifecycle_rules import only_secrets
from hermes_cmms.mcp_bridge.server import build, sdk
from hermes_cmms.redact import redact_text
from hermes_cmms.common.text import clean, clean_key
from db import sql

pytestmark = pytest.mark.store

FAST = dict(deadline=None, derandomize=False, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                   HealthCheck.filter_too_much, HealthCheck.large_base_example])

SYNTAX = ['" OR 1=1 --', "' OR '1'='1", "'; DROP TABLE memories; --", "NEAR(", "NEAR/3", "*", "'", "''",
          "\\", ":", "^", "AND OR NOT", "AND", "OR", "NOT", "& | ! <-> :*", "a:*", "!!", "<->", "(", ")",
          '"', "{", "}", "-", "+", "%", "_", "content:", "fts_content:x", "$1", "?", "%s", "%(scope)s",
          "\x00", "\x00\x00", "\x01\x1f\x7f", "\x1b[31m", "\r\n", "\t", "\x0b\x0c", "\u2028\u2029",
          "\ud800", "\udfff", "\udbff\udfff", "\u202e", "\u200f", "\u200b", "\ufeff", "e\u0301\u0301",
          "\U0001F600", "\U0010FFFF", "\U000E0001", "\uffff", "\ufffd", "مرحبا بالعالم", "שלום",
          "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ﷺ", "İı", "ß", "ǅ", "Ω", "password: hunter2", "sk-abcdefghijklmnopqrstuv",
          "Alice: ", "I prefer ", " is stable", "Ana works at Acme", "zebra"]

ANY_CHAR = st.characters(exclude_categories=())  # every plane, surrogates and controls included


def _fragments(max_size: int = 10):
    return st.lists(st.one_of(st.sampled_from(SYNTAX), st.text(ANY_CHAR, max_size=6)),
                    min_size=1, max_size=max_size).map("".join)


HUGE = st.builds(lambda piece, n: (piece + " ") * n, st.sampled_from(["zebra", "\x00", "NEAR(", "\ud800", "é", "x"]),
                 st.integers(2_000, 60_000))  # up to a few hundred KB
TEXT = st.one_of(st.text(ANY_CHAR, max_size=30), _fragments(), _fragments(3).map(lambda s: f"zebra {s} note"),
                 st.sampled_from(SYNTAX))
HOSTILE = st.one_of(TEXT, TEXT, TEXT, HUGE)
JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(ANY_CHAR, max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                       max_leaves=8)


def _deep(depth: int, as_dict: bool):
    value = "zebra"
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


WRONG = st.one_of(JSONISH, st.builds(_deep, st.integers(20, 150), st.booleans()))
INTS = st.one_of(st.integers(-3, 120), st.integers(-2 ** 70, 2 ** 70), st.sampled_from([0, 1, 4, 5, 10 ** 9, 10 ** 9 + 1]))
NUMBERS = st.one_of(st.floats(), st.floats(0, 1), INTS)
MISSING = object()
PER_HERMES_TOOL = 60
PER_MCP_TOOL = 25
DEFAULT_SCOPE = "local:hostile\x00\ud800\u202e'; --"


def _known(ids: list[str]):
    """One of the ids acknowledged so far (drawing the same data whatever the list holds)."""
    return st.integers(0, 999).map(lambda i: ids[i % len(ids)] if ids else "0" * 32)


def _value(schema: dict, ids: list[str]):
    """A strategy for one argument: hostile but of the schema's type, or of the wrong type."""
    kinds = [o.get("type") for o in schema.get("anyOf", [schema])] or [None]
    if "enum" in schema:
        typed = st.sampled_from(schema["enum"]) | HOSTILE
    elif "string" in kinds:
        typed = HOSTILE | _known(ids)
    elif "integer" in kinds:
        typed = INTS
    elif "number" in kinds:
        typed = NUMBERS
    elif "boolean" in kinds:
        typed = st.booleans()
    elif "array" in kinds:
        typed = st.lists(TEXT | _known(ids), max_size=4) | st.lists(TEXT, max_size=40)
    else:
        typed = HOSTILE
    return st.one_of(typed, typed, typed, WRONG, st.just(MISSING), st.none())


def _args(draw, properties: dict, ids: list[str]) -> dict:
    args = {name: draw(_value(schema, ids)) for name, schema in properties.items()}
    args = {k: v for k, v in args.items() if v is not MISSING}
    if draw(st.booleans()) and draw(st.booleans()):
        args[draw(st.text(ANY_CHAR, max_size=8))] = draw(WRONG)  # an argument nobody asked for
    return args


def clear_sentence(message: str) -> None:
    """A rejection: one short sentence, never an internal error or a traceback."""
    assert isinstance(message, str) and message, message
    assert "failed inside hermes-cmms" not in message and "Traceback" not in message, message[:2000]
    assert "\n" not in message and message.endswith("."), message[:2000]
    assert message[0].isalnum(), message[:200]
    assert len(message) <= 2_000, message[:300]


def stored_as(text: str) -> str:
    """What the store keeps of acknowledged text: NUL and lone surrogates cleaned, secrets redacted."""
    return redact_text(clean(text))


def _loose(text: str) -> str:
    return " ".join(text.lower().split())


def rows(where) -> dict[str, tuple]:
    """Every memory as stored: id -> (scope, content)."""
    return {r[0]: (r[1], r[2]) for r in sql(where, "SELECT id, scope, content FROM memories")}


def healthy(service) -> None:
    """The store's own check and the audit of every scope are clean."""
    assert service.store.integrity() == "ok"
    report = service.upkeep.audit("all")
    assert report["ok"], {k: v[:3] for k, v in report["findings"].items() if v}
    assert service.store.counts()["memories"] == len(rows(service))


class Ledger:
    """What a door acknowledged: id -> (scope as stored, content as stored, exact?)."""

    def __init__(self):
        self.kept: dict[str, tuple[str, str, bool]] = {}

    def stored(self, memory_id: str, scope: str, content: str, reinforced: bool) -> None:
        memory_id = stored_id(memory_id)  # as the doors show it (dashed): the store keeps 32 hex digits
        if reinforced:  # the id of the memory it repeats: the same text but for case and spaces
            self.kept.setdefault(memory_id, (clean_key(scope), stored_as(content), False))
        else:
            self.kept[memory_id] = (clean_key(scope), stored_as(content), True)

    def forgotten(self, ids) -> None:
        for memory_id in ids:
            self.kept.pop(stored_id(memory_id), None)

    def check(self, where) -> None:
        found = rows(where)
        for memory_id, (scope, content, exact) in self.kept.items():
            assert memory_id in found, (memory_id, content[:80])
            assert found[memory_id][0] == scope, memory_id
            if exact:
                assert found[memory_id][1] == content, (memory_id, found[memory_id][1][:80], content[:80])
            else:
                assert _loose(found[memory_id][1]) == _loose(content)


# -- the Hermes door ------------------------------------------------------------------------------


@pytest.fixture
def provider(home, monkeypatch):
    from hermes_cmms.provider import CmmsMemoryProvider

    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    hermes = CmmsMemoryProvider()
    hermes.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary")
    yield hermes
    hermes.shutdown()


def _calls(tools: dict, ids: list[str], name=None, objects_only: bool = False):
    """(tool name, arguments) for tool `name` of `tools` (name -> JSON schema of its arguments)
    or, with None, for an unknown tool; now and then arguments that are not an object at all
    (MCP's JSON-RPC layer refuses those itself: `objects_only`)."""
    @st.composite
    def calls(draw):
        tool = name if name is not None else draw(st.sampled_from(["cmms_x", "", "\x00", "ping\ud800", "x" * 10_000]))
        if not objects_only and (draw(st.integers(0, 12)) == 0 or name is None and draw(st.booleans())):
            return tool, draw(WRONG.filter(lambda v: not isinstance(v, dict)))
        properties = dict(tools.get(tool, {}).get("properties", {}))
        args = _args(draw, properties, ids)
        if "scope" in properties and draw(st.booleans()):
            args["scope"] = draw(st.sampled_from(["user:a", "user:b", DEFAULT_SCOPE]) | HOSTILE)
        return tool, args
    return calls()


def test_every_hermes_tool_survives_hostile_arguments(provider):
    schemas = {s["name"]: s["parameters"] for s in provider.get_tool_schemas()}
    ledger, ids, seen = Ledger(), [], {name: 0 for name in schemas}

    @settings(max_examples=PER_HERMES_TOOL, **FAST)
    @given(st.data(), st.none())
    @example(None, ("cmms_remember", {"content": "zebra\x00 note", "tags": ["t\x00", "\ud800"]}))
    @example(None, ("cmms_forget", {"memory_id": "x\x00"}))
    @example(None, ("cmms_belief", {"text": "the API\x00 is stable", "evidence": "\x00because"}))
    @example(None, ("cmms_graph", {"query": "Ana\x00 works"}))
    @example(None, ("cmms_recall", {"query": "zebra\x00", "route": True}))
    @example(None, ("cmms_forget", {"memory_id": "x" * 300_000}))
    @example(None, ("ping\ud800", {"query": "\x00"}))
    def call(data, name_args):
        name, args = name_args or data.draw(_calls(schemas, ids, tool))
        answer = provider.handle_tool_call(name, args)
        assert isinstance(answer, str)
        result = json.loads(answer)
        seen[name] = seen.get(name, 0) + 1
        if list(result) == ["error"]:
            clear_sentence(result["error"])
            return
        if name == "cmms_remember":
            ledger.stored(result["id"], provider.scope, args["content"], result["reinforced"])
            ids.append(result["id"])
        elif name == "cmms_forget":
            ledger.forgotten([result["id"]])
        elif name == "cmms_belief":
            ids.append(result["id"])

    for tool in [*sorted(schemas), None]:  # None: unknown tools, arguments that are no object
        call()
    assert all(seen[name] >= PER_HERMES_TOOL for name in schemas), seen  # every tool was driven
    tool_events = sql(provider.service, "SELECT count(*) FROM audit_log WHERE action = 'tool'")[0][0]
    assert tool_events == sum(seen.values())  # every call is on the audit trail, odd names too
    ledger.check(provider.service)
    healthy(provider.service)


def test_message_content_is_stored_cleaned_and_never_raises(provider):
    service, scope = provider.service, clean_key(provider.scope)
    side = HOSTILE | WRONG

    @settings(max_examples=60, **FAST)
    @given(turns=st.lists(st.tuples(side, side, HOSTILE | st.just("")), min_size=1, max_size=3), query=side)
    @example(turns=[("zebra\x00 one", "\ud800 two", "odd\x00session")], query="zebra\x00")
    def turn(turns, query):
        before = rows(service)
        expected = []
        for user, assistant, session_id in turns:
            provider.sync_turn(user, assistant, session_id=session_id if isinstance(session_id, str) else "")
            expected += [stored_as(t) for t in (user, assistant)
                         if isinstance(t, str) and clean(t).strip() and not only_secrets(stored_as(t))]
            provider.on_memory_write("add", "memory", user if isinstance(user, str) else "zebra")
            provider.on_session_switch(session_id if isinstance(session_id, str) else "", reset=True)
        assert isinstance(provider.prefetch(query), str)
        provider.queue_prefetch(query)
        assert isinstance(provider.prefetch(query), str)
        assert isinstance(provider.on_pre_compress([{"role": "user", "content": query}]), str)
        after = rows(service)
        exact = {content for where, content in after.values() if where == scope}
        loose = {_loose(content) for content in exact}  # a repeat reinforces the memory it repeats
        for text in expected:
            assert text in exact or _loose(text) in loose, text[:80]
        assert len(after) - len(before) <= len(expected) + 2 * len(turns)  # turns + memory-tool notes

    turn()
    healthy(service)


# -- the MCP door, in process: the SDK's own argument handling, then the catalogue ----------------



class InProcess:
    """The bridge's MCP server object, called the way the SDK calls it for a client."""

    def __init__(self, service, scope: str = DEFAULT_SCOPE):
        self.server = build(service, scope)
        self.loop = asyncio.new_event_loop()
        self.tools = {t.name: t.input_schema if hasattr(t, "input_schema") else t.inputSchema
                      for t in self.loop.run_until_complete(self.server.list_tools())}
        self.tool_error = sdk()[1]

    def call(self, name: str, args) -> tuple[bool, object]:
        """(True, the JSON object) or (False, the error sentence); anything else raised fails."""
        try:
            result = self.loop.run_until_complete(self.server.call_tool(name, args))
        except self.tool_error as exc:
            if type(exc).__name__ == "UnexpectedToolError":
                raise
            return False, str(exc)
        data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
        if data is None:
            text = "".join(getattr(c, "text", "") for c in result.content)
            if getattr(result, "is_error", getattr(result, "isError", False)):
                return False, text
            data = json.loads(text)
        return True, data

    def close(self):
        self.loop.close()


def _mcp_ledger(ledger: Ledger, ids: list, default_scope: str, name: str, args: dict, data: dict) -> None:
    """Note what an acknowledged MCP call stored or forgot."""
    if name == "store_memory":
        ledger.stored(data["id"], args["scope"], args["content"], data["reinforced"])
        ids.append(data["id"])
    elif name == "remember":
        subject, predicate, obj = (" ".join(args[k].split()) for k in ("subject", "predicate", "object"))
        ledger.stored(data["id"], default_scope, f"{subject} {predicate} {obj}", True)
        ids.append(data["id"])
    elif name == "forget_memory":
        ledger.forgotten(data["ids"])
    elif name in ("learn", "set_belief"):
        ids.append(data["id"])
        ledger.forgotten([data["id"]])  # learned items can fold into it: not tracked exactly


def _own_scope(service, scope: str, data: dict) -> None:
    """A read returns only memories of the scope it names (or of the default scope)."""
    if data.get("route") == "graph":  # the graph route answers with entities, not memories
        return
    for key in ("results", "memories"):
        items = data.get(key) if isinstance(data.get(key), list) else []
        returned = [stored_id(item["id"]) for item in items if isinstance(item, dict) and "id" in item]
        assert set(service.store.get(returned, scope_of(scope))) == set(returned), (key, scope)


def test_every_mcp_tool_survives_hostile_arguments_in_process(keyword_service):
    bridge = InProcess(keyword_service)
    ledger, ids, seen = Ledger(), [], {}
    names = sorted(bridge.tools)
    assert len(names) >= 20

    @settings(max_examples=PER_MCP_TOOL, **FAST)
    @given(st.data(), st.none())
    @example(None, ("store_memory", {"content": "zebra\x00", "scope": "s\x00", "tags": ["t\x00"], "source": "\x00",
                               "actor": "\x00"}))
    @example(None, ("recall_memory", {"query": "zebra", "scope": "s\x00", "tags": ["t\x00"]}))
    @example(None, ("remember", {"subject": "A\x00", "predicate": "p\x00", "object": "o\x00"}))
    @example(None, ("remember", {"subject": "\x00", "predicate": "p", "object": "o"}))
    @example(None, ("search", {"query": "x\x00", "subject": "A\x00", "source": "s\x00"}))
    @example(None, ("audit_log", {"scope": "s\x00", "memory_id": "m\x00", "action": "a\x00"}))
    @example(None, ("graph_search", {"query": "Alice\x00"}))
    @example(None, ("graph_search", {"query": " " * 100_000}))
    @example(None, ("set_belief", {"text": "pg is ok", "evidence_ids": ["x\x00"], "supersedes": "y\x00"}))
    @example(None, ("get_belief", {"text": "pg\x00", "source": "s\x00", "belief_id": "b\x00"}))
    @example(None, ("get_belief", {"source": "\x00"}))
    @example(None, ("resolve_conflict", {"belief_a": "a\x00", "belief_b": "b\x00", "strategy": "merge"}))
    @example(None, ("forget_memory", {"scope": "s", "memory_id": "x" * 300_000}))
    def call(data, name_args):
        name, args = name_args or data.draw(_calls(bridge.tools, ids, tool, objects_only=True))
        ok, data = bridge.call(name, args)
        seen[name] = seen.get(name, 0) + 1
        if not ok:
            if name in bridge.tools:
                clear_sentence(data)
            return
        _mcp_ledger(ledger, ids, DEFAULT_SCOPE, name, args, data)
        _own_scope(keyword_service, args.get("scope", DEFAULT_SCOPE), data)

    try:
        for tool in [*names, None]:
            call()
    finally:
        bridge.close()
    assert all(seen[name] >= PER_MCP_TOOL for name in names), seen  # every tool was driven
    ledger.check(keyword_service)
    healthy(keyword_service)


# -- the MCP door over streamable HTTP: one real bridge process, one session -----------------------


def _wire(value):
    """A value as JSON can carry it: lone surrogates and NaN / infinity cannot cross the wire."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return None
    if isinstance(value, dict):
        return {_wire(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


class HttpSession:
    """A client session to a bridge process, driven from a background event loop."""

    def __init__(self, url: str):
        from mcp_client import http_bridge

        self.loop = asyncio.new_event_loop()
        self.ready, self.stop = threading.Event(), None
        self.failure = None

        async def main():
            self.stop = asyncio.Event()
            try:
                async with http_bridge(url) as bridge:
                    self.bridge = bridge
                    self.tools = {name: _schema(tool) for name, tool in (await bridge.tools()).items()}
                    self.ready.set()
                    await self.stop.wait()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.failure = exc
                self.ready.set()

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(60) and self.failure is None, self.failure

    def call(self, name: str, args: dict):
        return asyncio.run_coroutine_threadsafe(self.bridge.call(name, **args), self.loop).result(120)

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)


def _schema(tool) -> dict:
    from mcp_client import input_schema

    return input_schema(tool)


HOSTILE_SCOPE = "local:hostile\udcff\u202e"  # a lone surrogate and a bidi override


@pytest.mark.slow
def test_mcp_over_streamable_http_answers_hostile_calls_without_a_500(home, tmp_path):
    import socket

    from mcp_client import bridge_command

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(tmp_path / "bridge.log", "w")  # noqa: SIM115 - the child writes it; closed below
    process = subprocess.Popen(bridge_command(home, "--transport", "http", "--port", str(port),
                                              "--scope", HOSTILE_SCOPE),
                               env={**os.environ, "CMMS_EMBEDDER": "none", "CMMS_MCP_TOKEN": ""},
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "bridge.log").read_text()
                time.sleep(0.2)
        session = HttpSession(f"http://127.0.0.1:{port}/mcp")
        ledger, ids, calls = Ledger(), [], [0]
        try:
            @settings(max_examples=80, **FAST)
            @given(st.data(), st.none())
            @example(None, ("store_memory", {"content": "zebra\x00 \u202e", "scope": "s\x00", "tags": ["\x00t"]}))
            @example(None, ("remember", {"subject": "Ana", "predicate": "works at", "object": "Acme\x00"}))
            @example(None, ("forget_memory", {"scope": "s", "memory_id": "x" * 300_000}))
            def call(data, name_args):
                name, args = name_args or data.draw(_calls(session.tools, ids, data.draw(
                    st.sampled_from(sorted(session.tools))), objects_only=True))
                args = _wire(args)
                try:
                    result = session.call(name, args)  # raises on an HTTP error such as a 500
                except Exception as exc:  # a JSON-RPC error: a request refused before parsing
                    if type(exc).__name__ not in ("MCPError", "McpError"):
                        raise
                    clear_sentence(str(exc))
                    calls[0] += 1
                    return
                calls[0] += 1
                if result.error:
                    message = result.text.removeprefix(f"Error executing tool {name}: ")
                    clear_sentence(message)
                    return
                default = HOSTILE_SCOPE if name in ("remember",) else None  # ping shows it escaped
                _mcp_ledger(ledger, ids, default, name, args, result.data)

            call()
        finally:
            session.close()
        assert calls[0] >= 80
        with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as service:
            ledger.check(service)
            healthy(service)
    finally:
        process.terminate()
        process.wait(20)
        log.close()
    output = (tmp_path / "bridge.log").read_text()
    assert "Traceback" not in output and "Exception in ASGI" not in output and " 500 " not in output, output[-3000:]


# -- scope isolation under concurrency -------------------------------------------------------------

THREADS = 4


def test_threads_in_hostile_scopes_never_see_each_others_memories(keyword_service):
    """Each thread writes and reads its own hostile scope, all with the same words; every single
    result of every read belongs to the reader's scope."""
    service = keyword_service
    bridges = [InProcess(service) for _ in range(THREADS)]  # an event loop each
    rounds = [0]

    @settings(max_examples=8, **FAST)
    @given(scopes=st.lists(HOSTILE.filter(lambda s: clean(s).strip() and len(s) < 5_000), min_size=THREADS,
                           max_size=THREADS, unique_by=clean_key),
           contents=st.lists(st.lists(TEXT, min_size=3, max_size=6), min_size=THREADS, max_size=THREADS))
    @example(scopes=["a\x00", "a", "a\ud800", "a\\ud800"], contents=[["zebra \x00 stripes"] * 3] * THREADS)
    def race(scopes, contents):
        rounds[0] += 1
        scopes = [f"r{rounds[0]}{s}" for s in scopes]  # fresh scopes each example
        errors: list[str] = []
        barrier = threading.Barrier(THREADS)

        def worker(scope: str, texts: list[str], bridge: InProcess) -> None:
            own, stored = clean_key(scope), set()
            try:
                barrier.wait(30)
                for text in texts:
                    for content in (f"zebra {text}", text):
                        try:
                            stored.add(service.remember(scope, content, tags=["zebra"], source="test:race"))
                        except CmmsError:
                            pass
                    for query in ("zebra", text, "zebra OR 1=1 --", "*"):
                        for hit in service.search(scope, query, 50) if clean(query).strip() else ():
                            assert hit.scope == own, (hit.scope, own)
                        ok, data = bridge.call("recall_memory", {"query": query, "scope": scope, "k": 100})
                        if ok:
                            assert data["results"] and all(stored_id(r["id"]) in stored for r in data["results"]) \
                                or not data["results"], data["results"]
                    memories, total = service.page(scope, tags=["zebra"], limit=500)
                    assert {m.scope for m in memories} <= {own} and total == len(stored)
                    assert {m.id for m in memories} == stored
                    for belief in service.get_belief(scope, text="zebra")["beliefs"]:
                        assert belief["id"] not in stored  # none stored: but never another scope's
                    ok, data = bridge.call("list_memories", {"scope": scope, "limit": 500})
                    assert ok and {stored_id(m["id"]) for m in data["memories"]} == stored, data
            except Exception as exc:  # noqa: BLE001 - reported below, with the scope
                errors.append(f"{scope!r}: {type(exc).__name__}: {exc}"[:2000])

        threads = [threading.Thread(target=worker, args=(scope, texts, bridge))
                   for scope, texts, bridge in zip(scopes, contents, bridges)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []

    try:
        race()
    finally:
        for bridge in bridges:
            bridge.close()
    healthy(service)


@pytest.mark.quick
@pytest.mark.parametrize("part", ["subject", "predicate", "object"])
def test_a_fact_part_that_is_only_nul_bytes_is_refused(keyword_service, part):
    parts = {"subject": "Ana", "predicate": "likes", "obj": "tea", **{("obj" if part == "object" else part): "\x00 \x00"}}
    with pytest.raises(CmmsError, match=f"The fact's {part} must be a non-empty string."):
        keyword_service.remember_fact("test:nul-fact", **parts)
    assert keyword_service.store.counts()["memories"] == 0


def test_keys_longer_than_an_index_entry_are_stored_and_found(keyword_service):
    """PostgreSQL's btree indexes hold ~2,700 bytes an entry: a scope, session id, fact part,
    entity name or belief proposition of thousands of (4-byte) characters is kept by a bounded
    key that stays distinct, on both backends."""
    svc, scope, long = keyword_service, "user:t:" + "𝔘" * 3000, "𝔖" * 1990
    ids = svc.retain_turn(scope, "session-" + "𝔖" * 3000, "The kestrel nests on the tower", "Noted")
    other = svc.retain_turn(scope, "session-" + "𝔖" * 2999, "The heron fishes at dawn", "Noted")
    assert len(ids) == len(other) == 2
    assert [hit.id for hit in svc.search(scope, "kestrel")][:1] == [ids[0]]
    assert len(svc.store.unflushed_sessions(scope=clean_key(scope))) == 2  # two sessions, kept apart
    fact = svc.remember_fact(scope, long, "likes " + long, long + " tea")
    assert [hit.id for hit in svc.search(scope, "tea", fact={"subject": long})] == [fact]
    belief = svc.set_belief(scope, long[:1970] + " is a long one")
    assert belief["id"] and svc.graph_search(scope, query=long[:50]) is not None
    assert svc.store.integrity() == "ok"
