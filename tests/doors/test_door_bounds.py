"""Bounds at the doors: an audit page, an HTTP port, an import line, a text of nothing
printable; each refused in one sentence, none hanging or ending in a traceback."""
from __future__ import annotations

import json
import socket

import pytest

from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.ops.transfer import MAX_LINE_BYTES
from inprocess import cli


def _cli(home, *args, stdin=None):
    return cli(home, *args, stdin=stdin, env={"CMMS_EMBEDDER": "none"})


@pytest.mark.quick
@pytest.mark.parametrize("limit, offset", [(10**20, 0), (0, 0), (501, 0), (50, -1), (50, 10**20)])
def test_an_audit_page_out_of_bounds_is_refused_at_the_service(keyword_service, limit, offset):
    with pytest.raises(InvalidInput, match=r"^An audit page is 1 to 500 events from an offset of 0 to "):
        keyword_service.audit_log(limit=limit, offset=offset)


def test_the_cli_lists_more_than_a_page_of_the_audit_trail(keyword_service, home):
    for n in range(620):
        keyword_service.store.record("tool", "cli", "local:bounds", tool=f"t{n}", ok=True)
    keyword_service.close()
    listed = json.loads(_cli(home, "audit-log", "--limit", "700", "--json").stdout)
    assert len(listed) == 620 and listed[0]["detail"]["tool"] == "t619" and listed[-1]["detail"]["tool"] == "t0"


def test_a_port_out_of_range_is_refused_by_the_parser(tmp_path):
    done = _cli(tmp_path, "mcp", "--transport", "http", "--port", "70000")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "error: argument --port: must be a whole number from 1 to 65535, not '70000'")


@pytest.mark.store
def test_a_port_in_use_is_one_sentence(home):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = _cli(home, "mcp", "--transport", "http", "--port", str(port), "--create")
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: Cannot serve MCP over HTTP on 127.0.0.1:{port}: Address already in use."


@pytest.mark.store
def test_an_import_line_without_end_is_refused_not_read_whole(home, tmp_path):
    endless = tmp_path / "zeros.jsonl"
    endless.write_bytes(bytes(MAX_LINE_BYTES + 10))
    said = "line 1: longer than 16 MiB; nothing was imported."
    assert _cli(home, "import", str(endless), "--create").stderr.strip() == f"error: {str(endless)!r}, {said}"
    assert _cli(home, "import", "-", "--create", stdin=endless.read_bytes()).stderr.strip() == f"error: L{said[1:]}"


def test_a_text_of_nothing_printable_is_not_called_a_secret(keyword_service):
    with pytest.raises(InvalidInput, match="^The text is empty once unprintable characters and punctuation"):
        keyword_service.remember("local:bounds", "\x01\x02")
    with pytest.raises(InvalidInput, match="^Nothing is left to remember once secrets are removed"):
        keyword_service.remember("local:bounds", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH")
