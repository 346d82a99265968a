"""`hermes-cmms import` of mem0 and OpenMemory exports: a mem0 `get_all` dump (US/Pacific
times of mem0 before 1.0.8, a repeated id, an expired and an empty memory, a gateway user of
Hermes' mem0 provider, graph relations) and OpenMemory's backup ZIP (deleted, archived and
paused memories, metadata as JSON text), through the command line on a real store."""
import gzip
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hermes_cmms.ops.formats import Skipped, mem0
from imports import imported, memories_and_peak, nothing_stored, run

DATA = Path(__file__).parents[1] / "data" / "imports" / "mem0"
GET_ALL, OPENMEMORY = DATA / "get_all.json", DATA / "memories_export.zip"


def contents(home, query, scope="local:default"):
    found = run(home, "search", query, "--scope", scope, "--json")
    return [r["content"] for r in json.loads(found.stdout)["results"]] if found.stdout.startswith("{") else []


@pytest.mark.quick
def test_the_reader_keeps_offsets_and_skips_what_mem0_dropped():
    records = list(mem0.records(GET_ALL, scope="local:default"))
    memories = {r["content"]: r for r in records if not isinstance(r, Skipped) and r["type"] == "memory"}
    peanuts = memories["Allergic to peanuts"]
    assert datetime.fromtimestamp(peanuts["created_at"], timezone.utc).isoformat() == "2025-10-20T21:03:11.512345+00:00"
    assert [r for r in records if isinstance(r, Skipped)] == [Skipped("expired in mem0", "results[4]"),
                                                             Skipped("a memory without text", "results[5]")]
    assert list(memories).count("Planning a trip to Kyoto in April") == 1  # the repeated id
    assert memories["Planning a trip to Kyoto in April"]["tags"] == ["travel"]
    assert memories["Telegram user 4242 keeps a sourdough starter called Gloop"]["scope"] == "user:telegram:4242"
    assert "scope" not in peanuts  # hermes-user: the owner, into the scope the import is given
    sessions = [r for r in records if not isinstance(r, Skipped) and r["type"] == "session"]
    assert len(sessions) == 1 and memories["Books window seats on trains"]["session_id"] == sessions[0]["session_id"]
    assert {(r["subject"], r["predicate"], r["object"]) for r in records
            if not isinstance(r, Skipped) and r["type"] == "fact"} == {("user", "plans_trip_to", "kyoto"),
                                                                      ("user", "allergic_to", "peanuts")}


def test_openmemory_zip_skips_deleted_and_keeps_archived_as_archived():
    records = [r for r in mem0.records(OPENMEMORY, scope="local:default")]
    assert Skipped("deleted in mem0", "line 3") in records
    memories = {r["content"]: r for r in records if not isinstance(r, Skipped)}
    assert "Lives in Porto" not in memories
    assert memories["Works on a bakery inventory app"]["state"] == "archived"
    assert memories["Prefers oat milk in coffee"]["tags"] == ["preferences", "food"]
    assert "Plays the cello on Sundays" in memories  # paused, and metadata given as JSON text


@pytest.mark.store
def test_dry_run_import_reimport_and_recall_in_each_users_scope(home):
    dry = imported(home, "--dry-run", str(GET_ALL))
    assert dry["format"] == "mem0"
    assert {s: v["memories"]["new"] for s, v in dry["scopes"].items()} == {"local:default": 6,
                                                                          "user:telegram:4242": 1}
    assert dry["skipped"]["expired in mem0"] == {"count": 1, "first": "results[4]"}
    assert dry["from"] == "2025-10-20T21:03:11+00:00"
    assert nothing_stored(home)

    first = imported(home, str(GET_ALL))["scopes"]
    assert (first["local:default"]["memories"]["added"], first["local:default"]["facts"]["added"]) == (6, 2)
    again = imported(home, str(GET_ALL))["scopes"]
    assert {s: v["memories"]["added"] for s, v in again.items()} == {"local:default": 0, "user:telegram:4242": 0}

    assert contents(home, "allergic peanuts")[0] == "Allergic to peanuts"
    assert contents(home, "sourdough starter") == []  # another user's memory is not the owner's
    assert contents(home, "sourdough starter", "user:telegram:4242") == [
        "Telegram user 4242 keeps a sourdough starter called Gloop"]


@pytest.mark.store
def test_scope_puts_every_user_in_the_one_scope_named(home):
    summary = imported(home, "--scope", "local:work", str(GET_ALL))
    assert list(summary["scopes"]) == ["local:work"]
    assert "Telegram user 4242 keeps a sourdough starter called Gloop" in contents(home, "sourdough", "local:work")


@pytest.mark.store
def test_a_dump_cut_short_is_one_sentence_and_the_full_file_then_imports(home, tmp_path):
    cut = tmp_path / "get_all.json"
    cut.write_bytes(GET_ALL.read_bytes()[:1200])
    failed = run(home, "import", "--create", str(cut))
    assert failed.returncode == 1
    assert failed.stderr.startswith("error: 'get_all.json' is not valid JSON at results[") and \
        failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert nothing_stored(home)  # nothing half-imported (a first import refused makes no store)
    done = imported(home, str(GET_ALL))["scopes"]["local:default"]["memories"]
    assert done == {"added": 6, "skipped": 0}


