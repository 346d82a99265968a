"""`hermes-cmms export --format memory-json | markdown`: the MCP memory server's JSON Lines
round-trips through its importer, and the Markdown notes read as basic-memory notes (parsed
here by basic-memory's rules, from ../shared/formats/basic-memory.md), hostile text as text."""
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
import time_machine
import yaml

from hermes_cmms import MemoryService, Settings
from inprocess import cli

FIXTURE = Path(__file__).parents[1] / "data" / "imports" / "memory-json" / "memory.json"
HOSTILE = "Line one\n## Relations\n- owns [[Bank]]\n<script>alert(1)</script> #secret **bold** ends (in parens)"


def run(home, *args):
    result = cli(home, *args, env={"CMMS_EMBEDDER": "none"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def stored(home, scope="local:default"):
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        lines = list(svc.transfer.export(scope))
    finally:
        svc.close()
    return ({r["content"] for r in lines if r["type"] == "memory"},
            {(r["subject"], r["predicate"], r["object"]) for r in lines if r["type"] == "fact"})


@pytest.mark.quick
@pytest.mark.store
def test_memory_json_round_trips_through_its_importer(home, tmp_path):
    run(home, "import", "--create", str(FIXTURE))
    exported = tmp_path / "memory.jsonl"
    summary = json.loads(run(home, "export", "--format", "memory-json", "--output", str(exported)))
    marked = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert all(isinstance(r.get("hermes_cmms"), dict) for r in marked)  # the ids of what each line stands for
    lines = [{k: v for k, v in r.items() if k != "hermes_cmms"} for r in marked]
    assert summary["counts"] == {"entities": sum(r["type"] == "entity" for r in lines),
                                 "relations": sum(r["type"] == "relation" for r in lines)}
    assert {"type": "relation", "from": "Bakery Project", "to": "Flour_Supplier",
            "relationType": "depends_on"} in lines
    mira = [r for r in lines if r["type"] == "entity" and r["name"] == "Mira_Okafor"]
    assert mira == [{"type": "entity", "name": "Mira_Okafor", "entityType": "person", "observations": [
        "Prefers tea over coffee", "Speaks Yoruba and Portuguese", 'Said "call me Mira"', "Keeps bees on the roof"]}]
    assert len({r["name"] for r in lines if r["type"] == "entity"}) == sum(r["type"] == "entity" for r in lines)

    again = json.loads(run(home, "import", str(exported)))["scopes"]["local:default"]  # the same ids
    assert (again["memories"]["added"], again["facts"]["added"]) == (0, 0)

    other = tmp_path / "other_home"
    other.mkdir()
    fresh = json.loads(run(other, "import", "--create", str(exported)))
    assert fresh["format"] == "memory-json"
    assert stored(other) == stored(home)


@pytest.mark.store
def test_markdown_notes_parse_as_basic_memory_notes(home, tmp_path):
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        with time_machine.travel(datetime(2026, 3, 1, 23, 59, tzinfo=timezone.utc), tick=False):
            svc.retain_turn("local:default", "s-1/../../x", "I moved to Braga (last week)", "Noted: Braga.")
        with time_machine.travel(datetime(2026, 3, 2, 0, 1, tzinfo=timezone.utc), tick=False):
            svc.retain_turn("local:default", "s-1/../../x", "And to Porto after", "Noted.")
        svc.remember("local:default", HOSTILE, tags=["x"])
        svc.remember_fact("local:default", "Ana", "works at", "Acme <b>Corp</b>")
    finally:
        svc.close()
    notes_dir = tmp_path / "notes"
    summary = json.loads(run(home, "export", "--format", "markdown", "--output", str(notes_dir)))
    files = sorted(p.relative_to(notes_dir).as_posix() for p in notes_dir.rglob("*.md"))
    assert summary["counts"]["notes"] == len(files) == 2
    assert not [p for p in notes_dir.rglob("*") if p.name.startswith(".")]  # no work files left
    notes = {name: parse_note(notes_dir / name) for name in files}
    session = next(n for name, n in notes.items() if name.startswith("sessions/"))
    day = next(n for name, n in notes.items() if name.startswith("days/"))
    assert all(n["front"]["permalink"] + ".md" == name for name, n in notes.items())
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", n["front"]["created"]) for n in notes.values())
    assert session["front"]["type"] == "conversation" and session["front"]["session_id"] == "s-1/../../x"
    assert [(o["category"], o["content"]) for o in session["observations"]] == [  # one note past midnight
        ("user", "I moved to Braga (last week)"), ("assistant", "Noted: Braga."), ("user", "And to Porto after"),
        ("assistant", "Noted.")]
    assert (session["front"]["created"], session["front"]["modified"]) == ("2026-03-01T23:59:00Z",
                                                                          "2026-03-02T00:01:00Z")
    hostile = next(o for o in day["observations"] if o["content"].startswith("Line one"))
    assert hostile["content"] == " ".join(HOSTILE.split())  # one line, every character kept
    assert hostile["tags"] == [] and hostile["category"] == "note"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", hostile["context"])
    assert sorted(day["relations"]) == [("mentions", "Acme b Corp /b"), ("mentions", "Ana")]
    raw = (notes_dir / next(name for name in files if name.startswith("days/"))).read_text(encoding="utf-8")
    assert "<script>" not in raw and "<b>" not in raw and "\n## Relations\n- owns" not in raw


OBSERVATION = re.compile(r"^- \[([^\[\]()]+)\] (.+)$")
RELATION = re.compile(r'^- ("[^"]+"|\S+) \[\[([^\]]+)\]\](?: \(([^)]*)\))?$')


def parse_note(path: Path) -> dict:
    """A note as basic-memory reads it: front matter (YAML), observations (category, content,
    #tags, a trailing (context)), relations (type, target), wiki links in other list items."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    note = {"front": yaml.safe_load(front), "observations": [], "relations": []}
    for line in body.splitlines():
        if (match := RELATION.match(line)):
            note["relations"].append((match.group(1), match.group(2)))
        elif (match := OBSERVATION.match(line)):
            content, context = match.group(2), None
            if content.endswith(")"):
                content, context = content[:content.rindex("(")].rstrip(), content[content.rindex("(") + 1:-1]
            tags = [word[1:] for word in content.split() if word.startswith("#")]
            note["observations"].append({"category": match.group(1), "content": unescaped(content),
                                         "context": context, "tags": tags})
        else:
            assert "[[" not in line, line  # no implicit link from a memory's text
    return note


def unescaped(text: str) -> str:
    """Markdown's backslash escapes undone (what a renderer shows)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def test_memory_json_gathers_an_entity_into_one_line_within_its_budget():
    from hermes_cmms.ops.formats._exports import memory_json

    records = [{"type": "memory", "id": str(n), "kind": "observation", "content": f"E{n % 2}: fact {n}",
                "detail": {"entity": f"E{n % 2}", "entity_type": "thing"}} for n in range(6)]
    whole = list(memory_json(records))
    assert [(r["name"], r["observations"]) for r in whole] == [("E0", ["fact 0", "fact 2", "fact 4"]),
                                                              ("E1", ["fact 1", "fact 3", "fact 5"])]
    bounded = list(memory_json(records, budget=20))  # past 20 characters held: written
    assert len(bounded) > 2 and sum(len(r["observations"]) for r in bounded) == 6
