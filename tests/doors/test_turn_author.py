"""Who wrote a turn (Hermes 0.23's group chats): sync_turn's `turn_author` and on_turn_start's
author_* kwargs, called as the 0.23 manager calls them (tests/hermes023_runtime.py, item 15),
make the user's message that author's (the speaker the ranking knows) and are kept, with the
gateway client that sent the turn, in the message's provenance."""
from __future__ import annotations

import json

import pytest

import hermes023_runtime as hermes023
from db import sql
from hermes_cmms.provider import CmmsMemoryProvider

pytestmark = pytest.mark.store
SCOPE = "conversation:discord:garden-group"


def _provider(home, session="g1"):
    p = CmmsMemoryProvider()
    p.initialize(session, hermes_home=str(home), platform="discord", chat_id="garden-group",
                 agent_context="primary", agent_identity="default")
    return p


def _messages(home) -> list[dict]:
    rows = sql(home, "SELECT role, content, speaker, detail, source FROM memories "
                     "WHERE kind = 'message' AND scope = ? ORDER BY seq", SCOPE, mapping=True)
    return [{**row, "detail": json.loads(row["detail"]) if row["detail"] else None} for row in rows]


@pytest.mark.quick
def test_turn_author_is_the_speaker_and_kept_with_the_client(kw_home):
    p = _provider(kw_home)
    said = "I planted the tomatoes by the fence."
    hermes023.turn_start(p, 1, said)
    hermes023.sync_turn(p, said, "Noted.", session_id="g1",
                        turn_author={"id": "u-17", "name": "Alice", "is_bot": False})
    later = "The tomatoes there need water daily."
    p.on_turn_start(2, later, author_id="u-23", author_name="Bob", author_is_bot=True, client="discord-bot-v2")
    hermes023.sync_turn(p, later, "OK.", session_id="g1")  # no turn_author: on_turn_start's, for this message
    p.sync_turn("Anyone there?", "Yes.", session_id="g1")  # a turn nobody was named for
    p.shutdown()
    rows = _messages(kw_home)
    assert [(r["role"], r["speaker"], r["detail"]) for r in rows] == [
        ("user", "alice", {"author": {"id": "u-17", "name": "Alice", "is_bot": False}}),
        ("assistant", None, None),
        ("user", "bob", {"author": {"id": "u-23", "name": "Bob", "is_bot": True}, "client": "discord-bot-v2"}),
        ("assistant", None, None),
        ("user", None, None), ("assistant", None, None)]


def test_an_authors_turns_rank_first_when_the_question_names_them(kw_home):
    p = _provider(kw_home)
    for name, place in (("Alice", "fence"), ("Bob", "shed")):  # Bob's is the newer: recency favours it
        said = f"I planted the tomatoes by the {place}."
        hermes023.sync_turn(p, said, "Noted.", session_id="g1", turn_author={"id": name.lower(), "name": name})
    found = json.loads(p.handle_tool_call("cmms_recall", {"query": "Where did Alice plant the tomatoes?"}))
    p.shutdown()
    assert found["results"][0]["content"] == "I planted the tomatoes by the fence."


def test_hostile_authors_are_cut_cleaned_and_redacted(kw_home):
    p = _provider(kw_home)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    p.sync_turn("First message.", "Hi.", session_id="g1", turn_author={"id": ["not", "an", "id"], "name": f"Eve {token}",
                                                                      "is_bot": "yes"})
    p.sync_turn("Second message.", "Hi.", session_id="g1", turn_author={"id": 42, "name": "M\x00al\nlory " * 100})
    p.sync_turn("Third message.", "Hi.", session_id="g1", turn_author="Trudy")  # not a dict: nobody
    p.shutdown()
    eve, mallory, trudy = (r for r in _messages(kw_home) if r["role"] == "user")
    assert token not in json.dumps(eve) and eve["detail"] == {"author": {"name": "Eve [REDACTED:github-token]"}}
    assert mallory["detail"]["author"]["id"] == "42" and len(mallory["speaker"]) == 200
    assert "\x00" not in mallory["speaker"] and "\n" not in mallory["speaker"]
    assert (trudy["speaker"], trudy["detail"]) == (None, None)
