"""The one plugin manager: built-in hook modules plus third-party entry points."""
from __future__ import annotations

import importlib
import logging
import os
from importlib.metadata import entry_points

import pluggy

from ..hooks import specs
from .tracing import Span

log = logging.getLogger(__name__)

DEFAULT_PLUGINS = (
    "hermes_cmms.redact",
    "hermes_cmms.hooks.auto_retain",
    "hermes_cmms.hooks.auto_recall",
    "hermes_cmms.hooks.session_flush",
    "hermes_cmms.hooks.auto_extract",
)
ENTRY_POINT_GROUP = "hermes_cmms"
ALLOW_ENV = "CMMS_PLUGINS"  # comma-separated entry-point names to load; unset = all, "" = none


def make_plugin_manager(load_entry_points: bool = True) -> pluggy.PluginManager:
    from ..redact import install_log_filter

    install_log_filter()  # every hermes_cmms log record is redacted too
    pm = pluggy.PluginManager("hermes_cmms")
    pm.add_hookspecs(specs)
    for name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entry_points:
        _load_entry_points(pm)
    pm.check_pending()
    return pm


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    allowed = os.environ.get(ALLOW_ENV)
    allow = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if allow is not None and ep.name not in allow:
            continue
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break memory
            log.warning("hermes-cmms: plugin %r failed to load: %s", ep.name, exc)


def describe(pm: pluggy.PluginManager) -> list[dict]:
    """Each registered plugin with the hooks it implements (for `hermes-cmms plugins`)."""
    return [{"name": pm.get_name(plugin),
             "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or [])}
            for plugin in pm.get_plugins()]


def run_redactors(pm: pluggy.PluginManager, text: str, scope: str) -> str:
    """Pass `text` through every redact implementation in turn (pluggy's call order)."""
    span = Span("cmms.hook redact", hook="redact")
    try:
        for impl in pm.hook.redact.get_hookimpls()[::-1]:
            kwargs = {"text": text, "scope": scope}
            result = impl.function(**{name: kwargs[name] for name in impl.argnames})
            if result is not None:
                text = result
    except Exception as exc:
        span.end(f"{type(exc).__name__}: {exc}", exc)
        raise
    span.end()
    return text
