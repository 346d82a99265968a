"""cmms' settings as Hermes sees them: the typed config schema, the values `hermes memory setup`
(or Hermes 0.20+'s Dashboard) saves, and what `hermes memory status` shows."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from ..common import hermes_config
from ..common.config import (DTYPE_CHOICES, EMBEDDER_CHOICES, FIELD_TYPES, PANEL_FILE, SETTINGS, SWITCHES, Settings,
                             read_panel)
from ..common.errors import InvalidInput

DESCRIPTIONS = {
    "database_url": "SQL store URL (empty: SQLite in $HERMES_HOME/cmms/cmms.db)",
    "chroma_url": "Chroma server URL, http://host:port (empty: embedded Chroma in $HERMES_HOME/cmms/chroma)",
    "chroma_buckets": "Collections a view on a Chroma server, scopes hashed into them (changed: run reindex)",
    "embedder": "Embedding model for semantic recall (never downloads)",
    "embedder_dtype": "sentence-transformers precision",
    "recall_tokens": "Token budget of the memory injected per turn",
    "scheduler": "Background jobs (TTL sweep, decay, consolidation)",
    "sweep_interval_s": "Seconds between sweeps of expired working memory",
    "decay_interval_s": "Seconds between decay runs",
    "consolidate_interval_s": "Seconds between consolidation runs",
    "consolidation_llm": "Who writes consolidation summaries (hermes: your model through Hermes)",
    "snapshot_days": "Days a forgotten memory's snapshot stays in the audit trail",
    "recall_events": "Recall events (which memories each turn was given, ids only) a scope keeps",
    "llm": "Model for extraction and routing: off, hermes, or an OpenAI-compatible http(s) URL",
    "llm_model": "Model name sent to that URL (empty: \"default\")",
    "mirror": "Mirror MEMORY.md / USER.md into memory",
    "inbox": "Folder whose dropped .md / .txt files are learned (empty: none)",
}
CHOICES = {"embedder": EMBEDDER_CHOICES, "embedder_dtype": DTYPE_CHOICES,
           "consolidation_llm": SWITCHES["consolidation_llm"]}
TRUE, FALSE = ("true", "on", "yes", "y", "1"), ("false", "off", "no", "n", "0")


# -- the schema ---------------------------------------------------------------------------


def config_schema() -> List[Dict[str, Any]]:
    """One typed field per setting, in the order of SETTINGS."""
    return [_field(name) for name in SETTINGS]


def _field(name: str) -> Dict[str, Any]:
    field = {"key": name, "description": DESCRIPTIONS[name], "type": "text",
             **FIELD_TYPES.get(name, {}), "default": typed(name, SETTINGS[name][1])}
    if name in CHOICES:
        field["choices"] = list(CHOICES[name])
    return field


def kind(name: str) -> str:
    return FIELD_TYPES.get(name, {}).get("type", "text")


# -- typed values ---------------------------------------------------------------------------


def typed(name: str, value: Any) -> Any:
    """`value` (a form's string, or already typed) as its setting's type, within its bounds;
    an empty one (a cleared field) is '': the setting goes back to its default."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if kind(name) == "boolean":
        return _boolean(name, value)
    if kind(name) in ("integer", "number"):
        return _number(name, value, FIELD_TYPES[name])
    return str(value).strip()


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in TRUE + FALSE:
        raise InvalidInput(f"Setting {name} must be on or off, not {value!r}.")
    return word in TRUE


def _number(name: str, value: Any, spec: Dict[str, Any]) -> int | float:
    whole = spec["type"] == "integer"
    try:
        number = (int if whole else float)(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None:
        raise InvalidInput(f"Setting {name} must be a {'whole ' if whole else ''}number, not {value!r}.")
    low, high = spec.get("minimum", number), spec.get("maximum", number)
    if not low <= number <= high:
        raise InvalidInput(f"Setting {name} must be between {low} and {high}, not {number}.")
    return number


def typed_values(values: Dict[str, Any], home: Path) -> Dict[str, Any]:
    """The known settings of `values`, typed and checked together (an empty text: the default);
    InvalidInput, in one sentence, for the first bad one."""
    known = {name: typed(name, value) for name, value in (values or {}).items() if name in SETTINGS}
    Settings.load(home, **known)  # the checks a start-up makes (embedder, llm URL, choices)
    return known


def save(home: Path, values: Dict[str, Any], activate: bool = False) -> Dict[str, Any]:
    """Write `values` to memory.cmms in config.yaml, typed, keeping the user's comments; with
    `activate` also make cmms the memory provider. Returns what was written."""
    known = typed_values(values, Path(home))

    def change(data):
        if activate:
            hermes_config.section(data, "memory")["provider"] = "cmms"
        own = hermes_config.section(data, "memory", "cmms")
        for name, value in known.items():
            if value == "":
                own.pop(name, None)
            else:
                own[name] = _as_yaml(value)

    hermes_config.edit(Path(home), change)
    _drop_from_panel(Path(home), known)
    return known


def _drop_from_panel(home: Path, saved: Dict[str, Any]) -> None:
    """Take the settings just saved out of Hermes' config panel file, which is read over
    config.yaml: the value saved last is the one cmms uses."""
    path = home / PANEL_FILE
    panel = read_panel(home)
    if not panel.keys() & saved.keys():
        return
    kept = {name: value for name, value in panel.items() if name not in saved}
    tmp = path.with_name(path.name + ".cmms-tmp")
    tmp.write_text(json.dumps(kept, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _as_yaml(value: Any) -> Any:
    """A text that YAML 1.1 readers (PyYAML: Hermes, Settings) would not read back as itself
    (on, no, Yes: booleans) written quoted; anything else as it is."""
    if not isinstance(value, str):
        return value
    try:
        same = yaml.safe_load(value) == value
    except yaml.YAMLError:
        same = False
    return value if same or "\n" in value else SingleQuotedScalarString(value)


# -- `hermes memory status` -----------------------------------------------------------------


def status_lines(settings: Settings) -> Dict[str, str]:
    """Each setting's effective value (an empty one: what it means) and where it comes from."""
    from ..service import safe_url

    shown = {name: getattr(settings, name) for name in SETTINGS}
    shown["database_url"] = safe_url(settings.database_url)  # never a password on screen
    empty = {"chroma_url": f"(embedded Chroma in {settings.chroma_path})",
             "llm_model": '(the endpoint\'s "default" model)' if settings.llm.startswith("http") else "(not used: llm is not a URL)",
             "inbox": "(none: no folder is watched)"}
    return {name: f"{value if value != '' else empty.get(name, '(not set)')}  [{settings.sources[name]}]"
            for name, value in shown.items()}


# -- `hermes memory setup` ------------------------------------------------------------------


def run_wizard(hermes_home: str, config: Dict[str, Any]) -> None:
    """Ask every setting (Enter keeps the value shown), re-asking a bad answer, then make cmms
    the provider and save: Hermes hands `hermes memory setup` over to this (post_setup)."""
    home = Path(hermes_home)
    memory = config.get("memory") if isinstance(config.get("memory"), dict) else {}
    current = dict(memory.get("cmms") or {}) if isinstance(memory.get("cmms"), dict) else {}
    print("\n  Configuring cmms (Enter keeps the value in brackets):\n")
    answers = {}
    for field in config_schema():
        answer = _ask(field, current.get(field["key"], field["default"]), home)
        if answer is _CANCELLED:
            print("\n  Cancelled. No changes saved.\n")
            return
        if answer is not None:
            answers[field["key"]] = answer
    try:
        saved = save(home, answers, activate=True)
    except InvalidInput as exc:  # e.g. a value kept from config.yaml that no longer passes
        print(f"\n  Not saved: {exc}\n")
        return
    print("\n  Memory provider: cmms\n  Activation saved to config.yaml")
    print(f"  {len(saved)} setting(s) saved to memory.cmms" if saved else "  Settings unchanged")
    print("\n  Start a new session to activate.\n")


_CANCELLED = object()
ATTEMPTS = 5  # a prompt asks again after a bad answer, this many times at most


def _ask(field: Dict[str, Any], current: Any, home: Path) -> Any:
    """The typed, checked answer for one field, None to keep `current`, or _CANCELLED."""
    name, shown = field["key"], _shown(field["key"], current)
    for _ in range(ATTEMPTS):
        raw = _answer(field, shown)
        if raw is _CANCELLED:
            return _CANCELLED
        if raw == shown:
            return None
        try:
            return _checked(name, raw, home)
        except InvalidInput as exc:
            print(f"  {exc}")
    return None


def _shown(name: str, current: Any) -> str:
    if kind(name) == "boolean":
        current = SETTINGS[name][1] if current in (None, "") else current  # unset: the default
        try:
            return "on" if typed(name, current) else "off"
        except InvalidInput:
            return str(current)
    return "" if current is None else str(current)


def _checked(name: str, raw: str, home: Path) -> Any:
    """`raw` typed and checked as a start-up would check it (bounds, embedder, llm URL)."""
    value = typed(name, raw)
    Settings.load(home, **{name: value})
    return value


def _answer(field: Dict[str, Any], shown: str) -> Any:
    """What the user typed or picked: Hermes' picker on a terminal, a line of text on a pipe."""
    options = ["on", "off"] if kind(field["key"]) == "boolean" else list(field.get("choices", []))
    if options and sys.stdin.isatty():
        if shown not in options:  # e.g. sentence-transformers:/models/x, typed into config.yaml
            options.insert(0, shown)
        picked = _select(f"  {field['description']}", options, options.index(shown))
        return _CANCELLED if picked < 0 else options[picked]
    hint = f" ({'/'.join(options)})" if options else _bounds_hint(field)
    return _prompt(f"{field['description']}{hint}", shown or None)


def _bounds_hint(field: Dict[str, Any]) -> str:
    if field["type"] not in ("integer", "number"):
        return ""
    return f" ({field.get('minimum')}-{field.get('maximum')})"


def _prompt(label: str, default: Optional[str]) -> str:
    """Hermes' own setup prompt when it has one (the wizard looks like the rest of Hermes)."""
    try:
        from hermes_cli.memory_setup import _prompt as hermes_prompt
    except ImportError:
        return input(f"  {label}{f' [{default}]' if default else ''}: ").strip() or (default or "")
    return hermes_prompt(label, default=default)


def _select(title: str, choices: List[str], start: int) -> int:
    """Hermes' own picker (arrow keys); -1 when cancelled."""
    try:
        from hermes_cli.memory_setup import _curses_select
    except ImportError:  # not a public plugin API (HERMES-0.23 item 6): a Hermes may not have it
        answer = _prompt(f"{title} ({' / '.join(choices)})", choices[start])
        return choices.index(answer) if answer in choices else start
    return _curses_select(title, [(c, "") for c in choices], default=start, cancel_returns=-1)
