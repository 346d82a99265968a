"""Search's filters apply in SQL at the doors too: a memory carrying the tag asked for is found by
the MCP door's recall_memory (through a real client session) when hundreds of untagged memories
rank above it (it was missed past the first ranked hits)."""
import anyio
import pytest

from hermes_cmms import MemoryService, Settings
from inprocess import memory_bridge

SCOPE = "user:telegram:42"


@pytest.mark.quick
@pytest.mark.store
def test_recall_memory_finds_a_tagged_match_ranked_past_the_first_hits(home):
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    for i in range(250):
        svc.remember(SCOPE, f"Boat {i} is moored at pier {i}.", judge=False)
    wanted = svc.remember(SCOPE, "A long note on many things: weather, gardens, an old boat, lunch, coffee, "
                                 "trains, clocks, bridges, letters and the rest of a busy week.",
                          tags=["harbour"], judge=False)
    svc.close()

    async def recall() -> dict:
        async with memory_bridge(home, env={"CMMS_EMBEDDER": "none"}) as bridge:
            return await bridge.ok("recall_memory", query="boat", scope=SCOPE, tags=["harbour"])

    found = anyio.run(recall)
    assert [m["content"] for m in found["results"]] == [
        "A long note on many things: weather, gardens, an old boat, lunch, coffee, trains, clocks, bridges, "
        "letters and the rest of a busy week."]
    assert found["results"][0]["id"].replace("-", "") == wanted
