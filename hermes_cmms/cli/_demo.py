"""`hermes-cmms demo`: a first hour without a key. Real Hermes turns (`hermes -z`, one session
each) through the real provider, in a throwaway Hermes home, against the offline stand-in model
on 127.0.0.1 (common/standin.py), which answers with what recall gave it; then what the last
prompt recalls and why (`inspect`), and the commands to look further."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from ..common.errors import InvalidInput

# (what the session shows, what the user says): each a session of its own, as a new `hermes -z`
SESSIONS = (
    ("a fact", "My cat is called Biscuit."),
    ("another fact", "I live in Berlin."),
    ("a question, in a new session", "What is my cat's name?"),
    ("the fact changes", "I moved from Berlin to Lisbon last month."),
    ("the question about it", "Where do I live now?"),
)
TURN_TIMEOUT_S = 180  # one `hermes -z` (about 8 s on the project's 2-core machine)
QUIET = {"TIRITH_ENABLED": "false"}  # no background download of Hermes' command scanner: no network
HERMES_MISSING = ("Hermes is not installed here, and the demo runs real Hermes turns: install it with "
                  "`pip install 'hermes-cmms[hermes]'` (Hermes 0.19 from PyPI) in this environment, or use "
                  "Hermes' own installer, then run `hermes-cmms demo` again.")


def hermes_command() -> Optional[str]:
    """`hermes` beside this Python (the environment hermes-cmms is installed in, activated or not),
    else on PATH (whose Hermes must then import hermes_cmms itself, as a Hermes 0.20+ venv does
    once hermes-cmms is installed into it)."""
    beside = Path(sys.executable).with_name("hermes")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("hermes")


def demo_home(named: Optional[str]) -> Path:
    """The home to fill: the one named, which must be empty (never a Hermes in use), else a new
    temporary one."""
    if not named:
        return Path(tempfile.mkdtemp(prefix="hermes-cmms-demo-"))
    home = Path(named).expanduser().absolute()
    if home.exists() and (not home.is_dir() or any(home.iterdir())):
        raise InvalidInput(f"The demo fills a new Hermes home and {str(home)!r} is not an empty folder; "
                           "name a new or empty one (or leave --hermes-home out for a temporary one).")
    home.mkdir(parents=True, exist_ok=True)
    return home


def demo_env(home: Path) -> dict:
    """The environment of the demo's Hermes turns and of its own reads of the store: this one
    without the settings that would point cmms (or Hermes) elsewhere — a store, a Chroma server, a
    model, a profile of the user's (`CMMS_*`, `HERMES_*`) — so it only ever reads and writes `home`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("CMMS_", "HERMES_"))}
    return {**kept, "HERMES_HOME": str(home), **QUIET}


def say(text: str = "") -> None:
    print(text, flush=True)


def cmd_demo(args) -> int:
    hermes = hermes_command()
    if hermes is None:
        print(f"error: {HERMES_MISSING}", file=sys.stderr)
        return 1
    home = demo_home(args.hermes_home)
    from ..common import standin

    model = standin.start(echo=True)  # stopped below, whatever happens (an interrupt too)
    try:
        with _only(home):
            code = _run(args, hermes, home, model)
    finally:
        model.shutdown()
        model.server_close()
        say(f"The stand-in model on {model.url} has stopped.")
        if args.remove:
            shutil.rmtree(home, ignore_errors=True)
            say(f"Removed the demo's Hermes home {home}.")
        else:
            say(f"The demo's Hermes home is kept: {home}")
    return code