@pytest.mark.store
def test_openmemory_import_and_reimport(home):
    first = imported(home, str(OPENMEMORY))
    assert first["scopes"]["local:default"]["memories"]["added"] == 3
    assert imported(home, str(OPENMEMORY))["scopes"]["local:default"]["memories"] == {"added": 0, "skipped": 3}
    assert contents(home, "oat milk")[0] == "Prefers oat milk in coffee"
    assert contents(home, "Porto") == []  # deleted in OpenMemory


@pytest.mark.parametrize("name, data", [
    ("platform.json", json.dumps({"count": 2, "next": None, "previous": None, "results": [
        {"id": "p1", "memory": "Likes jazz", "user_id": "sam", "session_id": "s9", "categories": ["music"],
         "created_at": "2026-03-01T10:00:00Z"},
        {"id": "p2", "memory": "Lives in Oslo", "user_id": "kim", "created_at": "2026-03-02T10:00:00Z"}]})),
    ("v1.json", json.dumps([{"id": "p1", "memory": "Likes jazz", "user_id": "sam", "run_id": "s9",
                             "metadata": {"categories": ["music"]}, "created_at": 1772359200},
                            {"id": "p2", "memory": "Lives in Oslo", "user_id": "kim", "created_at": 1772445600}])),
    ("memories.jsonl.gz", None),
])
def test_every_shape_of_a_dump_reads_the_same(tmp_path, name, data):
    path = tmp_path / name
    if data is None:
        import gzip
        lines = [{"id": "p1", "content": "Likes jazz", "state": "active", "categories": ["music"],
                  "created_at": "2026-03-01T10:00:00+00:00"},
                 {"id": "p2", "content": "Lives in Oslo", "state": "active", "created_at": "2026-03-02T10:00:00Z"}]
        path.write_bytes(gzip.compress("\n".join(json.dumps(line) for line in lines).encode()))
    else:
        path.write_text(data, encoding="utf-8")
    assert mem0.sniff(path)
    memories = [r for r in mem0.records(path, scope="local:default") if r["type"] == "memory"]
    assert [(m["content"], m["tags"], m["created_at"]) for m in memories] == [
        ("Likes jazz", ["music"], 1772359200.0), ("Lives in Oslo", [], 1772445600.0)]
    if data is not None:  # two users: the first is the owner, the other keeps a scope of their own
        assert "scope" not in memories[0] and memories[1]["scope"] == "user:mem0:kim"


def test_a_big_dump_is_read_in_bounded_memory(tmp_path):
    """A 25 MB get_all dump on one line, streamed: the reader never holds the whole of it."""
    path = tmp_path / "get_all.json"
    items = ({"id": f"id-{n}", "memory": f"memory {n} " + "lorem ipsum " * 100, "user_id": "hermes-user",
              "created_at": "2026-01-01T00:00:00Z"} for n in range(20_000))
    with path.open("w", encoding="utf-8") as out:
        out.write('{"results": [')
        out.write(", ".join(json.dumps(item) for item in items))
        out.write("]}")
    size = path.stat().st_size
    count, peak = memories_and_peak(mem0, path)
    assert count == 20_000
    assert size > 20 * 2**20 and peak < size / 5, (size, peak)


def test_an_openmemory_zip_with_memories_json_only_is_read_from_it(tmp_path):
    import zipfile

    dump = {"user": {"user_id": "default_user"}, "apps": [],
            "memories": [{"id": "m1", "content": "Grows basil", "state": "active", "metadata": {},
                          "created_at": "2025-09-01T00:00:00+00:00"},
                         {"id": "m2", "content": "Had a cat", "state": "deleted", "metadata": {},
                          "created_at": "2025-09-01T00:00:00+00:00"}]}
    path = tmp_path / "memories_export_default_user.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("export/memories.json", json.dumps(dump, indent=2))
    assert mem0.sniff(path)
    records = list(mem0.records(path, scope="local:default"))
    assert [r["content"] for r in records if not isinstance(r, Skipped)] == ["Grows basil"]
    assert Skipped("deleted in mem0", "memory 1") in records


def test_no_two_users_share_a_scope(tmp_path):
    """The first user named is the owner; mem0's default names are one user; any other user,
    even after them, keeps a scope of their own."""
    items = [{"id": str(n), "memory": f"memory {n} of {user}", "user_id": user}
             for n, user in enumerate(["alex", "hermes-user", "alex", "default_user", "bo"])]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    scopes = [r.get("scope") for r in mem0.records(path, scope="local:default")]
    assert scopes == [None, "user:mem0:default_user", None, "user:mem0:default_user", "user:mem0:bo"]


@pytest.mark.quick
@pytest.mark.store
@pytest.mark.parametrize("name", ["mem0-memories.jsonl", "mem0-memories.jsonl.gz"])
def test_mem0s_own_objects_one_a_line_are_taken_for_mem0(home, tmp_path, name):
    # What a user writes when dumping mem0 (OSS 1.x) as JSON Lines: each item of `get_all`'s
    # results, as mem0 returns it (id, memory, hash, metadata, the times with mem0's offset,
    # user_id), json.dumps'd one a line, gzipped or not.
    items = json.loads(GET_ALL.read_text())["results"][:3]
    lines = "".join(json.dumps({key: item[key] for key in ("id", "memory", "hash", "metadata", "created_at",
                                                            "updated_at", "user_id") if key in item}) + "\n" for item in items)
    path = tmp_path / name
    path.write_bytes(gzip.compress(lines.encode()) if name.endswith(".gz") else lines.encode())
    dry = imported(home, "--dry-run", str(path))
    assert dry["format"] == "mem0"
    assert dry["read"]["memories"] == 3 and dry["skipped"] == {}
