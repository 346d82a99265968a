"""`hermes cmms …`: the `hermes-cmms` commands inside the real `hermes` command, found by
Hermes 0.19 in the active provider's cli.py (which install-hermes-plugin writes)."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import hermes_bin, subprocess_env
from hermes_cmms import MemoryService, Settings
from hermes_cmms.install import install


def hermes(home, *argv, code=0):
    result = subprocess.run([hermes_bin(), *argv], capture_output=True, text=True, timeout=120, cwd=home,
                            env=subprocess_env(home, CMMS_EMBEDDER="none", TIRITH_ENABLED="false"))
    assert result.returncode == code, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.mark.quick
def test_install_puts_the_cli_beside_the_shim(home):
    install(home)
    assert "def register_cli(subparser)" in (home / "plugins" / "cmms" / "cli.py").read_text()


@pytest.mark.slow
@pytest.mark.store
def test_hermes_cmms_status_and_search_are_the_hermes_cmms_commands(home):
    install(home)
    service = MemoryService(Settings.load(home, embedder="none"), scheduler=False)
    try:
        boiler = service.remember("local:default", "The boiler was serviced in March.")
    finally:
        service.close()
    status = hermes(home, "cmms", "status").stdout
    assert re.search(r"^ *memories: 1$", status, re.M), status
    found = hermes(home, "cmms", "search", "boiler").stdout
    assert "The boiler was serviced in March." in found
    listed = hermes(home, "cmms", "--help").stdout
    assert all(name in listed for name in ("status", "search", "doctor", "audit-log", "forget", "edit", "pin", "tag",
                                           "inspect"))
    inspected = hermes(home, "cmms", "inspect", "When was the boiler serviced?").stdout
    assert "- note: The boiler was serviced in March." in inspected and "found by keyword #1" in inspected
    assert "never decays" in hermes(home, "cmms", "pin", boiler).stdout
    assert "Tags of" in hermes(home, "cmms", "tag", boiler, "+house", "-old").stdout
    assert "Unpinned" in hermes(home, "cmms", "unpin", boiler).stdout
    assert "The boiler was serviced in March." in hermes(home, "cmms", "list", "--tag", "house").stdout
    assert "Provenance" in hermes(home, "cmms", "show", boiler).stdout


@pytest.mark.slow
def test_a_mistake_is_one_sentence_and_exit_code_1(home):
    install(home)
    result = hermes(home, "cmms", "forget", "--scope", "local:default", code=1)
    assert result.stderr.strip() == "error: Say what to forget: ID..., --id, or --tier/--tag, or --all."
