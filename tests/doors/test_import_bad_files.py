"""`hermes-cmms import` of files that are damaged, cut short, empty, of another product or
hostile: one sentence naming the file and what is wrong, exit 1, and the store's files exactly
as they were. The files are made the way the products write them: ChatGPT's and Claude.ai's
data exports are deflated ZIPs (Python's zipfile writes the same local headers and central
directory), OpenMemory's backup holds `memories.jsonl.gz` (gzip of JSON Lines); a download cut
short keeps the first bytes, a flipped byte is a disk or transfer error."""
import gzip
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from imports import run

DATA = Path(__file__).parents[1] / "data" / "imports"
CHATGPT = (DATA / "chatgpt" / "conversations.json").read_bytes()
CLAUDE = (DATA / "claude" / "conversations.json").read_bytes()
MEM0_LINE = {"id": "7b4f7a52-0c1e-4f6e-9a3b-2d5c1e9f0a11", "content": "Prefers oat milk in coffee",
             "state": "active", "created_at": "2025-03-02T09:14:00+00:00", "categories": ["food"],
             "user_id": "hermes-user", "app": "openmemory"}


def _zip(name: str, data: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def _flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def _jsonl_gz(lines: int) -> bytes:
    text = "".join(json.dumps(MEM0_LINE | {"id": f"{MEM0_LINE['id'][:-2]}{i:02d}"}) + "\n" for i in range(lines))
    return gzip.compress(text.encode())


ZIP_DATA_AT = 30 + len("conversations.json")  # a local file header, then the member's data
BAD = {  # name: (bytes, the product that wrote it ("any": said whatever --from names), what the sentence says is wrong)
    # a ChatGPT ZIP stored (not deflated) with one byte of conversations.json changed: bad CRC-32
    "chatgpt-bad-crc.zip": (_flipped(_zip("conversations.json", CHATGPT, zipfile.ZIP_STORED), ZIP_DATA_AT + 200),
                            "chatgpt", "is a damaged ZIP (a file in it fails its CRC-32 check)"),
    # a ChatGPT ZIP whose deflated data has a byte changed
    "chatgpt-bad-deflate.zip": (_flipped(_zip("conversations.json", CHATGPT), ZIP_DATA_AT + 40), "chatgpt",
                                "is a damaged ZIP (its compressed data is corrupt)"),
    # a download of a ChatGPT ZIP cut short (no central directory): whatever --from says
    "chatgpt-cut.zip": (_zip("conversations.json", CHATGPT)[:1000], "any", "is a damaged ZIP (it is cut short)"),
    # a Claude.ai ZIP cut short, under a hostile name (a right-to-left override, a zero-width space)
    "claude\u202egpj\u200b.zip": (_zip("conversations.json", CLAUDE)[:1500], "any",
                                  "gpj\\u200b.zip' is a damaged ZIP (it is cut short)"),
    # OpenMemory's memories.jsonl.gz cut short
    "memories.jsonl.gz": (_jsonl_gz(40)[:300], "mem0", "is a damaged gzip file (it is cut short)"),
    # an empty file, random bytes
    "empty.json": (b"", None, ""),
    "random.bin": (hashlib.sha512(b"random").digest() * 20, None, ""),
}


def _hashes(home: Path) -> dict:
    """The store's files (the Hermes home's cmms/ directory) and a hash of each one's bytes."""
    store = home / "cmms"
    return {str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file()}


@pytest.fixture
def stored_home(home):
    """A home whose store exists and holds the ChatGPT fixture's memories."""
    result = run(home, "import", "--create", str(DATA / "chatgpt" / "conversations.json"))
    assert result.returncode == 0, result.stderr
    return home


def _refused(home: Path, path: Path, *args: str) -> str:
    """The one sentence `hermes-cmms import ARGS PATH` refuses `path` with, as a dry run and
    not, the store's files unchanged by either."""
    before = _hashes(home)
    said = set()
    for dry in ([], ["--dry-run"]):
        result = run(home, "import", *dry, *args, str(path))
        assert result.returncode == 1, result.stdout
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr
        said.add(result.stderr)
    assert _hashes(home) == before
    assert len(said) == 1
    return said.pop()


@pytest.mark.embedded_only
@pytest.mark.parametrize("name", BAD)
@pytest.mark.parametrize("fmt", [None, "chatgpt", "claude", "mem0", "memory-json", "claude-code", "hermes-state"])
def test_a_bad_file_is_one_sentence_and_leaves_the_store_as_it_was(stored_home, tmp_path, name, fmt):
    path = tmp_path / name
    path.write_bytes(BAD[name][0])
    said = _refused(stored_home, path, *(["--from", fmt] if fmt else []))
    assert path.name in said or repr(path.name)[1:-1] in said
    product, wrong = BAD[name][1:]
    if fmt in (None, product) or product == "any":  # (--from another product: the file is not one of its exports)
        assert wrong in said


@pytest.mark.quick
@pytest.mark.embedded_only
def test_a_cut_zip_is_called_damaged_not_a_foreign_format(stored_home, tmp_path):
    path = tmp_path / "chatgpt-export.zip"
    path.write_bytes(BAD["chatgpt-cut.zip"][0])
    said = _refused(stored_home, path)
    assert said == f"error: {str(path)!r} is a damaged ZIP (it is cut short); nothing was imported.\n"


FOREIGN = [  # (a real export of one product, named as another's with --from)
    ("random.bin", "chatgpt"), ("random.bin", "mem0"), ("random.bin", "memory-json"),
    ("claude/conversations.json", "chatgpt"), ("mem0/get_all.json", "chatgpt"), ("chatgpt/conversations.json", "mem0"),
    ("memory-json/memory.json", "claude-code"), ("claude/conversations.json", "claude-code"),
]


@pytest.mark.embedded_only
@pytest.mark.parametrize("name, fmt", FOREIGN)
def test_from_a_format_the_file_is_not_says_so_instead_of_zero_memories(stored_home, tmp_path, name, fmt):
    path = DATA / name if "/" in name else tmp_path / name
    if not path.exists():
        path.write_bytes(BAD[name][0])
    said = _refused(stored_home, path, "--from", fmt)
    assert path.name in said


@pytest.mark.embedded_only
def test_a_file_whose_every_line_is_left_out_is_one_sentence_not_zero_memories(stored_home, tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(BAD["random.bin"][0])
    said = _refused(stored_home, path, "--from", "memory-json")
    assert said.startswith(f"error: Nothing in {str(path)!r} could be imported as a memory-json export: all ")
    assert "left out, " in said and "as 'not valid JSON (a line cut short or corrupted)' (the first at 'line 1')" in said


@pytest.mark.embedded_only
def test_a_chatgpt_export_without_conversations_is_one_sentence(stored_home, tmp_path):
    path = tmp_path / "conversations.json"  # what ChatGPT writes for an account that never chatted
    path.write_text("[]")
    said = _refused(stored_home, path, "--from", "chatgpt")
    assert said == (f"error: Nothing in {str(path)!r} is a chatgpt export (no conversation, message or memory "
                    f"of one); nothing was imported.\n")


@pytest.mark.quick
@pytest.mark.embedded_only
def test_our_own_export_damaged_is_one_sentence_naming_the_file_and_line(stored_home, tmp_path):
    """`hermes-cmms export` of the store (JSON Lines: a header, then a record a line), then
    damaged as a download or an editor would: cut short (its last records missing), a line
    broken, or a file of another product named `--from cmms`. The import and its dry run refuse
    it in the same sentence, naming the file (and the line), and change nothing."""
    export = run(stored_home, "export").stdout.splitlines()
    cut = tmp_path / "local-default.jsonl"
    cut.write_text("\n".join(export[:-2]) + "\n", encoding="utf-8")
    said = _refused(stored_home, cut, "--from", "cmms")
    assert said.startswith(f"error: {str(cut)!r} holds ") and "but its header says" in said
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(export[:2] + ['{"type": "memory", "id": '] + export[3:]) + "\n", encoding="utf-8")
    assert _refused(stored_home, broken).startswith(f"error: {str(broken)!r}, line 3: not valid JSON (")
    chatgpt = DATA / "chatgpt" / "conversations.json"
    assert _refused(stored_home, chatgpt, "--from", "cmms") == (
        f"error: {str(chatgpt)!r}, line 1: a record must be a JSON object; nothing was imported.\n")


@pytest.mark.quick
@pytest.mark.embedded_only
@pytest.mark.parametrize("name", ["chatgpt-cut.zip", "random.bin"])
def test_a_bad_file_as_the_first_import_makes_no_store(home, tmp_path, name):
    """The first import into a home without a store reads the file through before it makes one:
    a file refused leaves the home as it was (no empty cmms/cmms.db)."""
    (home / "config.yaml").write_text("model: {}\n", encoding="utf-8")  # what `hermes setup` leaves
    path = tmp_path / name
    path.write_bytes(BAD[name][0])
    for args in ([], ["--from", "chatgpt"]):
        result = run(home, "import", *args, str(path))
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert not (home / "cmms").exists()
    assert run(home, "import", str(DATA / "chatgpt" / "conversations.json")).returncode == 0  # a good one makes it
    assert (home / "cmms" / "cmms.db").is_file()


@pytest.mark.embedded_only
def test_a_dry_run_from_standard_input_is_refused_before_a_store_is_made(home):
    result = run(home, "import", "--create", "--dry-run", "-")
    assert result.returncode == 1 and "not for a dry run" in result.stderr
    assert not (home / "cmms").exists()
