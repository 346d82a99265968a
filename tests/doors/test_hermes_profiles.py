"""Hermes profiles (`hermes profile create work`, `hermes -p work …`, HERMES_HOME at
`<root>/profiles/work`): the provider stores the profile owner's turns under `local:work`, and
every door defaults to that scope (common.scopes.local_scope); a profile cloned from one with
cmms lacks the 0.19 shim, and `doctor` says so and how to fix it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import hermes_bin, subprocess_env
from hermes_cmms import MemoryService, Settings
from hermes_cmms.install import install
from inprocess import cli

CLI = str(Path(sys.executable).with_name("hermes-cmms"))
KEYWORD_ONLY = {"CMMS_EMBEDDER": "none"}


@pytest.fixture
def profile(home):
    """A named profile `work` beside the root home, its store holding one memory of its owner
    (local:work) and one of the scope a CLI used to default to (local:default)."""
    path = home / "profiles" / "work"
    path.mkdir(parents=True)
    with MemoryService(Settings.load(path, embedder="none"), scheduler=False) as service:
        service.remember("local:work", "The work laptop's asset tag is WL-4471.")
        service.remember("local:default", "The home router's asset tag is HR-2210.")
    return path


@pytest.mark.one_backend
@pytest.mark.parametrize("argv", [
    ["search", "asset tag"],
    ["list"],
    ["inspect", "What is the asset tag?"],
    ["export"],
])
@pytest.mark.quick
def test_every_command_defaults_to_the_profile_owners_scope(profile, argv):
    ran = cli(profile, *argv, env=KEYWORD_ONLY)
    assert ran.returncode == 0, ran.stderr
    assert "WL-4471" in ran.stdout and "HR-2210" not in ran.stdout
    again = cli(None, *argv, "--hermes-home", str(profile), env={**KEYWORD_ONLY, "HERMES_HOME": None})
    assert again.returncode == 0 and "WL-4471" in again.stdout, again.stderr
    other = cli(profile, *argv, "--scope", "local:default", env=KEYWORD_ONLY)
    assert "HR-2210" in other.stdout and "WL-4471" not in other.stdout


@pytest.mark.one_backend
def test_tag_works_the_default_out_from_a_home_given_after_the_id(home, profile):
    with MemoryService(Settings.load(profile, embedder="none"), scheduler=False) as service:
        memory_id = service.remember("local:work", "The badge reader is by the lift.")
    ran = cli(home, "tag", memory_id, "+office", "--hermes-home", str(profile), env=KEYWORD_ONLY)
    assert ran.returncode == 0, ran.stderr
    assert "office" in cli(profile, "show", memory_id, env=KEYWORD_ONLY).stdout


@pytest.mark.one_backend
def test_the_provider_gives_the_owner_the_profiles_scope_when_hermes_does_not_say(profile, monkeypatch):
    from hermes_cmms.provider import CmmsMemoryProvider

    monkeypatch.setenv("HERMES_HOME", str(profile))
    provider = CmmsMemoryProvider()
    provider.initialize("s1", hermes_home=str(profile), platform="cli")  # no agent_identity
    try:
        assert provider.scope == "local:work"
    finally:
        provider.shutdown()


def hermes(root: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    result = subprocess.run([hermes_bin(), *argv], capture_output=True, text=True, timeout=180, cwd=root,
                            env=subprocess_env(root, TIRITH_ENABLED="false", **env))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def hermes_cmms(home: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=120,
                          env=subprocess_env(home, **KEYWORD_ONLY))


@pytest.mark.slow
@pytest.mark.one_backend
def test_a_cloned_profile_is_told_its_fix_then_remembers_and_searches_its_own_scope(home, llm_server):
    """`hermes profile create work --clone` copies memory.provider: cmms but not the 0.19 shim:
    doctor names the fix; once it is run, `hermes -p work -z` stores the turn under local:work,
    where `hermes -p work cmms search` and `hermes-cmms search` (HERMES_HOME at the profile) look."""
    model = {"default": "fake-model", "provider": "custom", "base_url": llm_server.url, "api_key": "sk-fake"}
    (home / "config.yaml").write_text(yaml.safe_dump({"model": model}), encoding="utf-8")
    told = install(home)
    assert any(line.startswith("Hermes profiles: on Hermes 0.19, a profile made from this one later") and
               f"--hermes-home {home.resolve() / 'profiles'}/NAME" in line for line in told), told
    hermes(home, "profile", "create", "work", "--clone", "--no-alias")
    work = home / "profiles" / "work"
    assert yaml.safe_load((work / "config.yaml").read_text())["memory"]["provider"] == "cmms"
    assert not (work / "plugins" / "cmms").exists()  # what Hermes 0.19's clone leaves out

    doctor = hermes_cmms(work, "doctor")
    assert doctor.returncode == 1
    assert (f"FAIL plugin files: memory is off in the Hermes profile 'work': Hermes 0.19 loads cmms from "
            f"{work / 'plugins' / 'cmms'}, which this profile lacks (`hermes profile create --clone` copies "
            f"config.yaml, not plugins/); run `hermes-cmms install-hermes-plugin --hermes-home {work}`"
            ) in doctor.stdout
    assert hermes_cmms(work, "install-hermes-plugin", "--hermes-home", str(work)).returncode == 0
    assert "FAIL plugin files" not in hermes_cmms(work, "doctor").stdout

    llm_server.say("Noted: the espresso machine is on the third floor.")
    hermes(home, "-p", "work", "-z", "The office espresso machine is on the third floor.", **KEYWORD_ONLY)
    with MemoryService(Settings.load(work, embedder="none"), scheduler=False) as service:
        scopes = {entry["scope"] for entry in service.scopes()}
    assert "local:work" in scopes and "local:default" not in scopes
    found = hermes(home, "-p", "work", "cmms", "search", "espresso machine", **KEYWORD_ONLY).stdout
    assert "The office espresso machine is on the third floor." in found
    found = hermes_cmms(work, "search", "espresso machine")
    assert "The office espresso machine is on the third floor." in found.stdout, found.stderr
