"""Hermes' built-in memory files: `memories/MEMORY.md` (the agent's notes) and `USER.md` (the
user's profile), entries joined by a line holding only `§`. Each entry becomes a semantic note
of the profile's scope, tagged as the cmms provider tags what Hermes' memory tool writes
(hermes-memory, hermes-user). The files keep no ids and no times: an entry's id is made of its
text (an edited entry is a new one) and it is dated by the file's modification time."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ...common.errors import InvalidInput
from ...common.scopes import local_scope
from . import Skipped, memory

NAME = "hermes-memory"
FILES = {"MEMORY.md": "hermes-memory", "USER.md": "hermes-user"}
DELIMITER = "\n§\n"
MOST_BYTES = 4 * 2**20  # Hermes keeps these files to a few KiB; anything far past that is not one


def sniff(path: Path) -> bool:
    return bool(_files(path))


def records(path: Path, *, scope: str) -> Iterator[Any]:
    files = _files(path)
    home = files[0].parent.parent if files and files[0].parent.name == "memories" else None
    owner = local_scope(home) if home is not None else None
    for file in files:
        seen = set()
        for number, entry in enumerate(_entries(file), 1):
            where = f"{file.name}, entry {number}"
            if entry in seen:
                yield Skipped("an entry the file holds twice", where)
                continue
            seen.add(entry)
            yield memory(NAME, (file.name, entry), entry, original=f"hermes:{file.name}#{number}", created_at=None,
                         tier="semantic", kind="note", tags=(FILES[file.name],), scope=owner)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if path.name in FILES else []
    if path.is_dir():
        folder = path / "memories" if (path / "memories").is_dir() else path
        return [folder / name for name in FILES if (folder / name).is_file()]
    return []


def _entries(file: Path) -> list[str]:
    if file.stat().st_size > MOST_BYTES:
        raise InvalidInput(f"{file.name} is larger than {MOST_BYTES // 2**20} MiB: not a Hermes memory file.")
    try:
        text = file.read_bytes().decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{file.name} is not UTF-8 text (byte {exc.start}).") from None
    return [piece.strip() for piece in text.split(DELIMITER) if piece.strip()] if text.strip() else []
