"""Ids round-trip: whatever id any door prints (whole and dashed, as stored, the dashboard's and
`list`'s first 8 digits) is taken by every door, resolved in the facade among the asked scope's
memories only. A short id another scope's memory starts is unknown here; one several memories
of the scope start is refused in one sentence that counts them."""
from __future__ import annotations

import json
import re

import pytest

from db import sql
from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.errors import AmbiguousId, UnknownMemory
from hermes_cmms.common.ids import id_prefix, shown_id
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store
SCOPE, OTHER = "local:default", "user:telegram:9"
KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}


def _forms(memory_id: str) -> list[str]:
    """Every form a door prints an id in: dashed, as stored, the dashboard's 8 digits, and a
    longer start of the dashed id, as a person might copy it."""
    dashed = shown_id(memory_id)
    return [dashed, memory_id, dashed[:8], dashed[:13].upper()]


@pytest.mark.quick
def test_a_short_id_is_read_as_the_start_of_an_id_and_nothing_else():
    assert id_prefix("1234abcd") == "1234abcd" and id_prefix(" 1234ABCD-ef ") == "1234abcdef"
    assert [id_prefix(v) for v in ("1234abc", "12-34abcd", "g234abcd", "0" * 32, "Alice", None, "")] == [None] * 7


@pytest.mark.quick
def test_the_facade_takes_a_short_id_of_the_asked_scope_only(keyword_service):
    mine = keyword_service.remember(SCOPE, "Alice drinks green tea every morning")
    theirs = keyword_service.remember(OTHER, "the telegram user's kiwi password hint")
    for form in _forms(mine):
        assert keyword_service.memory_page(SCOPE, form)["memory"]["id"] == mine, form
    with pytest.raises(UnknownMemory) as refused:  # another scope's memory: unknown, as a missing one
        keyword_service.memory_page(SCOPE, shown_id(theirs)[:8])
    assert "kiwi" not in str(refused.value) and theirs not in str(refused.value)
    assert keyword_service.pin(SCOPE, mine[:8], actor="test") is True
    assert keyword_service.tag(SCOPE, shown_id(mine)[:8], ["tea"], actor="test") == ["tea"]
    assert [e.action for e in keyword_service.audit_log(SCOPE, memory_id=mine[:8])][:2] == ["tag", "pin"]
    # the log of every scope (audit-log asked no --scope) takes it too, as it reads every scope already
    assert [e.action for e in keyword_service.audit_log(None, memory_id=shown_id(mine)[:8])][:2] == ["tag", "pin"]
    assert [e.action for e in keyword_service.audit_log(None, memory_id=theirs[:8])] == ["remember"]
    belief = keyword_service.set_belief(SCOPE, "The staging API is stable")["id"]
    assert keyword_service.get_belief(SCOPE, belief_id=shown_id(belief)[:8])["beliefs"][0]["id"] == belief
    newer = keyword_service.set_belief(SCOPE, "The staging API is flaky", supersedes=belief[:10])
    assert newer["superseded_ids"] == [belief]


def test_a_short_id_several_memories_start_is_refused_counting_the_scopes_own_only(home, keyword_service):
    ids = [keyword_service.remember(SCOPE, f"note number {n}") for n in range(2)]
    theirs = keyword_service.remember(OTHER, "another scope's note")
    for n, memory_id in enumerate([*ids, theirs]):  # three ids that start alike, one in another scope
        sql(home, "UPDATE memories SET id = ? WHERE id = ?", f"ab12cd34{n:x}{'0' * 23}", memory_id)
    with pytest.raises(AmbiguousId) as refused:
        keyword_service.memory_page(SCOPE, "ab12cd34")
    assert str(refused.value) == "2 memories in this scope start with ab12cd34: give more of the id."
    assert keyword_service.memory_page(SCOPE, "AB12CD34-0")["memory"]["content"] == "note number 0"
    assert keyword_service.memory_page(OTHER, "ab12cd34")["memory"]["content"] == "another scope's note"


def test_every_id_form_a_door_prints_is_taken_by_every_door(home):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from dashboard import running, signed_in
    from hermes_cmms.hermes_plugin.dashboard_api import close_all, router

    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        memory_id = service.remember(SCOPE, "The storage unit code is 4412.")
        service.remember(OTHER, "another scope's secret")
        with running(service) as door:  # the dashboard prints a memory's 8 digits as its link's text
            page = signed_in(door).get("/memories", params={"scope": SCOPE}).text
        printed = {"dashboard": re.search(r'class="id" href="[^"]*"[^>]*>([^<]+)</a>', page).group(1)}
    finally:
        service.close()
    listed = cli(home, "list", env=KEYWORD_ONLY)
    assert listed.returncode == 0, listed.stderr
    printed["list"] = listed.stdout.split()[0]
    printed["list --json"] = json.loads(cli(home, "list", "--json", env=KEYWORD_ONLY).stdout)["items"][0]["id"]
    printed["stored"] = memory_id  # as the database and the audit's JSON hold it
    printed["short, dashed"] = shown_id(memory_id)[:13]
    assert printed["dashboard"] == shown_id(memory_id)[:8] and printed["list"] == shown_id(memory_id)

    app = FastAPI()
    app.include_router(router, prefix="/api/plugins/cmms")
    try:
        with TestClient(app) as tab:
            for door, form in printed.items():
                shown = cli(home, "show", form, env=KEYWORD_ONLY)
                assert shown.returncode == 0 and shown_id(memory_id) in shown.stdout, (door, shown.stderr)
                pinned = cli(home, "pin", form, env=KEYWORD_ONLY)
                assert pinned.returncode == 0, (door, pinned.stderr)
                answer = tab.get("/api/plugins/cmms/memory", params={"id": form, "scope": SCOPE})
                assert answer.status_code == 200 and answer.json()["memory"]["id"] == shown_id(memory_id), door
    finally:
        close_all()
    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        with running(service) as door:
            client = signed_in(door)
            for form in printed.values():
                answer = client.get(f"/memory/{form}", params={"scope": SCOPE})
                assert answer.status_code == 200 and "The storage unit code is 4412." in answer.text, form
    finally:
        service.close()

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            events = [await bridge.call("audit_log", scope=SCOPE, memory_id=form) for form in printed.values()]
            return events, await bridge.call("forget_memory", scope=SCOPE, memory_id=printed["dashboard"])

    events, forgot = run(main())
    assert all(not e.error and e.data["events"] and {x["memory_id"] for x in e.data["events"]} == {shown_id(memory_id)}
               for e in events), [e.text for e in events]
    assert not forgot.error and forgot.data["ids"] == [shown_id(memory_id)], forgot.text
