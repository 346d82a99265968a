"""Install hermes-cmms into a Hermes home: plugin shim, config switch, gateway hook; and undo it.

The plugin shim is the directory plugin in templates/plugin/ (shim __init__.py, plugin.yaml,
cli.py for `hermes cmms …`, config_schema.py, the Dashboard tab, pyproject.toml), the very tree a
catalog entry points Hermes 0.23 at: written here, it is what Hermes 0.19-0.22 load.

Every step compares before it writes, so a second run changes nothing, byte for byte.
A dry run plans the same steps and writes nothing. The install remembers what it
changed (under `memory.cmms` in config.yaml) so uninstall can put it back.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Callable

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ..common import hermes_config
from ..common.config import Settings
from ..common.errors import CmmsError, InvalidInput

NAME = "cmms"  # provider name = plugin directory name = plugins.enabled entry
PLUGIN_DIR = Path("plugins") / NAME
HOOK_DIR = Path("hooks") / "cmms-session-flush"
DATA_DIR = Path(NAME)
PREVIOUS = "previous_provider"  # memory.cmms.previous_provider: restored by uninstall
ENABLED_BY_INSTALL = "plugins_enabled_by_install"  # memory.cmms flag: uninstall removes the entry

HOOK_FILES = {"HOOK.yaml": HOOK_DIR / "HOOK.yaml", "handler.py": HOOK_DIR / "handler.py"}  # template -> destination
PLUGIN_TEMPLATE = "plugin"  # templates/plugin/: the directory plugin, as Hermes 0.23 installs it from the catalog


PAST = {"create": "created", "update": "updated", "set": "set", "add": "added",
        "remove": "removed", "restore": "restored", "delete": "deleted"}

NEXT_STEP = ("Next step: run `hermes` and chat; memories are recalled from your next session on. "
             "`hermes memory status` shows cmms as the active provider "
             "(restart `hermes gateway` if it is running).")

PROFILES_NOTE = ("Hermes profiles: on Hermes 0.19, a profile made from this one later (`hermes profile create NAME "
                 "--clone`) gets memory.provider: cmms but not plugins/cmms/, so memory is off there until you run "
                 "`hermes-cmms install-hermes-plugin --hermes-home {profiles}/NAME` (`hermes-cmms doctor` in it says so).")

Step = tuple[str, str]  # (verb, what)


# -- public API ---------------------------------------------------------------------------


def install(home: Path, dry_run: bool = False) -> list[str]:
    """Install the plugin, switch `memory.provider` to cmms and add the gateway hook."""
    home = _usable_home(home)
    plan = _activate(_read_config(home))  # refuses an unusable config.yaml before any write
    files = [*_plugin_files(), *((dest, _template(name)) for name, dest in HOOK_FILES.items())]
    steps = [step for dest, text in files for step in _write(home / dest, text, dry_run)]
    steps += _apply_config(home, _activate, plan, dry_run)
    lines = [_say(verb, what, dry_run) for verb, what in steps]
    if not lines:
        lines = [f"hermes-cmms is already installed in {home}: nothing to do."]
    return (_banner(dry_run) + _hermes_warning() + lines + _prepare_model(home, dry_run)
            + [PROFILES_NOTE.format(profiles=_profiles_root(home)), NEXT_STEP])


def uninstall(home: Path, purge: bool = False, dry_run: bool = False) -> list[str]:
    """Undo install; keep the memories in $HERMES_HOME/cmms unless `purge`."""
    home = _usable_home(home)
    notes = _external_store_notes(home) if purge else []
    change = partial(_deactivate, purge=purge)
    steps = _apply_config(home, change, change(_read_config(home)), dry_run)
    for folder in (PLUGIN_DIR, HOOK_DIR) + ((DATA_DIR,) if purge else ()):
        steps += _remove_tree(home / folder, dry_run)
    lines = [_say(verb, what, dry_run) for verb, what in steps]
    if not lines:
        return _banner(dry_run) + [f"hermes-cmms is not installed in {home}: nothing to do."]
    if not purge and (home / DATA_DIR).exists():
        lines.append(f"kept your memories in {home / DATA_DIR} (uninstall with --purge deletes them)")
    return _banner(dry_run) + lines + notes


# -- files --------------------------------------------------------------------------------


def _template(name: str) -> str:
    return (resources.files(__package__) / "templates" / name).read_text(encoding="utf-8")


def _plugin_files() -> list[tuple[Path, str]]:
    """Every file of the directory plugin, as (destination in the Hermes home, text)."""
    found, folders = [], [(resources.files(__package__) / "templates" / PLUGIN_TEMPLATE, PLUGIN_DIR)]
    while folders:
        folder, dest = folders.pop()
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.is_dir() and entry.name != "__pycache__":
                folders.append((entry, dest / entry.name))
            elif entry.is_file() and not entry.name.endswith(".pyc"):
                found.append((dest / entry.name, entry.read_text(encoding="utf-8")))
    return found


def _write(path: Path, text: str, dry_run: bool) -> list[Step]:
    """Write `text` to `path` unless it already holds exactly that."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return []
    verb = "update" if path.exists() else "create"
    if not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".cmms-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return [(verb, str(path))]


