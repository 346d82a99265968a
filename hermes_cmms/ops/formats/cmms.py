"""hermes-cmms' own export (`hermes-cmms export`), as a format: detected by its header line.
Importing it goes straight to ops/transfer's import (which also checks the header's counts);
this reader serves the dry run."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from .._transfer_records import FORMAT, check_header, parse
from ..transfer import _lines_of

NAME = "cmms"


def sniff(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"header"' in first and FORMAT.encode() in first


def records(path: Path, *, scope: str) -> Iterator[dict]:
    """The file's records, each in the header's scope (the pipeline puts them in --scope's
    when one is given)."""
    header = None
    for number, text in _lines_of(path):
        record = parse(text, number)
        if header is None:
            header = check_header(record, number)
            continue
        yield {**record, "scope": header["scope"]}
