"""Settings: environment beats Hermes' config panel ($HERMES_HOME/cmms/config.json) beats
`memory.cmms` in $HERMES_HOME/config.yaml beats default."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InvalidInput
from .threads import IN_CONTEXT, Threads

EMBEDDER_CHOICES = ("auto", "onnx", "chroma-default", "sentence-transformers", "none")
DTYPE_CHOICES = ("auto", "float32", "bfloat16")
ONNX_ARITHMETIC = ("", "int8")  # onnx (float32) and onnx:int8

# setting name -> (environment variable, default)
SETTINGS: dict[str, tuple[str, Any]] = {
    "database_url": ("CMMS_DATABASE_URL", ""),
    "chroma_url": ("CMMS_CHROMA_URL", ""),
    "chroma_buckets": ("CMMS_CHROMA_BUCKETS", 100),
    "embedder": ("CMMS_EMBEDDER", "auto"),
    "embedder_dtype": ("CMMS_EMBEDDER_DTYPE", "auto"),
    "recall_tokens": ("CMMS_RECALL_TOKENS", 600),
    "scheduler": ("CMMS_SCHEDULER", "on"),
    "sweep_interval_s": ("CMMS_SWEEP_INTERVAL_S", 60),
    "decay_interval_s": ("CMMS_DECAY_INTERVAL_S", 3600),
    "consolidate_interval_s": ("CMMS_CONSOLIDATE_INTERVAL_S", 21600),
    "consolidation_llm": ("CMMS_CONSOLIDATION_LLM", "off"),
    "snapshot_days": ("CMMS_SNAPSHOT_DAYS", 30),
    "recall_events": ("CMMS_RECALL_EVENTS", 1000),
    "llm": ("CMMS_LLM", "off"),
    "llm_model": ("CMMS_LLM_MODEL", ""),
    "mirror": ("CMMS_MIRROR", "on"),
    "inbox": ("CMMS_INBOX", ""),
}
SWITCHES = {"scheduler": ("on", "off"), "consolidation_llm": ("off", "hermes"), "mirror": ("on", "off"),
            "embedder_dtype": DTYPE_CHOICES}
INTERVALS = ("sweep_interval_s", "decay_interval_s", "consolidate_interval_s", "snapshot_days")
# setting name -> its type for a settings form (`hermes memory setup`, Hermes' Dashboard): `type`
# text | integer | number | boolean (a boolean is an on/off switch), and the bounds a form offers
# and a save checks (`minimum`, `maximum`, `step`). A setting not named here is text.
FIELD_TYPES: dict[str, dict[str, Any]] = {
    "recall_tokens": {"type": "integer", "minimum": 50, "maximum": 8000, "step": 50},
    "sweep_interval_s": {"type": "integer", "minimum": 1, "maximum": 86_400, "step": 10},
    "decay_interval_s": {"type": "integer", "minimum": 60, "maximum": 604_800, "step": 60},
    "consolidate_interval_s": {"type": "integer", "minimum": 60, "maximum": 604_800, "step": 60},
    "snapshot_days": {"type": "integer", "minimum": 1, "maximum": 3650, "step": 1},
    "recall_events": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "step": 100},
    "chroma_buckets": {"type": "integer", "minimum": 1, "maximum": 100_000, "step": 1},
    "scheduler": {"type": "boolean"},
    "mirror": {"type": "boolean"},
}


def hermes_home(explicit: str | os.PathLike | None = None) -> Path:
    """The Hermes home directory: explicit argument, $HERMES_HOME, else ~/.hermes."""
    raw = explicit or os.environ.get("HERMES_HOME") or Path.home() / ".hermes"
    return Path(raw).expanduser()


# What Hermes leaves in a home it has used (hermes_cli.config.ensure_hermes_home on every start,
# its session database, `hermes setup`): a directory with none of them is not a Hermes home.
HERMES_MARKS = ("config.yaml", "state.db", "SOUL.md", "sessions", "memories")


def used_by_hermes(home: Path) -> bool:
    """Whether Hermes has used `home` (a typo in --hermes-home or $HERMES_HOME names one it has not)."""
    return any((home / mark).exists() for mark in HERMES_MARKS)


def read_config_section(home: Path) -> dict:
    """Return `memory.cmms` from config.yaml, or {} when absent or unreadable."""
    try:
        data = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    memory = data.get("memory") if isinstance(data, dict) else None
    section = memory.get("cmms") if isinstance(memory, dict) else None
    return section if isinstance(section, dict) else {}


PANEL_FILE = Path("cmms") / "config.json"  # where Hermes' provider config panel saves (config_schema.py)
PANEL_SOURCE = "Hermes' config panel (cmms/config.json)"


def read_panel(home: Path) -> dict:
    """The settings Hermes' provider config panel saved for cmms, or {} when none or unreadable."""
    try:
        data = json.loads((home / PANEL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    chroma_url: str = ""
    chroma_buckets: int = 100  # a Chroma server's collections a view, scopes hashed into them (chroma.py)
    embedder: str = "auto"
    embedder_dtype: str = "auto"
    recall_tokens: int = 600
    scheduler: str = "on"
    sweep_interval_s: int = 60
    decay_interval_s: int = 3600
    consolidate_interval_s: int = 21600
    consolidation_llm: str = "off"
    snapshot_days: int = 30
    recall_events: int = 1000  # recall events a scope keeps (its newest; none older than 30 days)
    llm: str = "off"  # off | hermes | the base URL of an OpenAI-compatible endpoint
    llm_model: str = ""
    mirror: str = "on"
    inbox: str = ""
    sources: dict = field(default_factory=dict, compare=False)
    threads: Threads = field(default=IN_CONTEXT, compare=False, repr=False)  # how the engine starts its threads

    @property
    def data_dir(self) -> Path:
        return self.home / "cmms"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @classmethod
    def load(cls, home: str | os.PathLike | None = None, **overrides: Any) -> "Settings":
        """Resolve every setting; `overrides` (e.g. from a CLI flag) beat everything."""
        home_path = hermes_home(home)
        section, panel = read_config_section(home_path), read_panel(home_path)
        values, sources = {}, {}
        for name, (env, default) in SETTINGS.items():
            if overrides.get(name) not in (None, ""):
                values[name], sources[name] = overrides[name], "argument"
            elif os.environ.get(env):
                values[name], sources[name] = os.environ[env], env
            elif panel.get(name) not in (None, ""):
                values[name], sources[name] = panel[name], PANEL_SOURCE
            elif section.get(name) not in (None, ""):
                values[name], sources[name] = section[name], "config.yaml memory.cmms"
            else:
                values[name], sources[name] = default, "default"
        if not values["database_url"]:
            values["database_url"] = f"sqlite:///{home_path / 'cmms' / 'cmms.db'}"
        for name in ("recall_tokens", "recall_events", "chroma_buckets", *INTERVALS):
            values[name] = _positive_int(name, values[name])
        _check_embedder(values["embedder"])
        values["llm"] = _check_llm(values["llm"])
        values["llm_model"], values["inbox"] = str(values["llm_model"]).strip(), str(values["inbox"]).strip()
        for name, choices in SWITCHES.items():
            value = values[name]  # YAML reads a bare on/off as a boolean
            values[name] = ("on" if value else "off") if isinstance(value, bool) else str(value).lower()
            if values[name] not in choices:
                raise InvalidInput(f"Unknown {name} {values[name]!r}; choose one of {', '.join(choices)}.")
        return cls(home=home_path, sources=sources, **values)


def _positive_int(name: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"Setting {name} must be a whole number, not {value!r}.") from None
    if number <= 0:
        raise InvalidInput(f"Setting {name} must be positive, not {number}.")
    return number


def _check_llm(value: Any) -> str:
    """off, hermes, or an http(s) URL (an OpenAI-compatible endpoint)."""
    value = ("on" if value else "off") if isinstance(value, bool) else str(value).strip()
    if value.lower() in ("off", "hermes"):
        return value.lower()
    if not value.startswith(("http://", "https://")):
        raise InvalidInput(f"Unknown llm {value!r}; choose off, hermes, or the http(s) URL of an "
                           "OpenAI-compatible endpoint.")
    return value.rstrip("/")


def _check_embedder(value: str) -> None:
    kind, _, arg = str(value).partition(":")
    if kind not in EMBEDDER_CHOICES or (kind == "onnx" and arg not in ONNX_ARITHMETIC):
        choices = ", ".join(EMBEDDER_CHOICES)
        raise InvalidInput(f"Unknown embedder {value!r}; choose one of {choices} (onnx:int8 for int8 arithmetic).")
