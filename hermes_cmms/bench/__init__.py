"""`hermes-cmms bench`: recall benchmarks that drive the cmms provider the way Hermes does.

`locomo` measures evidence recall on LoCoMo conversations (the procedure and metrics of
../shared/bench/locomo_recall.py, dated by default); `longmemeval` measures LongMemEval_S retrieval recall
(recall_any@k / recall_all@k at session and turn level) plus evidence in the context.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from ..common.errors import InvalidInput
from . import locomo, longmemeval
from ._display import check_output, show, write_json

__all__ = ["SUITES", "report", "run"]

SUITES = {"locomo": locomo, "longmemeval": longmemeval}
Items = Union[str, Sequence]


def run(suite: str, path: str, *, budget: Optional[int] = None, convs: Items = (),
        ks: Items = longmemeval.DEFAULT_K, limit: Optional[int] = None,
        json_out: Optional[str] = None, dated: bool = True, imported: bool = False) -> dict:
    """Run one benchmark suite on a data file and return its figures, also written to
    `json_out` if given. `convs` and `ks` may be lists or comma-separated strings; `dated`
    (LoCoMo) ingests each session at its own date; `imported` (LoCoMo), through a ChatGPT export."""
    if budget is not None and budget <= 0:
        raise InvalidInput(f"The token budget must be a positive whole number, not {budget}.")
    if limit is not None and limit <= 0:
        raise InvalidInput(f"The question limit must be a positive whole number, not {limit}.")
    check_output(json_out)
    if suite == "locomo":
        result = locomo.run(path, budget, parse_list(convs, "--convs"), dated, imported)
    elif suite == "longmemeval":
        result = longmemeval.run(path, budget, parse_list(ks, "--k", number=True), limit)
    else:
        raise InvalidInput(f"Unknown benchmark {suite!r}; choose one of {', '.join(SUITES)}.")
    if json_out:
        write_json(result, json_out)
    return result


def report(result: dict) -> None:
    """Print the result tables to stdout."""
    show(SUITES[result["benchmark"]].tables(result))


def parse_list(value: Items, what: str, number: bool = False) -> list:
    """An option value (a list, or comma-separated text) as a list; positive whole numbers,
    sorted, if `number`."""
    parts = value.split(",") if isinstance(value, str) else value or ()
    items = [str(part).strip() for part in parts if str(part).strip()]
    if not number:
        return items
    if not items or not all(part.isdigit() and int(part) > 0 for part in items):
        raise InvalidInput(f"{what} must be comma-separated positive whole numbers, not {value!r}.")
    return sorted({int(part) for part in items})
