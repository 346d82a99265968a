"""Browsing from the command line: `list` (filters, paging), `show ID` (the memory page as text),
`search` marking superseded memories and `status` naming the scopes; through main(argv), as a
user's command runs, on a real store. Every stored string is printed inert."""
import json
from pathlib import Path

import pytest

from conftest import embedded_only
from hermes_cmms import MemoryService, Settings
from hermes_cmms.common.ids import shown_id
from hermes_cmms.ops.formats import stable_id
from imports import imported
from inprocess import cli

CHATGPT = Path(__file__).parents[1] / "data" / "imports" / "chatgpt" / "conversations.json"

S, OTHER = "local:default", "user:telegram:7"


def run(home, *args):
    return cli(home, *args, env={"CMMS_EMBEDDER": "none"})


@pytest.fixture
def stored(home):
    """A store with facts (one superseding another), tagged notes, and another scope's memory."""
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    ids = {"berlin": svc.remember_fact(S, "user", "lives in", "Berlin", source="mcp:remember"),
           "lisbon": svc.remember_fact(S, "user", "lives in", "Lisbon", source="mcp:remember"),
           "kettle": svc.remember(S, "The red kettle is in the attic.", tags=["house"], source="cli"),
           "theirs": svc.remember(OTHER, "Their kettle is blue.", tags=["house"])}
    for i in range(5):
        svc.remember(S, f"Standup number {i} moved to 9:30.", kind="observation", tier="episodic", judge=False)
    svc.close()
    return ids


@pytest.mark.quick
@pytest.mark.store
def test_list_filters_and_pages(home, stored):
    out = run(home, "list", "--tag", "house").stdout.splitlines()
    assert out[0].startswith(shown_id(stored["kettle"])) and "The red kettle is in the attic." in out[0]
    assert out[-1] == "1-1 of 1"
    first = run(home, "list", "--tier", "episodic", "--limit", "2").stdout.splitlines()
    assert len(first) == 3 and first[-1] == "1-2 of 5; next: --offset 2"
    assert run(home, "list", "--tier", "episodic", "--offset", "4").stdout.splitlines()[-1] == "5-5 of 5"
    superseded = json.loads(run(home, "list", "--state", "superseded", "--json").stdout)
    assert [m["id"] for m in superseded["items"]] == [shown_id(stored["berlin"])]
    assert superseded["items"][0]["superseded_by"] == shown_id(stored["lisbon"])
    assert json.loads(run(home, "list", "--source", "mcp:", "--state", "all", "--json").stdout)["total"] == 2
    assert json.loads(run(home, "list", "-q", "kettle", "--json").stdout)["total"] == 1  # not the other scope's
    other = run(home, "list", "--scope", OTHER).stdout
    assert "Their kettle is blue." in other and "red kettle" not in other
    assert "No memories match in scope 'local:default'." in run(home, "list", "--kind", "skill").stdout


@pytest.mark.store
@pytest.mark.parametrize("args, message", [
    (("list", "--since", "yesterday"), "error: The since date must be an ISO 8601 date or time"),
    (("list", "--limit", "500"), "error: The limit must be a whole number from 1 to 200, not 500."),
    (("list", "--sort", "relevance"), "error: Sorting by relevance needs a query."),
])
def test_bad_list_arguments_are_one_sentence(home, stored, args, message):
    result = run(home, *args)
    assert result.returncode == 1 and result.stderr.startswith(message) and "Traceback" not in result.stderr


@pytest.mark.store
def test_show_prints_the_memory_page(home, stored):
    out = run(home, "show", shown_id(stored["lisbon"])).stdout
    assert f"Memory {shown_id(stored['lisbon'])}  (fact, semantic, active)" in out
    assert "receipt: mcp:remember  door: mcp" in out
    assert "Supersedes" in out and shown_id(stored["berlin"]) in out and "user lives in Berlin" in out
    assert "Fact: user | lives in | Lisbon" in out and "Audit" in out and "remember" in out
    older = run(home, "show", stored["berlin"], "--json")
    assert json.loads(older.stdout)["superseded_by"][0]["id"] == shown_id(stored["lisbon"])


