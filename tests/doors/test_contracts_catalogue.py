"""The whole catalogue against the CMMS 0.11 contracts, through one MCP client session (in memory,
against the real server object): every tool refuses an argument it does not take in one sentence
naming the ones it takes; each contract tool advertises its contract's input (names, types, enums,
defaults, bounds, required); an earlier argument name (a family's ALIASES) still works and cannot
be given beside its new name; the contracts in docs/ are the published ones; and every tool has
exactly one case that CI runs again on mcp 1.26 (`sdk_sample`)."""
from __future__ import annotations

import filecmp
import uuid
from collections import Counter
from pathlib import Path

import pytest

import test_contracts_beliefs
import test_contracts_knowledge
import test_contracts_memser
import test_contracts_recall
from contract_harness import CONTRACTS, DOCS, TOOLS, module_home
from hermes_cmms.mcp_bridge import tools as catalogue_module
from hermes_cmms.mcp_bridge.tools import ORDER
from inprocess import memory_bridge
from mcp_client import input_schema, run

PUBLISHED = Path(__file__).resolve().parents[3] / "shared" / "contracts" / "cmms-0.11"
COMPARED = ("type", "enum", "default", "minimum", "maximum", "minLength", "maxLength")
ALIASED = sorted((tool, old, new) for family in catalogue_module.FAMILIES
                 for tool, names in family.ALIASES.items() for old, new in names.items())


def _sample(name: str, schema: dict):
    """A value `schema` accepts, for an argument called `name`."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        return str(uuid.uuid4()) if name.endswith("_id") else schema.get("default") or "Server Alpha"
    if kind in ("integer", "number"):
        return schema["default"] if schema.get("default") is not None else schema.get("minimum", 1)
    if kind == "boolean":
        return bool(schema.get("default"))
    return []


def _required_args(schema: dict, leave_out: str) -> dict:
    return {name: _sample(name, schema["properties"][name]) for name in schema.get("required", []) if name != leave_out}


async def _session(home) -> dict:
    out: dict = {"refused": {}, "aliases": {}}
    async with memory_bridge(home, env={"CMMS_EMBEDDER": "none"}) as bridge:  # nothing here ranks by meaning
        listed = await bridge.tools()
        out["schemas"] = {name: input_schema(tool) for name, tool in listed.items()}
        for name in listed:
            out["refused"][name] = await bridge.call(name, no_such_argument=1)
        for tool, old, new in ALIASED:
            schema = out["schemas"][tool]
            value = _sample(new, schema["properties"][new])
            rest = _required_args(schema, new)
            out["aliases"][tool, old] = (await bridge.call(tool, **rest, **{new: value}),
                                         await bridge.call(tool, **rest, **{old: value}),
                                         await bridge.call(tool, **rest, **{old: value, new: value}))
    return out


# What the bridge advertises and refuses is where the two SDK lines differ (schemas, error
# wording, argument checks): run again on mcp 1.26 with the bridge's own tests. Nothing here
# depends on the backend.
def catalogue_test(test):
    return pytest.mark.bridge(pytest.mark.one_backend(test))


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    with module_home(tmp_path_factory, "catalogue") as home:
        return run(_session(home))


@pytest.mark.quick
@catalogue_test
def test_the_bridge_advertises_the_twenty_tools(catalogue):
    assert list(catalogue["schemas"]) == list(ORDER) and len(ORDER) == 20
    assert set(TOOLS) <= set(ORDER) and len(TOOLS) == 13


@catalogue_test
@pytest.mark.parametrize("tool", ORDER)
def test_an_argument_a_tool_does_not_take_is_refused_in_one_sentence_naming_those_it_takes(catalogue, tool):
    names = list(catalogue["schemas"][tool]["properties"])
    takes = ", ".join(names) if names else "no arguments"
    result = catalogue["refused"][tool]
    assert result.error
    assert result.text == f"Error executing tool {tool}: {tool} takes {takes}; 'no_such_argument' is not one of them."


@catalogue_test
@pytest.mark.parametrize("tool", TOOLS)
def test_a_contract_tool_advertises_its_contract_input(catalogue, tool):
    contract, advertised = DOCS[tool]["input"], catalogue["schemas"][tool]
    differences = [f"{name}: missing" for name in contract["properties"] if name not in advertised["properties"]]
    for name, wanted in contract["properties"].items():
        shown = advertised["properties"].get(name)
        differences += [f"{name}.{key}: contract {wanted.get(key)!r}, advertised {shown.get(key)!r}"
                        for key in COMPARED if shown is not None and wanted.get(key) != shown.get(key)]
    if sorted(advertised.get("required", [])) != sorted(contract.get("required", [])):
        differences.append(f"required: contract {contract.get('required', [])}, advertised {advertised.get('required')}")
    assert differences == []


@catalogue_test
@pytest.mark.parametrize("tool, old, new", ALIASED)
def test_an_earlier_argument_name_still_works_and_cannot_be_given_beside_the_new_one(catalogue, tool, old, new):
    by_new, by_old, both = catalogue["aliases"][tool, old]
    assert old not in catalogue["schemas"][tool]["properties"]  # not advertised
    assert by_old.error == by_new.error and (by_old.text == by_new.text if by_new.error
                                               else set(by_old.data) == set(by_new.data)), (by_new.text, by_old.text)
    assert both.error
    assert both.text == f"Error executing tool {tool}: Give {new!r} or its earlier name {old!r}, not both."


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason=f"the published contracts ({PUBLISHED}) are not beside the "
                                                   "repository (a clone of the repository alone)")
def test_the_contracts_in_docs_are_the_published_ones():
    published = sorted(p.name for p in PUBLISHED.iterdir())
    assert sorted(p.name for p in CONTRACTS.iterdir()) == published
    match, mismatch, failed = filecmp.cmpfiles(PUBLISHED, CONTRACTS, published, shallow=False)
    assert (mismatch, failed) == ([], [])


SAMPLED_MODULES = (test_contracts_recall, test_contracts_knowledge, test_contracts_beliefs, test_contracts_memser)


def _marked_sdk_sample(module) -> set[str]:
    """The cases (parameters) and the tests of `module` marked `sdk_sample`."""
    marked = set()
    for name, test in vars(module).items():
        marks = getattr(test, "pytestmark", []) if name.startswith("test_") else []
        marked |= {name for mark in marks if mark.name == "sdk_sample"}
        for mark in marks:
            if mark.name == "parametrize":
                marked |= {value.values[0] for value in mark.args[1]
                           if any(m.name == "sdk_sample" for m in getattr(value, "marks", ()))}
    return marked


def test_each_tool_has_exactly_one_case_run_again_on_the_other_sdk_line():
    """CI runs the contract modules again on mcp 1.26 with `-m "bridge or sdk_sample"`: one case
    per tool of the catalogue, no tool left out or sampled twice, each sample marked."""
    for module in SAMPLED_MODULES:
        assert _marked_sdk_sample(module) == set(module.SDK_SAMPLES.values()), module.__name__
    sampled = Counter(tool for module in SAMPLED_MODULES for tool in module.SDK_SAMPLES)
    assert sorted(sampled) == sorted(ORDER) and set(sampled.values()) == {1}, sampled
