"""The facade verbs the doors use instead of reaching into the engine's parts (issue 28): each
stays inside the scope it is given, whatever ids a caller crafts."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hermes_cmms.install as installer_package
import hermes_cmms.mcp_bridge as mcp_bridge
from hermes_cmms import service as facade
from hermes_cmms.common.errors import InvalidInput

MINE, THEIRS = "test:mine", "test:theirs"


@pytest.mark.quick
def test_get_never_reads_another_scope_and_answers_a_fact_with_its_parts(keyword_service):
    mine = keyword_service.remember_fact(MINE, "user", "lives in", "Lisbon")
    theirs = keyword_service.remember_fact(THEIRS, "user", "lives in", "Oslo")
    assert {i: m.fact for i, m in keyword_service.get(MINE, [mine, theirs]).items()} == {
        mine: ("user", "lives in", "Lisbon")}
    assert keyword_service.get(THEIRS, [mine]) == {}
    assert keyword_service.get(MINE, [None, 7, f"{theirs}' OR 1=1 --"]) == {}


def test_a_door_verb_refuses_a_bad_scope(keyword_service):
    with pytest.raises(InvalidInput):
        keyword_service.get("", ["x"])
    with pytest.raises(InvalidInput):
        keyword_service.copies.file_copies(None, "hermes:file:MEMORY.md", "hermes:memory-tool", "hermes-memory")


def test_containing_matches_the_text_as_stored_and_literally(keyword_service):
    secret = "sk-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
    kept = keyword_service.store_note(MINE, f"deploy key {secret} for staging", source="hermes:memory-tool").id
    keyword_service.store_note(MINE, "100% sure_thing", source="hermes:memory-tool")
    keyword_service.store_note(THEIRS, f"deploy key {secret} for staging", source="hermes:memory-tool")
    assert keyword_service.copies.as_stored(MINE, f"key {secret}") == "key [REDACTED:openai-key]"
    assert [m.id for m in keyword_service.copies.containing(MINE, f"key {secret}", ["hermes:memory-tool"])] == [kept]
    assert keyword_service.copies.containing(MINE, "100_ sure", ["hermes:memory-tool"]) == []  # _ and % are literal
    assert keyword_service.copies.containing(MINE, "deploy", ["hermes:file:MEMORY.md"]) == []


def test_file_copies_and_their_chain_are_the_owners_rows_of_the_scope(keyword_service):
    owner = ("hermes:file:MEMORY.md", "hermes:memory-tool", "hermes-memory")
    old = keyword_service.store_note(MINE, "Prefers tea", source=owner[0], judge=False).id
    new = keyword_service.store_note(MINE, "Prefers green tea", source=owner[0], supersedes=[old], judge=False).id
    tool = keyword_service.store_note(MINE, "Has a cat", source=owner[1], tags=[owner[2]], judge=False).id
    keyword_service.store_note(MINE, "Has a dog", source=owner[1], tags=["hermes-user"], judge=False)
    keyword_service.store_note(THEIRS, "Prefers coffee", source=owner[0], judge=False)
    copies = keyword_service.copies.file_copies(MINE, *owner)
    assert [(c.id, c.content, bool(c.owned)) for c in copies] == [(new, "Prefers green tea", True),
                                                                   (tool, "Has a cat", True)]
    assert keyword_service.copies.copy_chain(MINE, new, *owner) == [new, old]
    assert keyword_service.copies.copy_chain(THEIRS, new, *owner) == [new]  # nothing of MINE is reached from THEIRS


def test_a_lease_is_held_by_one_owner_at_a_time(keyword_service):
    assert keyword_service.upkeep.lease("mirror:test", "a", 60.0)
    assert not keyword_service.upkeep.lease("mirror:test", "b", 60.0)
    keyword_service.upkeep.release_lease("mirror:test", "a")
    assert keyword_service.upkeep.lease("mirror:test", "b", 60.0)


def test_the_names_a_door_needs_come_from_the_facade_as_plain_names():
    """No name is lent on first use any more (DOOR_NAMES, a module __getattr__): every name a door
    imports from the facade is one it defines or imports, listed in its __all__."""
    assert not hasattr(facade, "DOOR_NAMES") and "__getattr__" not in vars(facade)
    with pytest.raises(AttributeError):
        facade.delete_orphans  # a part's name is not the facade's
    root = Path(facade.__file__).parent
    doors = [root / door for door in ("hermes", "cli", "ui", "hermes_plugin", "bench")] + \
        [Path(m.__file__).parent for m in (mcp_bridge, installer_package)]
    imported = set()
    for path in (p for door in doors for p in door.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("service") and \
                    (node.level or node.module.startswith("hermes_cmms")):
                imported |= {alias.name for alias in node.names}
    assert imported and imported <= set(facade.__all__), imported - set(facade.__all__)
    assert all(getattr(facade, name) is not None for name in facade.__all__)