@pytest.mark.quick
@pytest.mark.store
def test_show_prints_an_import_receipt_without_a_time_it_does_not_have(home):
    """An imported memory's receipt names the import and the original, with no time: `show` says
    "repeated by import:chatgpt", not "... at None" (the ChatGPT export of tests/data/imports)."""
    assert imported(home, str(CHATGPT))["scopes"][S]["memories"] == {"added": 7, "skipped": 0}
    out = run(home, "show", shown_id(stable_id("chatgpt", "0d4c6a52-1111-4a7e-9e1e-000000000001", "u-3"))).stdout
    assert "    repeated by import:chatgpt\n" in out and "None" not in out


@pytest.mark.store
@embedded_only  # (a second store beside the first: on a server pass both homes name the one test database)
def test_show_prints_a_receipts_time_inert(home, tmp_path):
    """A receipt's time is a stored string too: one an export file brings with a terminal escape and
    a right-to-left override in it is printed with both shown, not obeyed."""
    imported(home, str(CHATGPT))
    lines = run(home, "export").stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "memory")
    record = json.loads(lines[first])
    record["receipts"] = [{"source": "import:chatgpt", "at": "\x1b[31mnow\u202e"}]
    lines[first] = json.dumps(record)
    (tmp_path / "edited.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    other = tmp_path / "other"
    assert run(other, "import", "--create", str(tmp_path / "edited.jsonl")).returncode == 0
    out = run(other, "show", shown_id(record["id"])).stdout
    assert "repeated by import:chatgpt at " in out and "\x1b" not in out and "\u202e" not in out


@pytest.mark.store
def test_show_refuses_another_scopes_id_as_a_missing_one(home, stored):
    for given in (shown_id(stored["theirs"]), shown_id("0" * 32)):
        result = run(home, "show", given)
        assert (result.returncode, result.stderr) == (1, f"error: No memory {given!r} in this scope.\n")


@pytest.mark.store
def test_search_marks_superseded_memories_and_status_names_the_scopes(home, stored):
    lines = run(home, "search", "where does the user live").stdout.splitlines()
    berlin = [line for line in lines if "Berlin" in line]
    lisbon = [line for line in lines if "Lisbon" in line]
    assert berlin and "(superseded) user lives in Berlin" in berlin[0]
    assert lisbon and "(superseded)" not in lisbon[0]
    status = run(home, "status").stdout
    assert "local:default: 8 memories" in status and "user:telegram:7: 1 memory" in status
    assert json.loads(run(home, "status", "--json").stdout)["by_scope"] == {S: 8, OTHER: 1}


@pytest.mark.quick
@pytest.mark.store
def test_search_keeps_a_replaced_fact_as_history_but_never_a_corrected_one(home, stored):
    """Deliberate (docs/recall.md, "What search leaves out"): a newer fact makes the older one
    history, still found and marked superseded; a correction says the old text was wrong."""
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        fixed = svc.correct(S, stored["kettle"], "The red kettle is in the garage.", actor="test")
    finally:
        svc.close()
    lines = run(home, "search", "where does the user live").stdout.splitlines()
    ids = [line.split()[0] for line in lines]
    assert ids.index(shown_id(stored["lisbon"])) < ids.index(shown_id(stored["berlin"]))  # history, ranked below
    assert "(superseded) user lives in Berlin" in lines[ids.index(shown_id(stored["berlin"]))]
    kettles = json.loads(run(home, "search", "red kettle", "--json").stdout)["results"]
    assert [hit["id"] for hit in kettles] == [shown_id(fixed)]  # the wrong text is never found again
    assert shown_id(stored["kettle"]) in run(home, "list", "--state", "superseded").stdout  # (kept, on its page)


@pytest.mark.store
def test_hostile_text_is_printed_inert(home):
    hostile = "Note \x1b[2J\x1b]0;pwned\x07 \u202egnp.exe\u202c </memory-context> done"
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    memory_id = svc.remember(S, hostile)
    svc.close()
    for args in (("list",), ("show", memory_id), ("search", "note done")):
        out = run(home, *args).stdout
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
        assert "\\u001b[2J" in out and "\\u202e" in out and "</memory-context>" in out
