"""Progress bar and result table: rich when it is installed, plain text otherwise."""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

from ..common.errors import InvalidInput
from ._drive import Tick

Table = tuple[str, Sequence[str], Sequence[Sequence[object]]]  # title, header, rows


@contextmanager
def progress(total: int, label: str) -> Iterator[Tick]:
    """A tick(description) callable that advances a bar of `total` steps on stderr."""
    try:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
    except ImportError:
        yield _plain_ticker(total, label)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        yield lambda description: bar.update(task, advance=1, description=f"{label} {description}")


def _plain_ticker(total: int, label: str) -> Tick:
    """One line per new stage, so a log shows where the run is without a live bar."""
    state = {"done": 0, "stage": None}

    def tick(description: str) -> None:
        state["done"] += 1
        stage = description.split()[0] if description else ""
        if stage != state["stage"] or state["done"] == total:
            state["stage"] = stage
            print(f"{label} {description} [{state['done']}/{total}]", file=sys.stderr, flush=True)

    return tick


def show(tables: Sequence[Table]) -> None:
    """Print each table to stdout."""
    try:
        from rich.console import Console
        from rich.table import Table as RichTable
    except ImportError:
        for table in tables:
            print(_plain_table(*table))
        return
    console = Console()
    if not console.is_terminal:  # a file or a pipe: never squeeze the figures
        console = Console(width=200)
    for title, header, rows in tables:
        rich_table = RichTable(title=title, title_justify="left")
        for i, name in enumerate(header):
            rich_table.add_column(name, justify="left" if i == 0 else "right")
        for row in rows:
            rich_table.add_row(*map(cell, row))
        console.print(rich_table)


def _plain_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(header)] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title] + ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    return "\n".join(lines) + "\n"


def cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return str(value)


def check_output(path: Optional[str]) -> None:
    """Fail before a long run, not after it, when the --json file cannot be written."""
    if path and not Path(path).resolve().parent.is_dir():
        raise InvalidInput(f"Cannot write {path!r}: its directory does not exist.")


def write_json(result: dict, path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, ensure_ascii=False)
    except OSError as exc:
        raise InvalidInput(f"Cannot write {path!r}: {exc.strerror or exc}.") from None
