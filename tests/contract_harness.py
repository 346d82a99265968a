"""The CMMS 0.11 tool contracts (docs/contracts/cmms-0.11, a copy of the seed's published files)
as validators, and what every contract test needs: a home for one bridge session per module, and
the one case per tool that CI runs again on the other MCP SDK line (the `sdk_sample` mark).

Inputs are checked strictly (so a case is proven valid under its contract); answers tolerantly,
with `additionalProperties: false` dropped, since our richer fields may sit beside the contract's.
The `date-time` format is checked too (jsonschema checks it only with rfc3339-validator).
"""
from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

CONTRACTS = Path(__file__).resolve().parents[1] / "docs" / "contracts" / "cmms-0.11"
DOCS = {p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(CONTRACTS.glob("*.schema.json"))}
TOOLS = sorted(name for name in DOCS if name != "common")
HEX_ID = re.compile(r"^[0-9a-f]{32}$")

FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value) -> bool:
    if isinstance(value, str):
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


def tolerant(schema: Any) -> Any:
    """The schema with `additionalProperties: false` dropped everywhere (extra keys tolerated)."""
    if isinstance(schema, dict):
        return {k: tolerant(v) for k, v in schema.items() if not (k == "additionalProperties" and v is False)}
    if isinstance(schema, list):
        return [tolerant(v) for v in schema]
    return schema


def validator(tool: str, part: str = "output", strict: bool = False, mode: Optional[str] = None):
    """A validator of `part` (input, output, errors) of `tool`'s contract, or with `mode` of the
    contract's `output_definitions[mode]` (reflect); `$ref`s into common.schema.json resolve."""
    convert = (lambda schema: schema) if strict else tolerant
    registry = Registry().with_resources(
        (doc["$id"], Resource.from_contents(convert(doc), default_specification=DRAFT202012))
        for doc in DOCS.values())
    doc = DOCS[tool]
    body = doc["output_definitions"][mode] if mode else doc[part]
    return Draft202012Validator({"$schema": doc["$schema"], "$id": doc["$id"], **convert(body)},
                                registry=registry, format_checker=FORMATS)


def errors(tool: str, value: Any, part: str = "output", strict: bool = False, mode: Optional[str] = None) -> list[str]:
    """Why `value` is not valid under the contract (empty when it is), one line per reason."""
    out = []
    for error in sorted(validator(tool, part, strict, mode).iter_errors(value), key=lambda e: list(e.absolute_path)):
        out.append(f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message[:300]}")
        for sub in (error.context or [])[:8]:  # oneOf: each branch's reasons
            out.append(f"    [{'/'.join(map(str, sub.schema_path))[:80]}] {sub.message[:200]}")
    return out


def hex_ids(value: Any, path: str = "", given: frozenset = frozenset()) -> list[str]:
    """The places in an answer that still show a stored id (32 hex digits) instead of a UUID;
    `given` holds 32-hex values the case itself sent as text (an outside reference, a hash),
    which must come back exactly as given."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in hex_ids(item, f"{path}/{key}", given)]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in hex_ids(item, f"{path}/{i}", given)]
    return [path] if isinstance(value, str) and HEX_ID.match(value) and value not in given else []


async def indexed(bridge, text: str, timeout: float = 180.0) -> None:
    """Wait until the vector index has `text` (written last: the outbox is indexed in order)."""
    import anyio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await bridge.ok("semantic_search", query=text, top_k=3)
        if any(r.get("content") == text for r in found.get("results", [])):
            return
        await anyio.sleep(0.5)
    raise AssertionError(f"not indexed within {timeout} s: {text!r}")


@contextmanager
def module_home(tmp_path_factory, name: str) -> Iterator[Path]:
    """An empty HERMES_HOME for one module's bridge session, exported while it is used (the
    environment as it was afterwards); on CMMS_TEST_BACKEND=server with fresh databases of its
    own (as conftest.home)."""
    from conftest import exported_home

    path = tmp_path_factory.mktemp(name) / "hermes_home"
    path.mkdir()
    with pytest.MonkeyPatch.context() as env, exported_home(path, env):
        yield path


def first_case_of_each_tool(cases: dict[str, str]) -> dict[str, str]:
    """{tool: its first case} of {case: tool}: the cases marked `sdk_sample`."""
    first: dict[str, str] = {}
    for case, tool in cases.items():
        first.setdefault(tool, case)
    return first


def sampled(cases: Iterable[str], samples: dict[str, str]) -> list:
    """`cases` as pytest parameters, those among `samples`' values marked `sdk_sample` (CI runs
    them again on mcp 1.26)."""
    chosen = set(samples.values())
    return [pytest.param(case, marks=pytest.mark.sdk_sample) if case in chosen else case for case in cases]
