"""The dashboard door calls the facade only: import-linter (`.ci/lint-layers`) catches a module
planted in hermes_cmms/ui/ that reaches past it, into a part, a feature or another door."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("line, caught", [
    ("from ..mcp_bridge import serve\n", "hermes_cmms.ui.planted -> hermes_cmms.mcp_bridge"),
    ("def f():\n    from ..store.store import Store\n", "hermes_cmms.ui.planted -> hermes_cmms.store"),
    ("from ..recall.shape import hit_dict\n", "hermes_cmms.ui.planted -> hermes_cmms.recall"),
    ("from ..cli.commands import main\n", "hermes_cmms.ui.planted -> hermes_cmms.cli"),
])
def test_the_dashboard_reaching_past_the_facade_is_caught(tmp_path, line, caught):
    planted = tmp_path / "planted.py"
    planted.write_text(line)
    done = subprocess.run([str(REPO / ".ci" / "lint-layers"), sys.executable], capture_output=True, text=True,
                          env={**os.environ, "CMMS_LAYERS_PLANT": f"{planted}:ui"}, timeout=180)
    assert done.returncode != 0
    verdict = done.stdout[done.stdout.index("The dashboard calls the facade only"):].split("\n")[:2]
    assert " ".join(verdict).endswith("no part, feature or other door BROKEN"), verdict
    assert caught in done.stdout
