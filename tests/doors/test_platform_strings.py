"""Whatever strings a platform sends reach the store: text that could not be decoded is kept and
rewrites no fact, and odd ids (a lone surrogate, NUL, U+FFFD) are stored, flushed and kept apart,
through Hermes, the command line and the MCP bridge."""
from __future__ import annotations

import pytest

from db import sql
from hermes_cmms.common.text import UNDECODABLE, clean_key
from hermes_cmms.provider import CmmsMemoryProvider, on_gateway_event
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}
KOELN = "I live in K\udcf6ln."  # "I live in Köln." in Latin-1, read as UTF-8 with surrogateescape
KEPT = f"I live in K{UNDECODABLE}ln."


@pytest.fixture
def kw_home(home, monkeypatch):
    monkeypatch.setenv("CMMS_EMBEDDER", "none")
    return home


def _provider(home, session: str, **ids) -> CmmsMemoryProvider:
    provider = CmmsMemoryProvider()
    provider.initialize(session, hermes_home=str(home), agent_context="primary", **{"platform": "cli", **ids})
    return provider


def _live_facts(home) -> list[str]:
    return sorted(content for (content,) in sql(
        home, "SELECT content FROM memories WHERE kind = 'fact' AND superseded_by IS NULL"))


@pytest.mark.quick
def test_an_undecodable_place_told_to_hermes_neither_cuts_nor_replaces_a_fact(kw_home):
    provider = _provider(kw_home, "s1")
    provider.sync_turn("I live in Lisbon.", "Nice.")
    provider.on_session_switch("s2", reset=True)
    provider.sync_turn(KOELN, "Nice.")
    provider.shutdown()
    assert _live_facts(kw_home) == ["user lives in Lisbon"]  # never "user lives in K"
    assert sql(kw_home, "SELECT content FROM memories WHERE session_id = 's2' AND role = 'user'") == [(KEPT,)]


def test_an_undecodable_place_learned_at_the_command_line_replaces_no_fact(kw_home, keyword_service, tmp_path):
    latin1 = tmp_path / "note.txt"
    latin1.write_bytes("I live in Köln.".encode("latin-1"))  # read with errors="replace": U+FFFD
    keyword_service.learn("local:default", "I live in Lisbon.")  # the CLI's scope
    for args in (["learn", KOELN], ["learn", "--file", str(latin1)], ["learn", "-"]):  # argv: surrogateescape
        ran = cli(kw_home, *args, stdin=latin1.read_bytes(), env=KEYWORD_ONLY)  # stdin: strict UTF-8
        assert (ran.returncode, ran.stderr) == (0, "")
    assert _live_facts(kw_home) == ["user lives in Lisbon"]
    assert sql(kw_home, "SELECT content FROM memories WHERE content LIKE '%ln.' ORDER BY seq") == [(KEPT,)]


def test_an_undecodable_place_learned_over_mcp_replaces_no_fact(kw_home):
    async def main():
        async with memory_bridge(kw_home, env=KEYWORD_ONLY) as bridge:
            await bridge.ok("learn", text="I live in Lisbon.")
            return await bridge.ok("learn", text=KOELN)

    assert run(main())["facts"] == []
    assert _live_facts(kw_home) == ["user lives in Lisbon"]


ODD_USERS = ["9\udc80", "9\udc81", f"9{UNDECODABLE}", "9", "9\x00", "\udc80" * 300]


def test_odd_gateway_ids_are_stored_flushed_and_kept_apart(kw_home):
    for number, user in enumerate(ODD_USERS):
        provider = _provider(kw_home, f"s{user}", platform="telegram", user_id=user, chat_id=user)
        provider.sync_turn(f"My locker code is {number}{number}{number}.", "Noted.")
        provider.shutdown()  # stores the end of the session
    scopes = [clean_key(f"user:telegram:{user}") for user in ODD_USERS]
    assert sql(kw_home, "SELECT count(*) FROM sessions WHERE flushed_at IS NULL") == [(0,)]
    for number, user in enumerate(ODD_USERS):
        provider = _provider(kw_home, "later", platform="telegram", user_id=user)
        found = provider.prefetch("locker code")
        assert f"is {number}{number}{number}." in found and found.count("locker code") == 1, (user, found)
        provider.sync_turn("One more thing.", "Sure.")
        provider.shutdown()
        on_gateway_event("session:end", {"platform": "telegram", "user_id": user})
    assert len({scope for (scope,) in sql(kw_home, "SELECT DISTINCT scope FROM memories")}) == len(set(scopes))
