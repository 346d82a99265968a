"""The README's commands exist, the test command is the one CI runs, the README stays short with
the commands first, and the pages it hands the rest to (docs/) hold their tables and links."""
import re
from pathlib import Path

import pytest

from hermes_cmms.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
DOC_DIR = REPO / "docs"
MAX_LINES = 250  # the README: what it is, the two commands, the keyless try-it, one short section per Hermes
RUN_WITHIN = 60  # the Run command's line is among the first 60


def command(name: str) -> str:
    """The first bash block after the README's **name**."""
    return re.search(rf"\*\*{name}\*\*.*?```bash\n(.*?)\n```", README, re.S).group(1)


@pytest.mark.quick
def test_every_cli_command_in_the_readme_exists():
    shown = set(re.findall(r"^hermes-cmms ([a-z-]+)", README, re.M))
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", README, re.S))  # also bin/hermes-cmms X, && hermes-cmms X
    shown |= set(re.findall(r"(?:^|[/ ])hermes-cmms ([a-z-]+)", blocks, re.M))
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"install-hermes-plugin", "search"} <= shown <= set(subparsers.choices)


def test_ci_runs_the_readme_test_command():
    test_command = command("Test")
    assert test_command.endswith("python -m pytest -q && CMMS_TEST_BACKEND=server python -m pytest -q")
    ci = (REPO / ".ci" / "run").read_text()
    # (plus --durations=25: each pass prints its slowest steps; and `compiled`: its bytecode kept in
    # a directory of the run's own; the suite is the same)
    assert "&& compiled python -m pytest -q --durations=25)" in ci
    assert "CMMS_TEST_BACKEND=server compiled python -m pytest -q --durations=25)" in ci
    # the same installs, torch pinned first: the local-model extra (the torch path) is tested too
    assert ".venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[hermes,local-model,test]'" in test_command
    assert "pip install -q --no-compile torch==2.13.0" in ci and '"$REPO[hermes,local-model,test]"' in ci


def test_the_run_command_is_the_default_install_without_torch():
    run = command("Run")
    assert "pip install '.[hermes]' &&" in run and "torch" not in run and "local-model" not in run
    ci = (REPO / ".ci" / "run").read_text()
    assert 'benchmarks/install.py" --extras hermes ' in ci and "phase default default_install" in ci
    assert "comes first so pip takes the CPU build" not in README


def test_the_readme_model_block_is_what_hermes_reads(tmp_path, monkeypatch):
    """The `model:` block for an OpenAI-compatible endpoint, read by Hermes' own config code."""
    import yaml
    from hermes_cli.config import load_config, validate_config_structure
    from hermes_cli.runtime_provider import resolve_runtime_provider

    block = re.search(r"```yaml\n(model:\n.*?)```", README, re.S).group(1)
    model = yaml.safe_load(block)["model"]
    (tmp_path / "config.yaml").write_text(block, encoding="utf-8")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert validate_config_structure(load_config()) == []
    runtime = resolve_runtime_provider()
    assert (runtime["provider"], runtime["base_url"], runtime["api_key"]) == ("custom", model["base_url"], model["api_key"])
    assert load_config()["model"]["default"] == model["default"]


def test_the_readme_check_is_what_the_hermes_test_proves():
    """The three-line check tells and asks what tests/doors/test_hermes_e2e.py's one-shot test does."""
    import test_hermes_e2e

    check = command("Check it works")
    assert f'hermes -z "{test_hermes_e2e.CAT}"' in check and f'hermes -z "{test_hermes_e2e.QUESTION}"' in check
    assert "hermes-cmms search Biscuit" in check


def test_every_setting_in_the_settings_page_is_a_real_setting():
    from hermes_cmms.common.config import SETTINGS

    page = (DOC_DIR / "settings.md").read_text()
    rows = set(re.findall(r"^\| `([a-z_]+)` \| `(CMMS_[A-Z_]+)`", page, re.M))
    assert rows == {(name, env) for name, (env, _) in SETTINGS.items()}


def test_the_mcp_page_tool_table_is_the_bridge_catalogue():
    """A contract tool's arguments cell is its contract's input, in the contract's order, optional
    ones marked `?`, then our extensions marked (+ ...); every other tool's cell names exactly
    the arguments it takes."""
    import inspect

    from contract_harness import DOCS
    from hermes_cmms.mcp_bridge.tools import catalogue

    section = (DOC_DIR / "mcp.md").read_text().split("# MCP bridge", 1)[1].split("\n## ", 1)[0]
    table = section.split("| tool | arguments | does |", 1)[1].split("\n\n", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]*(?:\\\|[^|]*)*) \|", table, re.M))
    tools = {fn.__name__: fn for fn in catalogue(None, "local:default")}
    assert list(rows) == list(tools)  # in the catalogue's order
    for name, fn in tools.items():
        parameters = inspect.signature(fn).parameters
        if name not in DOCS:  # every argument shown, and only real ones
            shown = set(re.findall(r"[a-z_]+", rows[name].replace("\\|", " ")))
            assert shown == set(parameters), name
            continue
        contract = DOCS[name]["input"]
        ours = [n for n in parameters if n not in contract["properties"]]
        required = [n for n, p in parameters.items() if p.default is inspect.Parameter.empty]
        cell = f"`{_marked(contract['properties'], contract.get('required', []))}`" if contract["properties"] else "—"
        cell += f" (+ `{_marked(ours, required)}`)" if ours else ""
        assert rows[name].strip() == cell, name


def _marked(names, required) -> str:
    """Argument names as docs/mcp.md's tool table shows them: an optional one ends in `?`."""
    return ", ".join(n if n in required else f"{n}?" for n in names)


PLACEHOLDER = re.compile(r"https?://\S*(?:OWNER|USERNAME|YOUR[-_A-Z]*|example\.(?:com|org))", re.I)


@pytest.mark.quick
def test_the_readme_is_short_and_starts_with_the_commands():
    """At most 250 lines; the Run command in the first 60, ending in the keyless demo (not a bare
    `hermes`, whose wizard asks a newcomer to log in); no placeholder URL anywhere."""
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, len(lines)
    run = command("Run")
    assert lines.index(run) < RUN_WITHIN, lines.index(run) + 1
    assert run.endswith("&& .venv/bin/hermes-cmms demo") and not run.rstrip().endswith("hermes")
    assert README.index("hermes-cmms demo") < README.index("## A model for Hermes") < README.index("## Into the Hermes")
    for page in [REPO / "README.md", *sorted(DOC_DIR.glob("*.md"))]:
        assert not PLACEHOLDER.findall(page.read_text()), page.name


def test_the_placeholder_check_finds_the_placeholder_the_readme_had():
    assert PLACEHOLDER.findall("hermes plugins install https://github.com/OWNER/hermes-cmms/tree/main/x --yes-deps")
    assert not PLACEHOLDER.findall("file:///path/to/hermes-cmms#install/templates/plugin https://pypi.org/project/hermes-agent/")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.quick
def test_every_link_of_the_readme_and_docs_reaches_a_file_and_its_heading():
    """A relative link names a file that exists and, with #anchor, a heading of that file."""
    broken = []
    for page in [REPO / "README.md", *sorted(DOC_DIR.glob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s)://, file://, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []
