"""hermes-cmms: Composite Memory for Hermes Agent.

The names below are imported when first used (PEP 562), so a door that needs only part of the
engine (`hermes-cmms --help`, `hermes-cmms audit-log`) does not pay for the rest at start-up.

Importing it turns off the telemetry of the runtimes it loads (TELEMETRY_OFF, docs/privacy.md).
"""
import os

from .common.version import __version__  # noqa: F401 - hermes_cmms.__version__

# Set over any value the environment held (there is no opt-in), in every process that imports
# this package (Hermes, the bridge, the CLI) and the processes it starts: each runtime reads its
# switch once, when imported, and no part of this package imports one before this line has run.
TELEMETRY_OFF = {
    "ORT_DISABLE_TELEMETRY": "1",  # ONNX Runtime: a device id under ~/.cache/Microsoft/, uploads
    "HF_HUB_DISABLE_TELEMETRY": "1",  # Hugging Face Hub, under sentence-transformers
}
os.environ.update(TELEMETRY_OFF)

_EXPORTS = {
    "CmmsError": ".common.errors", "InvalidInput": ".common.errors", "StoreUnavailable": ".common.errors",
    "UnknownMemory": ".common.errors", "Settings": ".common.config", "hookimpl": ".hooks",
    "MemoryService": ".service", "acquire": ".service", "release": ".service", "NewMemory": ".store.store",
}

__all__ = ["CmmsError", "InvalidInput", "MemoryService", "NewMemory", "Settings",
           "StoreUnavailable", "UnknownMemory", "acquire", "hookimpl", "release"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hermes_cmms' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