def _remove_tree(path: Path, dry_run: bool) -> list[Step]:
    if not path.exists():
        return []
    if not dry_run:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return [("delete", str(path))]


# -- config.yaml --------------------------------------------------------------------------


def _apply_config(home: Path, change: Callable[[CommentedMap], list[Step]], plan: list[Step],
                  dry_run: bool) -> list[Step]:
    """Run `change` on config.yaml if its plan (the same change on a throwaway copy) has steps."""
    if plan:
        hermes_config.edit(home, change, dry_run=dry_run)
    return plan


def _activate(data: CommentedMap) -> list[Step]:
    memory, plugins = _mapping(data, "memory"), _mapping(data, "plugins")
    steps: list[Step] = []
    previous = memory.get("provider") or ""
    if previous != NAME:
        memory["provider"] = NAME
        if previous:
            _mapping(memory, NAME)[PREVIOUS] = previous
        was = f" (was {previous}; uninstall restores it)" if previous else ""
        steps.append(("set", f"memory.provider: {NAME} in config.yaml{was}"))
    enabled = _sequence(plugins, "enabled")
    if NAME not in enabled:
        enabled.append(NAME)
        _mapping(memory, NAME)[ENABLED_BY_INSTALL] = True
        steps.append(("add", f"{NAME} to plugins.enabled (so its on_session_finalize hook runs)"))
    disabled = plugins.get("disabled")
    if isinstance(disabled, list) and NAME in disabled:
        disabled[:] = [name for name in disabled if name != NAME]
        steps.append(("remove", f"{NAME} from plugins.disabled"))
    return steps


def _deactivate(data: CommentedMap, purge: bool) -> list[Step]:
    memory = data.get("memory")
    if not isinstance(memory, dict):
        return []
    own = memory.get(NAME) if isinstance(memory.get(NAME), dict) else {}
    previous, enabled_by_install = own.pop(PREVIOUS, ""), own.pop(ENABLED_BY_INSTALL, False)
    steps = _restore_provider(memory, previous) + (_drop_enabled(data) if enabled_by_install else [])
    steps += _drop_own_section(memory, purge) if isinstance(memory.get(NAME), dict) else []
    if not steps and (previous or enabled_by_install):
        steps.append(("remove", f"the install notes in memory.{NAME} of config.yaml"))
    return steps


def _drop_own_section(memory: dict, purge: bool) -> list[Step]:
    """Remove memory.cmms when the install notes were all it held, or on purge."""
    settings = memory[NAME]
    if settings and not purge:
        return []
    del memory[NAME]
    return [("remove", f"your cmms settings (memory.{NAME}) from config.yaml")] if settings else []


def _restore_provider(memory: dict, previous: str) -> list[Step]:
    if memory.get("provider") != NAME:
        return []
    memory["provider"] = previous or ""
    if previous:
        return [("restore", f"memory.provider: {previous} in config.yaml")]
    return [("set", 'memory.provider: "" in config.yaml (built-in memory only, like `hermes memory off`)')]


