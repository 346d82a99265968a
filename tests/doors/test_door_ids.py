"""Ids and numbers at the MCP door as a contract client sends them, through a client session:
an error quotes an id as the caller gave it (dashed), and a whole number written 1.0 is one."""
from __future__ import annotations

import uuid

import pytest

from inprocess import memory_bridge
from mcp_client import run

pytestmark = pytest.mark.store

KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}
HASH = "0123456789abcdef0123456789abcdef"  # 32 hex digits that are no id


@pytest.mark.quick
def test_an_error_quotes_the_id_dashed_as_the_caller_gave_it(home):
    missing = str(uuid.uuid4())

    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            return (await bridge.call("forget_memory", scope="local:default", memory_id=missing),
                    await bridge.call("get_belief", belief_id=missing.upper()),
                    await bridge.call("reflect", mode=HASH))

    forgot, belief, mode = run(main())
    assert forgot.error and f"Unknown memory id '{missing}' in this scope." in forgot.text
    assert missing.replace("-", "") not in forgot.text + belief.text
    assert belief.error and f"'{missing.upper()}'" in belief.text  # as given, not as stored
    assert mode.error and f"'{HASH}'" in mode.text  # not an id: never rewritten


def test_a_whole_number_written_with_a_decimal_point_is_a_whole_number(home):
    async def main():
        async with memory_bridge(home, env=KEYWORD_ONLY) as bridge:
            await bridge.ok("remember", subject="Ana", predicate="lives in", object="Lisbon")
            return (await bridge.call("search", query="Ana Lisbon", limit=1.0),
                    await bridge.call("list_memories", scope="local:default", limit=2.0, offset=0.0),
                    await bridge.call("search", query="Ana", limit=1.5),
                    await bridge.call("search", query="Ana", limit=1e300))

    whole, page, half, huge = run(main())
    assert not whole.error and whole.data["total"] == 1, whole.text
    assert not page.error and page.data["limit"] == 2 and isinstance(page.data["limit"], int), page.text
    assert half.error and "Argument 'limit' must be a whole number, not a number." in half.text
    assert huge.error and "Argument 'limit' must be a whole number, not a number." in huge.text
