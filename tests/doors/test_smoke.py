import re

import pytest

from hermes_cmms.provider import CmmsMemoryProvider

pytestmark = pytest.mark.store


@pytest.mark.quick
def test_turn_is_recalled_in_a_later_session(home):
    writer = CmmsMemoryProvider()
    writer.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary")
    writer.sync_turn("My cat is called Biscuit.", "What a lovely name!", session_id="s1")
    writer.on_session_end([])
    writer.shutdown()

    reader = CmmsMemoryProvider()
    reader.initialize("s2", hermes_home=str(home), platform="cli", agent_context="primary")
    block = reader.prefetch("What is my cat's name?")
    reader.shutdown()
    assert "Biscuit" in block
    assert re.search(r"^## \d{4}-\d{2}-\d{2}\n", block, re.M)  # grouped under its date