def _drop_enabled(data: CommentedMap) -> list[Step]:
    plugins = data.get("plugins")
    enabled = plugins.get("enabled") if isinstance(plugins, dict) else None
    if not isinstance(enabled, list) or NAME not in enabled:
        return []
    enabled[:] = [name for name in enabled if name != NAME]
    return [("remove", f"{NAME} from plugins.enabled")]


def _mapping(parent: dict, key: str) -> dict:
    """parent[key] as a mapping, created when missing or empty; refuses to overwrite a value."""
    if parent.get(key) is not None and not isinstance(parent[key], dict):
        raise InvalidInput(f"config.yaml key {key!r} holds {parent[key]!r}, but hermes-cmms needs a mapping there.")
    return hermes_config.section(parent, key)


def _sequence(parent: dict, key: str) -> list:
    value = parent.get(key)
    if value is None:
        value = parent[key] = CommentedSeq()
    if not isinstance(value, list):
        raise InvalidInput(f"config.yaml key plugins.{key} holds {value!r}, but Hermes needs a list there.")
    return value


def _read_config(home: Path) -> CommentedMap:
    """config.yaml, or InvalidInput with a one-sentence reason."""
    try:
        return hermes_config.read(home)
    except InvalidInput as exc:
        raise InvalidInput(f"{exc} Fix it and run the installer again.") from exc


# -- messages and checks ------------------------------------------------------------------


def _usable_home(home: Path) -> Path:
    home = Path(home).expanduser()
    if home.exists() and not home.is_dir():
        raise InvalidInput(f"Hermes home {str(home)!r} is a file, not a directory.")
    return home


def _profiles_root(home: Path) -> Path:
    """Where Hermes keeps the named profiles of the root `home` belongs to (home itself, or the
    root of a `<root>/profiles/<name>` home)."""
    home = home.expanduser().resolve()
    return home.parent if home.parent.name == "profiles" else home / "profiles"


def _say(verb: str, what: str, dry_run: bool) -> str:
    return f"would {verb} {what}" if dry_run else f"{PAST[verb]} {what}"


def _banner(dry_run: bool) -> list[str]:
    return ["Dry run: nothing is written."] if dry_run else []


def _hermes_warning() -> list[str]:
    """The shim imports hermes_cmms inside Hermes' Python; warn when that is clearly another one."""
    if importlib.util.find_spec("hermes_cli") is not None:
        return []
    return ["warning: Hermes Agent is not installed in this Python environment; install hermes-cmms "
            "into the environment that runs `hermes`, or Hermes cannot import the plugin."]


def _prepare_model(home: Path, dry_run: bool) -> list[str]:
    """Prepare the ONNX MiniLM now (once per machine), so the first Hermes session loads it in
    a fraction of a second: the arithmetic queries use, and the int8 one every memory is stored
    with (about 4 s to make, otherwise spent by the first session's indexer); a failure here
    only says so (the first session tries again)."""
    from ..service import packaged_int8_minilm, prepared_minilm

    try:
        choice = Settings.load(home).embedder
    except CmmsError:
        return []
    source = packaged_int8_minilm()
    if dry_run or source is None or choice.partition(":")[0] not in ("auto", "onnx"):
        return []
    try:
        made = dict.fromkeys([prepared_minilm(source, choice == "onnx:int8"), prepared_minilm(source, True)])
        return [f"prepared the embedding model in {path}" for path in made]
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be written, a foreign file
        return [f"note: the embedding model is not prepared yet ({exc}); the first session will try again."]


def _external_store_notes(home: Path) -> list[str]:
    """Purge deletes $HERMES_HOME/cmms only; say so when memories live elsewhere."""
    try:
        settings = Settings.load(home)
    except CmmsError:
        return []
    local = f"sqlite:///{settings.data_dir}/"
    notes = []
    if not settings.database_url.startswith(local):
        notes.append(f"note: memories stored at {settings.database_url} were not deleted.")
    if settings.chroma_url:
        notes.append(f"note: vectors on the Chroma server {settings.chroma_url} were not deleted.")
    return notes
