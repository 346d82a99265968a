"""Bad input gets a clear error or a correct answer; it never raises out of Hermes' door or loses data."""
from __future__ import annotations

import json

import pytest

from hermes_cmms import InvalidInput
from hermes_cmms.common.errors import StoreUnavailable
from hermes_cmms.provider import CmmsMemoryProvider
from hermes_cmms.common.text import clean_key

from db import sql

pytestmark = pytest.mark.store  # (but the `one_backend` tests: a type refused before the engine runs a query)

SCOPE = "test:bad"
FTS_SYNTAX = ['"', "*", "NEAR(", "-", "AND", "OR", "(", ":", ")", "^", "+", "{", "}", "NOT", "'", "''"]


@pytest.fixture
def provider(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")  # vectors are irrelevant here
    hermes = CmmsMemoryProvider()
    hermes.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary")
    hermes.sync_turn("My cat is called Biscuit", "What a lovely name!")
    yield hermes
    hermes.shutdown()


def _rows(home) -> list[tuple]:
    return sql(home, "SELECT content, role, turn FROM memories ORDER BY seq")


def _tool(provider, name, args):
    answer = provider.handle_tool_call(name, args)
    assert isinstance(answer, str)
    return json.loads(answer)


def _error(provider, name, args) -> str:
    answer = _tool(provider, name, args)
    assert list(answer) == ["error"], answer
    message = answer["error"]
    assert message[:1].isupper() and message.endswith("."), message  # one sentence
    return message


# -- sync_turn ------------------------------------------------------------------------------


@pytest.mark.quick
@pytest.mark.parametrize("user,assistant", [("", ""), (None, None), ("   ", "\n\t"), ("\x00\x00", "\x00")])
def test_empty_turns_store_nothing_and_do_not_raise(provider, home, user, assistant):
    before = _rows(home)
    provider.sync_turn(user, assistant)
    assert _rows(home) == before


def test_a_turn_with_one_empty_side_keeps_the_other(provider, home):
    provider.sync_turn("\x00", "Only the assistant spoke")
    provider.sync_turn("Only the user spoke", None)
    assert _rows(home)[-2:] == [("Only the assistant spoke", "assistant", 2), ("Only the user spoke", "user", 3)]


def test_five_megabyte_message_is_stored_whole_and_found(provider, home):
    body = "The quarterly ledger lists invoices and receipts. " * 105_000
    huge = "Quokka report begins. " + body + "Closing word zeppelin."
    assert len(huge) > 5_000_000
    provider.sync_turn(huge, "That is a long report.")
    stored = [row for row in _rows(home) if row[0].startswith("Quokka")]
    assert [len(row[0]) for row in stored] == [len(huge)]
    assert stored[0][0] == huge
    found = _tool(provider, "cmms_recall", {"query": "zeppelin", "limit": 1})["results"]
    assert [len(r["content"]) for r in found] == [len(huge)]
    block = provider.prefetch("zeppelin")
    assert "Quokka report begins" in block and len(block) < 5_000


def test_nul_bytes_and_lone_surrogates_are_cleaned_and_stored(provider, home):
    provider.sync_turn("Nul\x00byte in the walrus note", "Lone \ud800 surrogate about the narwhal")
    provider.sync_turn("Session ids can be odd too", "yes", session_id="odd\ud800\x00id")
    rows = _rows(home)
    assert ("Nulbyte in the walrus note", "user", 2) in rows
    assert ("Lone \ufffd surrogate about the narwhal", "assistant", 2) in rows  # U+FFFD, not "?"
    assert "walrus" in provider.prefetch("walrus")
    assert "narwhal" in provider.prefetch("narwhal\ud800")
    [hit] = _tool(provider, "cmms_recall", {"query": "odd session ids"})["results"][:1]
    assert hit["content"] == "Session ids can be odd too" and hit["session_id"] == clean_key("odd\ud800\x00id")
    assert hit["session_id"].startswith("odd\\ud800\\x00id\uffff")  # readable, then U+FFFF and a hash
    provider.on_session_switch("next", reset=True)  # flushes the odd session id without raising


# -- queries: prefetch, cmms_recall, service.search -------------------------------------------


@pytest.mark.parametrize("syntax", FTS_SYNTAX)
def test_fts_syntax_in_queries_is_plain_text(provider, syntax):
    glue = " " if syntax.isalpha() else ""  # 'ANDBiscuit' would be another word
    for query in (syntax, f"{syntax}{glue}Biscuit", f"Biscuit {syntax}", f"cat {syntax} Biscuit{glue}{syntax}"):
        block = provider.prefetch(query)
        assert isinstance(block, str)
        results = _tool(provider, "cmms_recall", {"query": query}).get("results")
        if "Biscuit" in query:
            assert "Biscuit" in block
            assert results[0]["content"] == "My cat is called Biscuit"
        else:
            assert results == [] or isinstance(results, list)


def test_fts_operators_as_words_still_match(keyword_service):
    memory_id = keyword_service.remember(SCOPE, "Meet NEAR the OR gate AND bring rope")
    for query in ("NEAR", "near(", "gate AND rope", "NOT rope", "rope*", "content:rope", "-rope"):
        assert [h.id for h in keyword_service.search(SCOPE, query)] == [memory_id], query


def test_sql_looking_text_is_stored_verbatim(keyword_service, home):
    evil = "'; DROP TABLE memories; --"
    memory_id = keyword_service.remember(SCOPE, evil)
    keyword_service.remember(SCOPE, 'Robert"); DELETE FROM outbox WHERE ("1"="1')
    assert keyword_service.store.get([memory_id], SCOPE)[memory_id].content == evil
    assert [h.id for h in keyword_service.search(SCOPE, evil)] == [memory_id]
    assert keyword_service.search(SCOPE, "x' OR '1'='1") == []
    assert len(_rows(home)) == 2 and keyword_service.store.counts()["outbox"] == 2


@pytest.mark.parametrize("query", [None, 5, "", "   ", "\x00", "\ud800", "a" * 200_000, ["Biscuit"]])
def test_prefetch_never_raises(provider, query):
    assert provider.prefetch(query) == ""
    provider.queue_prefetch(query)
    assert provider.prefetch(query) == ""


# -- tool arguments -----------------------------------------------------------------------------

def _nested(depth: int) -> list:
    value: list = ["x"]
    for _ in range(depth):
        value = [value]
    return value


BAD_CALLS = [
    ("cmms_recall", {"query": 5}, "Argument 'query' must be a string, not a whole number."),
    ("cmms_recall", {"query": "cat", "limit": "5"}, "Argument 'limit' must be a whole number, not a string."),
    ("cmms_recall", {"query": "cat", "limit": True}, "Argument 'limit' must be a whole number, not a boolean."),
    ("cmms_recall", {"query": "cat", "limit": 2.5}, "Argument 'limit' must be a whole number, not a number."),
    ("cmms_recall", {"query": "cat", "limit": 0}, "Argument 'limit' must be between 1 and 50, not 0."),
    ("cmms_recall", {"query": "cat", "limit": 1000}, "Argument 'limit' must be between 1 and 50, not 1000."),
    ("cmms_recall", {"query": "cat", "limit": -1}, "Argument 'limit' must be between 1 and 50, not -1."),
    ("cmms_recall", {}, "Missing required argument 'query'."),
    ("cmms_recall", {"query": None}, "Missing required argument 'query'."),
    ("cmms_recall", {"query": ""}, "Argument 'query' must hold 1 to 10,000 characters."),
    ("cmms_recall", {"query": " \n"}, "Argument 'query' must hold 1 to 10,000 characters."),
    ("cmms_recall", {"query": "x" * 10_001}, "Argument 'query' must hold 1 to 10,000 characters."),
    ("cmms_recall", "cat", "Tool arguments must be a JSON object."),
    ("cmms_recall", None, "Tool arguments must be a JSON object."),
    ("cmms_recall", ["cat"], "Tool arguments must be a JSON object."),
    ("cmms_remember", {}, "Missing required argument 'content'."),
    ("cmms_remember", {"content": 42}, "Argument 'content' must be a string, not a whole number."),
    ("cmms_remember", {"content": ""}, "Memory content must be a non-empty string."),
    ("cmms_remember", {"content": "\x00 "}, "Memory content must be a non-empty string."),
    ("cmms_remember", {"content": "x", "tags": "a,b"}, "Argument 'tags' must be a list, not a string."),
    ("cmms_remember", {"content": "x", "tags": [1]}, "Argument 'tags' must be a list of strings."),
    ("cmms_forget", {}, "Missing required argument 'memory_id'."),
    ("cmms_forget", {"memory_id": ["abc"]}, "Argument 'memory_id' must be a string, not a list."),
    ("cmms_forget", {"memory_id": 7}, "Argument 'memory_id' must be a string, not a whole number."),
    ("cmms_forget", {"memory_id": "nope"}, "Unknown memory id 'nope' in this scope."),
    ("cmms_forget", {"memory_id": ""}, "Unknown memory id '' in this scope."),
    ("cmms_forget", {"memory_id": "\ud800"}, "Unknown memory id '\\ud800' in this scope."),
    ("cmms_forget", {"memory_id": "'; DELETE FROM memories; --"},
     "Unknown memory id \"'; DELETE FROM memories; --\" in this scope."),
    ("cmms_unknown", {"query": "cat"}, "Unknown cmms tool 'cmms_unknown'."),
    ("cmms_remember", {"content": "x", "tags": _nested(100)},
     "The tool call nests lists or objects deeper than 64 levels; nothing was done."),
    ("cmms_recall", {"query": "cat", "filters": {"and": _nested(900)}},
     "The tool call nests lists or objects deeper than 64 levels; nothing was done."),
    (None, {}, "Unknown cmms tool None."),
]


@pytest.mark.parametrize("name,args,message", BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_bad_tool_call_gives_a_clear_json_error_and_loses_nothing(provider, home, caplog, name, args, message):
    before = _rows(home)
    with caplog.at_level("WARNING"):
        assert _error(provider, name, args) == message
    assert _rows(home) == before
    assert [r.getMessage() for r in caplog.records if r.name.startswith("hermes_cmms")] == []  # no internal error
    refused = provider.service.audit_log(action="tool", limit=1)[0]  # the refusal is on the audit trail
    assert (refused.detail["tool"], refused.detail["ok"]) == (name if isinstance(name, str) else "unknown", False)


@pytest.mark.parametrize("limit,count", [(1, 1), (50, 50), (None, 8)])
def test_limit_bounds_are_honoured(provider, limit, count):
    for i in range(30):
        provider.sync_turn(f"Biscuit fact {i}", f"Biscuit reply {i}")
    results = _tool(provider, "cmms_recall", {"query": "Biscuit", "limit": limit})["results"]
    assert len(results) == count
    assert all("Biscuit" in r["content"] for r in results)


def test_good_tool_calls_round_trip(provider, home):
    assert _tool(provider, "cmms_remember", {"content": "Grandpa's birthday is 3 May", "extra": "x"}) == {
        "error": "cmms_remember takes content, tags; 'extra' is not one of them."}  # refused, not ignored
    stored = _tool(provider, "cmms_remember", {"content": "Grandpa's birthday is 3 May\x00", "tags": ["family"]})
    assert stored["stored"] is True
    assert ("Grandpa's birthday is 3 May", None, None) in _rows(home)
    [hit] = _tool(provider, "cmms_recall", {"query": "grandpa birthday", "limit": 1})["results"]
    assert hit["id"] == stored["id"]
    assert _tool(provider, "cmms_forget", {"memory_id": stored["id"]}) == {"forgotten": True, "id": stored["id"],
                                                                           "vectors_pending": 0}
    assert _error(provider, "cmms_forget", {"memory_id": stored["id"]}).startswith("Unknown memory id")


@pytest.mark.one_backend
def test_uninitialised_provider_answers_with_an_error():
    provider = CmmsMemoryProvider()
    assert json.loads(provider.handle_tool_call("cmms_recall", {"query": "x"})) == {
        "error": "cmms memory is not open."}
    assert provider.prefetch("x") == ""
    with pytest.raises(StoreUnavailable, match="did not store this turn"):  # loudly, never "stored nothing"
        provider.sync_turn("x", "y")
    provider.on_session_end([])


# -- the engine itself: typed errors -----------------------------------------------------------


@pytest.mark.parametrize("content", [None, "", "  ", "\x00", 5, b"bytes", ["list"]])
@pytest.mark.one_backend
def test_remember_rejects_content_that_is_not_text(keyword_service, home, content):
    with pytest.raises(InvalidInput, match="Memory content must be a non-empty string."):
        keyword_service.remember(SCOPE, content)
    assert _rows(home) == []


@pytest.mark.parametrize("scope", [None, "", " ", 3])
@pytest.mark.one_backend
def test_engine_rejects_a_missing_scope(keyword_service, scope):
    with pytest.raises(InvalidInput, match="A scope must be a non-empty string."):
        keyword_service.remember(scope, "text")
    with pytest.raises(InvalidInput, match="A scope must be a non-empty string."):
        keyword_service.search(scope, "text")


@pytest.mark.parametrize("query", [None, 5, b"cat", ["cat"]])
@pytest.mark.one_backend
def test_search_rejects_a_query_that_is_not_text(keyword_service, query):
    with pytest.raises(InvalidInput, match="The query must be a string."):
        keyword_service.search(SCOPE, query)


@pytest.mark.parametrize("limit", ["5", 0, -3, True, 2.0, None])
@pytest.mark.one_backend
def test_search_rejects_a_bad_limit(keyword_service, limit):
    with pytest.raises(InvalidInput, match="The result limit must be a positive whole number"):
        keyword_service.search(SCOPE, "cat", limit=limit)


def test_engine_accepts_odd_but_valid_text(keyword_service):
    a = keyword_service.remember("scope\ud800", "surrogate scope note about kiwis")
    b = keyword_service.remember("scope\udc00", "another surrogate scope note about kiwis")
    assert [h.id for h in keyword_service.search("scope\ud800", "kiwis")] == [a]
    assert [h.id for h in keyword_service.search("scope\udc00", "kiwis")] == [b]
    assert keyword_service.search(SCOPE, "\x00\ud800") == []
    assert keyword_service.search(SCOPE, "kiwis", limit=1000) == []
