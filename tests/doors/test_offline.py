"""Nothing leaves the machine (README): the bridge over stdio storing and recalling, and the CLI
learning and searching, each a real process on the default embedder run as a user runs it, attempt
no connection off the machine; they and `hermes -z` with the cmms provider leave no telemetry file.

The bridge and the CLI run in a network namespace of their own (`unshare -rn`: no interface up,
so even a regression sends nothing out) under strace, which records every connection and datagram
a process or its threads and children attempt, whatever the library. Hermes runs on the network
(its model is a server on 127.0.0.1, and Hermes 0.19 looks up its model catalogue by itself), so
for it the file check alone. HOME is the test's own, so a file a runtime writes there (ONNX
Runtime's device id under ~/.cache/Microsoft/) is found. The processes get none of the switches
hermes-cmms sets (docs/privacy.md): what they do is the package's doing.

ONNX Runtime writes its telemetry files when imported and first looks up its collector about
nine seconds later, so the bridge stays open that long after its recall, while the CLI and Hermes
run. Embedded only: on the server backend the store is a connection away, as it is meant to be.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import hermes_bin
from hermes_cmms import TELEMETRY_OFF
from hermes_cmms.install import install
from hermes_cmms.vectors.embedders import packaged_int8_minilm, prepared_minilm
from inprocess import cli
from mcp_client import bridge_command, run, stdio_bridge

pytestmark = [pytest.mark.slow, pytest.mark.embedded_only]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
UPLOAD_WAIT_S = 11  # ONNX Runtime 1.32 first looked up its collector 8.8 s after its import
SCOPE = "local:default"
FACT = "The boat is moored at Pier 9."
QUESTION = "which vessel sits by the dock"


def traced(log: Path, *command: str) -> list[str]:
    """`command` in a network namespace of its own, every connect and send recorded in `log`."""
    return ["unshare", "-rn", "strace", "-f", "-qq", "--seccomp-bpf", "-e", "signal=none",
            "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", str(log), *command]


def attempts(log: Path) -> list[str]:
    """The recorded attempts to reach an IP address (a name lookup is one: to the resolver)."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if "AF_INET" in line]


def user_env(home: Path) -> dict:
    """The environment of a user whose home is `home`: caches and config under it, no CMMS_*
    setting, and none of the switches hermes-cmms sets."""
    env = {k: v for k, v in os.environ.items()
           if k not in TELEMETRY_OFF and not k.startswith(("XDG_", "CMMS_"))}
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


def door_homes(tmp_path: Path, door: str, models: list[Path]) -> tuple[Path, Path]:
    """The user's home for `door`, holding the prepared models (the query's float32 and the
    int8 memories are stored with) as after a first run or `install-hermes-plugin` (saves
    preparing them), and a Hermes home as Hermes leaves it (its config.yaml), where hermes-cmms
    starts a store."""
    home, hermes_home = tmp_path / door / "home", tmp_path / door / "hermes"
    (home / ".cache" / "hermes-cmms").mkdir(parents=True)
    for model in models:
        os.link(model, home / ".cache" / "hermes-cmms" / model.name)
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text("{}\n", encoding="utf-8")
    return home, hermes_home


def cli_session(log: Path, home: Path, hermes_home: Path) -> subprocess.Popen:
    """`hermes-cmms learn` then `search`, traced, in the background."""
    cli = f"{sys.executable} -m hermes_cmms.cli"
    script = (f'{cli} learn --hermes-home "$1" --scope {SCOPE} "$2" >/dev/null '
              f'&& {cli} search --hermes-home "$1" --scope {SCOPE} "$3"')
    return subprocess.Popen(traced(log, "sh", "-c", script, "sh", str(hermes_home), FACT, QUESTION),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=user_env(home))


def hermes_oneshot(home: Path, hermes_home: Path, llm_url: str) -> subprocess.Popen:
    """`hermes -z FACT` with the cmms provider installed, in the background."""
    model = {"default": "fake-model", "provider": "custom", "base_url": llm_url, "api_key": "sk-fake"}
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"model": model}), encoding="utf-8")
    install(hermes_home)
    env = {**user_env(home), "HERMES_HOME": str(hermes_home), "TIRITH_ENABLED": "false"}  # (no download)
    return subprocess.Popen([hermes_bin(), "-z", FACT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


async def bridge_session(log: Path, home: Path, hermes_home: Path) -> list[str]:
    """Store and recall through `hermes-cmms mcp` over stdio, traced, then stay open until ONNX
    Runtime would have looked up its collector."""
    command = traced(log, *bridge_command(hermes_home))
    async with stdio_bridge(hermes_home, command=command, env=user_env(home)) as bridge:
        await bridge.ok("store_memory", content=FACT, scope=SCOPE)
        started = time.monotonic()
        # the model is loaded; the vector is written by the indexer thread a moment after the store
        # is acknowledged (a recall does not wait for it: README, How it works), so on a loaded machine
        # the first recall by meaning may come before it
        while not (found := await bridge.ok("recall_memory", query=QUESTION, scope=SCOPE))["results"] \
                and time.monotonic() - started < 60:
            await asyncio.sleep(0.5)
        await asyncio.sleep(UPLOAD_WAIT_S)
    return [r["content"] for r in found["results"]]


def left_in(home: Path) -> list[str]:
    """The files under `home` but the model cache."""
    files = (str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    return sorted(f for f in files if not f.startswith(".cache/hermes-cmms/"))


def test_no_door_sends_anything_off_the_machine_or_leaves_a_telemetry_file(tmp_path, llm_server):
    recorder(tmp_path)
    models = [Path(shutil.copy(prepared_minilm(packaged_int8_minilm(), int8=int8), tmp_path)) for int8 in (False, True)]
    homes = {door: door_homes(tmp_path, door, models) for door in ("bridge", "cli", "hermes")}
    started = {"hermes": hermes_oneshot(*homes["hermes"], llm_server.url),  # these two meanwhile
               "cli": cli_session(tmp_path / "cli.trace", *homes["cli"])}
    try:
        recalled = run(bridge_session(tmp_path / "bridge.trace", *homes["bridge"]))
        ended = {door: proc.communicate(timeout=120) for door, proc in started.items()}
    finally:
        for proc in started.values():
            proc.kill()  # (nothing once it has ended)

    assert recalled[:1] == [FACT]
    assert started["cli"].returncode == 0 and FACT in ended["cli"][0], ended["cli"][1][-2000:]
    assert started["hermes"].returncode == 0, ended["hermes"][1][-2000:]
    indexed = json.loads(cli(homes["hermes"][1], "status", "--vectors", "--json").stdout)["indexed"]
    assert indexed >= 1  # the model ran in Hermes' process
    tried = {door: attempts(tmp_path / f"{door}.trace") for door in ("bridge", "cli")}
    left = {door: left_in(home) for door, (home, _) in homes.items()}
    assert (tried, left) == ({"bridge": [], "cli": []}, {"bridge": [], "cli": [], "hermes": []})


def test_the_privacy_page_names_every_switch_hermes_cmms_sets():
    page = DOCS.read_text(encoding="utf-8")
    for name, value in TELEMETRY_OFF.items():
        assert f"`{name}={value}`" in page, name
