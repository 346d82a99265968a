"""Nothing leaves the machine (README): the bridge over stdio storing and recalling, and the CLI
learning and searching, each a real process on the default embedder run as a user runs it, attempt
no connection off the machine and leave no telemetry file.

Each process runs in a network namespace of its own (`unshare -rn`: no interface up, so even a
regression sends nothing out) under strace, which records every connection and datagram it or a
thread or child attempts, whatever the library or language. HOME is the test's own, so a file a
runtime writes there (ONNX Runtime's device id under ~/.cache/Microsoft/) is found. The processes
get none of the switches hermes-cmms sets (docs/privacy.md): what they do is the package's doing.

ONNX Runtime writes its telemetry files when imported and first looks up its collector about
nine seconds later, so the bridge stays open that long after its recall. Embedded only: on the
server backend the store is a connection away, which is what that backend is for.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_cmms import TELEMETRY_OFF
from hermes_cmms.vectors.embedders import packaged_int8_minilm, prepared_minilm
from mcp_client import bridge_command, run, stdio_bridge

pytestmark = [pytest.mark.slow, pytest.mark.embedded_only]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
UPLOAD_WAIT_S = 11  # ONNX Runtime 1.32 first looked up its collector 8.8 s after its import
SCOPE = "local:default"
FACT = "The boat is moored at Pier 9."
QUESTION = "which vessel sits by the dock"
# What a user's environment would not hold: the switches themselves, and CI's offline settings.
NOT_INHERITED = (*TELEMETRY_OFF, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "TORCH_HOME")


def traced(log: Path, *command: str) -> list[str]:
    """`command` in a network namespace of its own, every connect and send recorded in `log`."""
    return ["unshare", "-rn", "strace", "-f", "-qq", "--seccomp-bpf", "-e", "signal=none",
            "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(log), *command]


def attempts(log: Path) -> list[str]:
    """The recorded attempts to reach an IP address (a name lookup is one: to the resolver)."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if "AF_INET" in line]


def user_env(home: Path) -> dict:
    """The environment of a user whose home is `home`: caches and config under it, no CMMS_* setting."""
    env = {k: v for k, v in os.environ.items()
           if k not in NOT_INHERITED and not k.startswith(("XDG_", "CMMS_"))}
    return {**env, "HOME": str(home)}


def recorder(tmp_path: Path) -> None:
    """Check that a traced process's connection attempt is recorded; where it cannot be (no
    unshare, no strace, no user namespaces) skip, or under CMMS_CI=1 fail."""
    log = tmp_path / "probe.trace"
    probe = "import socket; socket.socket().connect_ex(('127.0.0.1', 9))"
    try:
        done = subprocess.run(traced(log, sys.executable, "-c", probe), capture_output=True, text=True,
                              timeout=30)
        seen = done.returncode == 0 and attempts(log)
        why = done.stderr.strip()[-300:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        seen, why = False, str(exc)
    why = why or "nothing was recorded"
    if not seen and os.environ.get("CMMS_CI") == "1":
        pytest.fail(f"CI must record network attempts (unshare -rn + strace), but: {why}")
    if not seen:
        pytest.skip(f"needs unshare -rn and strace to record network attempts: {why}")


def seeded_home(tmp_path: Path) -> Path:
    """A user's home holding the prepared model cache, as after a first run (saves preparing it)."""
    home = tmp_path / "home"
    cache = home / ".cache" / "hermes-cmms"
    cache.mkdir(parents=True)
    prepared = prepared_minilm(packaged_int8_minilm())
    shutil.copy(prepared, cache / prepared.name)
    return home


def used_hermes_home(path: Path) -> Path:
    """A Hermes home as Hermes leaves it (its config.yaml), where hermes-cmms starts a store."""
    path.mkdir()
    (path / "config.yaml").write_text("{}\n", encoding="utf-8")
    return path


def cli_session(log: Path, hermes_home: Path, env: dict) -> subprocess.Popen:
    """`hermes-cmms learn` then `search`, traced, in the background."""
    cli = f"{sys.executable} -m hermes_cmms.cli"
    script = (f'{cli} learn --hermes-home "$1" --scope {SCOPE} "$2" >/dev/null '
              f'&& {cli} search --hermes-home "$1" --scope {SCOPE} "$3"')
    return subprocess.Popen(traced(log, "sh", "-c", script, "sh", str(hermes_home), FACT, QUESTION),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


async def bridge_session(log: Path, hermes_home: Path, env: dict) -> list[str]:
    """Store and recall through `hermes-cmms mcp` over stdio, then stay open until ONNX Runtime
    would have looked up its collector."""
    command = traced(log, *bridge_command(hermes_home))
    async with stdio_bridge(hermes_home, command=command, env=env) as bridge:
        await bridge.ok("store_memory", content=FACT, scope=SCOPE)
        found = await bridge.ok("recall_memory", query=QUESTION, scope=SCOPE)  # the model is loaded
        await asyncio.sleep(UPLOAD_WAIT_S)
    return [r["content"] for r in found["results"]]


def files_under(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


def test_the_bridge_and_the_cli_send_nothing_off_the_machine_and_leave_no_telemetry_file(tmp_path):
    recorder(tmp_path)
    home = seeded_home(tmp_path)
    env = user_env(home)
    cli = cli_session(tmp_path / "cli.trace", used_hermes_home(tmp_path / "cli"), env)  # meanwhile
    try:
        recalled = run(bridge_session(tmp_path / "bridge.trace", used_hermes_home(tmp_path / "bridge"), env))
        out, err = cli.communicate(timeout=120)
    finally:
        cli.kill()  # (nothing once it has ended)

    assert recalled[:1] == [FACT]
    assert cli.returncode == 0 and FACT in out, err[-2000:]
    written = [f for f in files_under(home) if not f.startswith(".cache/hermes-cmms/")]  # but the model
    assert {"bridge": attempts(tmp_path / "bridge.trace"), "cli": attempts(tmp_path / "cli.trace"),
            "files": written} == {"bridge": [], "cli": [], "files": []}


def test_the_privacy_page_names_every_switch_hermes_cmms_sets():
    page = DOCS.read_text(encoding="utf-8")
    for name, value in TELEMETRY_OFF.items():
        assert f"`{name}={value}`" in page, name