@contextmanager
def _only(home: Path) -> Iterator[None]:
    """This process's own reads of the store (inspect at the end) under `demo_env` too: the
    user's CMMS_* settings (a store URL, a Chroma server, a model) never reach the demo's store."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(demo_env(home))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run(args, hermes: str, home: Path, model) -> int:
    say(f"hermes-cmms demo: no key, no network. A throwaway Hermes home: {home}")
    say(f"  the stand-in model (offline: it answers with what memory gave it) listens on {model.url}")
    _install(home, model.url)
    say(f"{len(SESSIONS)} sessions follow, each a new `hermes -z` process (several seconds each).")
    started = time.monotonic()
    for number, (what, text) in enumerate(SESSIONS, 1):
        say(f"\n[session {number} of {len(SESSIONS)}: {what}]  hermes -z {_shell(text)}")
        if not _session(hermes, home, text, model):
            return 1
    say(f"\n{len(SESSIONS)} sessions in {time.monotonic() - started:.0f} s, each a new `hermes -z` process.")
    return _explain(args, home, SESSIONS[-1][1])


def _session(hermes: str, home: Path, text: str, model) -> bool:
    """One `hermes -z` turn, printed with what cmms recalled into its prompt (as the stand-in got
    it) and Hermes' answer; False (said on standard error) when Hermes failed."""
    from ._browse import inert

    seen = len(model.recalled)
    try:
        done = _turn(hermes, home, text)
    except subprocess.TimeoutExpired:
        print(f"error: `hermes -z` gave no answer within {TURN_TIMEOUT_S} s in {home}.", file=sys.stderr)
        return False
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-2000:]
        print(f"error: `hermes -z` failed (exit {done.returncode}) in {home}:\n{tail}", file=sys.stderr)
        return False
    lines = [line for request in model.recalled[seen:] for line in request]
    say(f"  cmms recalled {len(lines)} line(s) into the prompt" + (":" if lines else " (nothing stored matches)"))
    for line in lines:
        say(f"      {inert(line, 300)}")
    for line in done.stdout.strip().splitlines():
        say(f"  Hermes: {inert(line, 300)}")
    return True


def _install(home: Path, url: str) -> None:
    """The stand-in as the home's model, then cmms by the real installer."""
    from ..install import install

    (home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  default: fake-model\n  base_url: {url}\n  api_key: no-key-needed\n",
        encoding="utf-8")
    say("  installing cmms into it (hermes-cmms install-hermes-plugin) ...")
    lines = install(home)
    say(f"  done: {sum(line.startswith('created') for line in lines)} plugin files, memory.provider: cmms")


def _turn(hermes: str, home: Path, text: str) -> subprocess.CompletedProcess:
    env = demo_env(home)
    return subprocess.run([hermes, "-z", text], env=env, capture_output=True, text=True,
                          timeout=TURN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def _explain(args, home: Path, prompt: str) -> int:
    """What the last prompt recalls and why: `hermes-cmms inspect` on the store as it is now."""
    from ._engine import _service, owner_scope
    from ._inspect import cmd_inspect

    shown = argparse.Namespace(prompt=prompt, scope=None, budget=None, why_not=None, json=False, hermes_home=str(home))
    shown.scope = owner_scope(shown)  # the scope Hermes gave the home's owner
    service = _service(shown)
    try:  # the last session's own turn, stored after it was recalled: left out, as a re-run of a past turn does
        last = service.sessions(shown.scope, limit=1)
        turns = service.session_timeline(shown.scope, last[0]["session_id"])["turns"] if last else []
        shown.leave_out = [s["memory_id"] for s in turns[-1]["stored"]] if turns else []
    finally:
        service.close(drain_timeout=0)
    say(f"\nWhat recall gives {prompt!r} now and why (hermes-cmms inspect, leaving out the "
        f"{len(shown.leave_out)} message(s) that session stored):")
    code = cmd_inspect(shown)
    quoted = _quoted(home)
    say("\nLook further (the home is kept" + (")" if not args.remove else "; --remove removes it now)") + ":")
    say(f"  hermes-cmms ui --hermes-home {quoted}            # the dashboard: memories, sessions, why recalled")
    say(f"  hermes-cmms search Lisbon --hermes-home {quoted}")
    say(f"  hermes-cmms inspect {_shell(prompt)} --hermes-home {quoted}")
    say(f"  hermes-cmms list --state all --hermes-home {quoted}   # Berlin too, marked superseded")
    say("Its config.yaml names the stand-in model, which stops now: to chat there, put your own `model:` "
        "block in it (README, \"A model for Hermes\").")
    return code


def _quoted(home: Path) -> str:
    return _shell(str(home))


def _shell(text: str) -> str:
    """`text` as one shell word: in double quotes where that needs no escape, else shlex's quoting."""
    import shlex

    if text and not set(text) & set('"\\$`!') and text.isprintable():
        return f'"{text}"' if shlex.quote(text) != text else text
    return shlex.quote(text)


def register(add: Callable) -> None:
    p = add("demo", cmd_demo, "Try cmms in a minute with no key and no network: real Hermes turns against an "
                              "offline stand-in model, then what was recalled and why.")
    p.add_argument("--remove", action="store_true", help="Remove the demo's Hermes home at the end (kept by default).")
    p._option_string_actions["--hermes-home"].help = ("A new or empty folder to make the demo's Hermes home in "
                                                      "(default: a new temporary one; never $HERMES_HOME).")
