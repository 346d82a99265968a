"""One shape of a memory at every door (hermes_cmms/recall/shape.py): the Hermes tools, the MCP
tools and the CLI give every field they share the same name and the same meaning."""
import json

import pytest

from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.scopes import local_scope
from hermes_cmms.hermes.tools import call_tool
from inprocess import cli, memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

QUESTION = "when does the ferry leave"


def _hermes(home, scope: str) -> tuple[dict, dict, dict]:
    with MemoryService(Settings.load(home, embedder="none")) as service:
        first = call_tool(service, scope, "cmms_remember", {"content": "The ferry leaves at nine.", "tags": ["trip"]})
        again = call_tool(service, scope, "cmms_remember", {"content": "the ferry leaves at nine. "})
        return first, again, call_tool(service, scope, "cmms_recall", {"query": QUESTION})


def _mcp(home) -> dict:
    async def main():
        async with memory_bridge(home, env={"CMMS_EMBEDDER": "none"}) as bridge:
            return await bridge.ok("search", query=QUESTION)

    return run(main())


@pytest.mark.quick
def test_every_door_shows_a_memory_with_one_meaning_per_field(home):
    scope = local_scope(home)  # the MCP tools' default scope
    first, again, hermes = _hermes(home, scope)
    mcp = _mcp(home)
    shown = cli(home, "search", QUESTION, "--scope", scope, "--json", env={"CMMS_EMBEDDER": "none"})
    assert (first["reinforced"], again["reinforced"], again["id"]) == (False, True, first["id"])  # a write: a bool
    [hit], [item] = hermes["results"], mcp["memories"]  # MCP search: `results` are its fact hits
    assert (item["reinforcements"], "reinforced" in item) == (1, False)  # a memory: how often, by another name
    shared = set(hit) & set(item)
    assert shared == {"id", "content", "kind", "role", "session_id", "source", "score"}
    assert {key: hit[key] for key in shared} == {key: item[key] for key in shared}
    assert hit["date"] == item["created_at"] and item["tags"] == ["trip"]
    assert shown.stdout == json.dumps(hermes, indent=2, ensure_ascii=False) + "\n"  # `search --json`: the tool's answer
