"""The README's commands exist and the test command is the one CI runs."""
import re
from pathlib import Path

from hermes_cmms.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_every_cli_command_in_the_readme_exists():
    shown = set(re.findall(r"^hermes-cmms ([a-z-]+)", README, re.M))
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    assert shown and shown <= set(subparsers.choices)


def test_ci_runs_the_readme_test_command():
    test_command = re.search(r"\*\*Test\*\*.*?```bash\n(.*?)\n```", README, re.S).group(1)
    assert test_command.endswith("python -m pytest -q && CMMS_TEST_BACKEND=server python -m pytest -q")
    ci = (REPO / ".ci" / "run").read_text()
    assert "&& python -m pytest -q)" in ci and "CMMS_TEST_BACKEND=server python -m pytest -q" in ci


def test_every_setting_in_the_readme_is_a_real_setting():
    from hermes_cmms.common.config import SETTINGS

    rows = set(re.findall(r"^\| `([a-z_]+)` \| `(CMMS_[A-Z_]+)`", README, re.M))
    assert rows == {(name, env) for name, (env, _) in SETTINGS.items()}


def test_the_readme_tool_table_is_the_bridge_catalogue():
    import inspect

    from hermes_cmms.mcp_bridge.tools import catalogue

    section = README.split("## MCP bridge", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]*(?:\\\|[^|]*)*) \|", section, re.M))
    tools = {fn.__name__: fn for fn in catalogue(None, "local:default")}
    assert set(rows) == set(tools)
    for name, fn in tools.items():  # every argument shown, and only real ones
        shown = set(re.findall(r"[a-z_]+", rows[name].replace("\\|", " ")))
        assert shown == set(inspect.signature(fn).parameters), name
