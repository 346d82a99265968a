"""`hermes-cmms edit`, `pin`, `unpin`, `tag` and `forget ID...` (its preview and its question):
through main(argv) in this process, and the question asked on a real terminal (a pty) of a real
process."""
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from db import row, sql
from hermes_cmms import MemoryService, Settings
from conftest import terminal_output
from inprocess import cli

CLI = str(Path(sys.executable).with_name("hermes-cmms"))
SCOPE = "local:default"
pytestmark = pytest.mark.store


def run(home, *args, **kwargs):
    return cli(home, *args, env={"CMMS_EMBEDDER": "none"}, **kwargs)


def _stored(home, *texts, scope=SCOPE) -> list[str]:
    svc = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        return [svc.remember(scope, text) for text in texts]
    finally:
        svc.close()


def _row(home, memory_id):
    return row(home, "SELECT * FROM memories WHERE id = ?", memory_id)


def _dashed(memory_id: str) -> str:
    return f"{memory_id[:8]}-{memory_id[8:12]}-{memory_id[12:16]}-{memory_id[16:20]}-{memory_id[20:]}"


@pytest.mark.quick
def test_edit_stores_the_correction_and_search_finds_it_instead_of_the_old_text(home):
    [old] = _stored(home, "The storage unit code is 4412.")
    done = run(home, "edit", _dashed(old), "The storage unit code is 9931; password is Tr0ub4dor&3xyz.", "--json")
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout)["id"].replace("-", "")
    assert json.loads(done.stdout)["supersedes"] == _dashed(old)
    assert "Tr0ub4dor" not in _row(home, new)["content"] and _row(home, new)["source"] == "cli:correct"
    assert _row(home, old)["superseded_by"] == new
    found = json.loads(run(home, "search", "storage unit code", "--json").stdout)["results"]
    assert [r["content"] for r in found] == ["The storage unit code is 9931; password is [REDACTED:password]"]
    again = run(home, "edit", old, "The storage unit code is 1234.")
    assert again.returncode == 1 and "was already replaced by" in again.stderr


def test_pin_and_unpin_are_stored_and_audited(home):
    [memory_id] = _stored(home, "Remember the blue door.")
    pinned = run(home, "pin", _dashed(memory_id), "--actor", "dana")
    assert pinned.returncode == 0 and "never decays" in pinned.stdout
    assert _row(home, memory_id)["pinned"] == 1
    assert run(home, "unpin", memory_id).returncode == 0 and _row(home, memory_id)["pinned"] == 0
    assert sql(home, "SELECT action, actor FROM audit_log WHERE action IN ('pin', 'unpin') ORDER BY id") == [
        ("pin", "cli:dana"), ("unpin", "cli")]


def test_tag_adds_and_removes_with_options_before_or_after_the_id(home):
    [memory_id] = _stored(home, "The boat is moored at Pier 9.")
    assert run(home, "tag", memory_id, "+harbour", "+draft").returncode == 0
    done = run(home, "tag", memory_id, "-draft", "+boats", "--json", "--scope", SCOPE)
    assert json.loads(done.stdout)["tags"] == ["harbour", "boats"]
    assert json.loads(_row(home, memory_id)["tags"]) == ["harbour", "boats"]
    for args, message in (((memory_id, "boats"), "Each tag change is +TAG to add or -TAG to remove, not 'boats'."),
                          ((memory_id,), "Name a tag to add or to remove"),
                          ((memory_id, "+x", "--bogus"), "'--bogus' is not one of them"),
                          (("--scope", "user:other", memory_id, "+x"), f"No memory '{memory_id}' in this scope.")):
        bad = run(home, "tag", *args)
        assert bad.returncode == 1 and message in bad.stderr and "Traceback" not in bad.stderr
    assert json.loads(_row(home, memory_id)["tags"]) == ["harbour", "boats"]


def test_forget_shows_the_preview_and_refuses_without_a_terminal_or_yes(home):
    ids = _stored(home, "The kettle is broken.\u202e\x1b[31m", "The kettle leaks.")
    refused = run(home, "forget", *ids)
    assert refused.returncode == 1
    assert refused.stderr == ("error: Standard input is not a terminal, so nobody can confirm: add --yes to forget "
                              "without being asked; nothing was forgotten.\n")
    assert f"  {_dashed(ids[0])}  note        The kettle is broken.\\u202e\\u001b[31m" in refused.stdout  # inert
    assert "With them go: 2 memories' vectors, 2 audit snapshots kept." in refused.stdout
    assert sql(home, "SELECT count(*) FROM memories") == [(2,)]
    done = run(home, "forget", *ids, "--yes")
    assert done.returncode == 0 and "Forgot 2 memories of scope 'local:default'." in done.stdout
    assert sql(home, "SELECT count(*) FROM memories") == [(0,)]


def test_forget_of_an_id_of_another_scope_forgets_nothing(home):
    [mine], [theirs] = _stored(home, "Mine."), _stored(home, "Theirs.", scope="user:other")
    bad = run(home, "forget", mine, theirs, "--yes")
    assert bad.returncode == 1 and bad.stderr == f"error: No memory '{theirs}' in this scope.\n"
    assert sql(home, "SELECT count(*) FROM memories") == [(2,)]
    no_scope = run(home, "forget", "--all")
    assert no_scope.returncode == 1 and "Name the scope with --scope" in no_scope.stderr


def _on_terminal(home, args, answer: str) -> tuple[int, str]:
    """`hermes-cmms ARGS` in a process of its own on a pseudo-terminal, answering `answer`
    when asked; its exit code and all it wrote."""
    main, child = pty.openpty()
    env = dict(os.environ, HERMES_HOME=str(home), CMMS_EMBEDDER="none")
    proc = subprocess.Popen([CLI, *args], stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    seen = terminal_output(main, proc, 60, lambda seen: answer.encode() + b"\n" if b"[y/N]" in seen else None)
    code = proc.wait(timeout=30)
    os.close(main)
    return code, seen.decode("utf-8", "replace")


@pytest.mark.parametrize("answer, code, left", [("n", 1, 1), ("y", 0, 0)])
def test_forget_asks_on_a_terminal_and_does_only_what_the_answer_says(home, answer, code, left):
    [memory_id] = _stored(home, "The kettle is broken.")
    ran, shown = _on_terminal(home, ["forget", _dashed(memory_id)], answer)
    assert "Forget this memory? [y/N]" in shown and "The kettle is broken." in shown
    assert ran == code, shown
    assert ("Nothing was forgotten." in shown) == (answer == "n")
    assert sql(home, "SELECT count(*) FROM memories") == [(left,)]
