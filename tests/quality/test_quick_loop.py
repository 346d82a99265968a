"""The quick loop (`python -m pytest -q --quick`, docs/testing.md) keeps a test of every module:
a module with no test marked `quick` is one of those below, each left out for what it needs."""
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

LEFT_OUT = {  # the module: why none of its tests is quick
    "doors/test_fence_e2e.py": "slow: a real `hermes -z`",
    "doors/test_hermes_e2e.py": "slow: Hermes itself",
    "doors/test_offline.py": "slow: processes cut off from the network under strace",
    "doors/test_profile_threads.py": "threads of two profiles on stores of their own (3 s)",
    "engine/test_connections.py": "server pass only: sixteen workers on PostgreSQL",
    "engine/test_crash.py": "a SIGKILL of a process mid-ingest (11 s)",
    "engine/test_embedder_cache.py": "a fresh process preparing the model without a cache (20 s)",
    "engine/test_faults.py": "killed servers and processes",
    "engine/test_forget_killed.py": "slow: a forget killed mid-way",
    "engine/test_scope_vectors.py": "server pass only",
    "engine/test_scope_writers.py": "concurrent writers (8 s)",
    "engine/test_vector_scrub.py": "readers racing forgets (3 s)",
    "engine/test_vector_writers.py": "server pass only",
    "quality/test_load.py": "slow: the load harness",
    "quality/test_plot.py": "needs matplotlib (the plot extra)",
    "quality/test_plugin_install.py": "slow: pip installs into a fresh venv",
    "ui/test_browser.py": "a real Chromium",
    "ui/test_ui_layers.py": "import-linter once per planted module (5 s); test_layers keeps its contracts in the loop",
}


@pytest.mark.quick
def test_every_module_has_a_quick_test_or_says_why_not():
    modules = {path.relative_to(TESTS).as_posix(): path.read_text(encoding="utf-8")
               for path in TESTS.glob("*/test_*.py")}
    without = sorted(name for name, text in modules.items() if not re.search(r"@pytest\.mark\.quick\b", text))
    assert without == sorted(LEFT_OUT), "mark a test of the module `quick`, or say in LEFT_OUT why none is"
