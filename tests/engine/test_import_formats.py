"""The helpers every import reader shares (hermes_cmms/ops/formats): stable ids, the timestamp
parser, the streamed JSON array, detection; and our own export read as the format `cmms`."""
import io
import json

import pytest

from hermes_cmms.common.errors import InvalidInput
from hermes_cmms.ops.formats import READERS, detect, stable_id, streamed_json_array, timestamp


@pytest.mark.quick
def test_stable_ids_are_32_hex_digits_the_same_each_time_and_apart_per_format_and_part():
    first = stable_id("chatgpt", "conv-1", "msg-1")
    assert first == stable_id("chatgpt", "conv-1", "msg-1") and len(first) == 32 and int(first, 16) >= 0
    assert len({first, stable_id("claude", "conv-1", "msg-1"), stable_id("chatgpt", "conv-1msg-1"),
                stable_id("chatgpt", "conv-1", "msg-2")}) == 4


@pytest.mark.parametrize("value, seconds", [
    (1717236000.5, 1717236000.5), (1717236000, 1717236000.0), ("1717236000.5", 1717236000.5),
    (1717236000500, 1717236000.5),  # milliseconds
    ("2024-06-01T10:00:00Z", 1717236000.0), ("2024-06-01T12:00:00+02:00", 1717236000.0),
    ("2024-06-01 10:00:00", 1717236000.0),  # SQLite's CURRENT_TIMESTAMP: UTC without a zone
    (None, None), ("", None), ("yesterday", None), (True, None), (float("nan"), None), (float("inf"), None),
    (-5, None), ({"t": 1}, None),
])
def test_timestamps_from_epoch_seconds_milliseconds_and_iso_8601(value, seconds):
    assert timestamp(value) == seconds


def test_a_streamed_array_gives_its_items_and_names_where_it_broke():
    items = list(streamed_json_array(io.BytesIO(b'  [{"a": 1.5}, "two", [3]]')))
    assert items == [{"a": 1.5}, "two", [3]]
    with pytest.raises(InvalidInput, match=r"^x.json is not a JSON array \(it starts with '\{'\)\.$"):
        list(streamed_json_array(io.BytesIO(b'{"a": 1}'), "x.json"))
    broken = streamed_json_array(io.BytesIO(b'[{"a": 1}, {"b": 2}, {"c": '), "x.json")
    assert next(broken) == {"a": 1}
    with pytest.raises(InvalidInput, match=r"^x.json is not valid JSON after item 2 "):
        list(broken)


def test_a_big_array_is_read_in_bounded_memory():
    class Made:
        """A 20 MB array made as it is read (not seekable): never whole in memory."""

        def __init__(self, items: int):
            self.chunks = iter([b"[", *(b'{"text": "' + b"x" * 90 + b'"},' for _ in range(items - 1)), b"{}]"])

        def read(self, size=-1):
            return next(self.chunks, b"")

    import tracemalloc

    tracemalloc.start()
    count = sum(1 for _ in streamed_json_array(Made(200_000)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 200_000 and peak < 5_000_000


def test_formats_are_found_by_module_and_an_unknown_file_is_named(tmp_path):
    assert {"cmms", "chatgpt", "hermes-state", "hermes-memory", "hermes-holographic"} <= set(READERS)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # a sniff that parses it must not crash detection
    with pytest.raises(InvalidInput, match=r"is not a file of a format hermes-cmms imports \(.*chatgpt.*\); "
                                           r"name one with --from\.$"):
        detect(deep)
    export = tmp_path / "backup"
    export.write_text(json.dumps({"type": "header", "format": "hermes-cmms-export", "version": 1, "scope": "s",
                                  "counts": {}}) + "\n")
    assert detect(export) == "cmms"


def _chatgpt_export(path, conversations: int, turns: int) -> None:
    """A conversations.json of plain two-message turns on one branch each."""
    items = []
    for c in range(conversations):
        mapping, parent = {"root": {"id": "root", "message": None, "parent": None, "children": []}}, "root"
        for t in range(turns):
            for role in ("user", "assistant"):
                node = f"c{c}-{t}-{role}"
                mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                    "id": node, "author": {"role": role}, "create_time": 1.7e9 + c * 1000 + t,
                    "content": {"content_type": "text", "parts": [f"Message {t} of {role} in chat {c} about kites."]}}}
                mapping[parent]["children"].append(node)
                parent = node
        items.append({"id": f"c{c}", "title": "kites", "create_time": 1.7e9, "mapping": mapping, "current_node": parent})
    path.write_text(json.dumps(items), encoding="utf-8")


@pytest.mark.one_backend
def test_reading_a_file_reports_its_bytes_so_the_bar_has_an_end(keyword_service, tmp_path):
    """The reading pass of a big file says how far into the file it is (of its size), not only
    how many records it has read: its bar shows an ETA. A ZIP's compressed bytes count too."""
    import zipfile

    export = tmp_path / "conversations.json"
    _chatgpt_export(export, conversations=30, turns=20)  # 1,200 messages
    packed = tmp_path / "export.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(export, "conversations.json")
    for path in (export, packed):
        seen = []
        keyword_service.transfer.import_foreign(path, dry_run=True, progress=lambda phase, done, total: seen.append((phase, done, total)))
        reading = [(done, total) for phase, done, total in seen if phase == "reading"]
        assert reading and all(total == path.stat().st_size for _, total in reading), (path.name, reading)
        assert all(0 < done <= total for done, total in reading) and reading == sorted(reading)
