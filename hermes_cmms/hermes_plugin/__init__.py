"""The Hermes plugin: what Hermes loads to get the `cmms` memory provider.

Hermes 0.20+ reads it from the `hermes_agent.memory_providers` entry point (so `pip install`
into Hermes' venv is all it needs) and finds `cli.py` and `config_schema.py` beside it; Hermes
0.23 (`hermes plugins install`) and 0.19 (`install-hermes-plugin`) load the directory plugin
install/templates/plugin/ from $HERMES_HOME/plugins/cmms/ instead, whose shims import this package.
Importing it loads nothing of the engine; register() constructs the provider, which does not either.
"""
from __future__ import annotations

from typing import Any


def register(ctx: Any) -> None:
    """Hand Hermes' memory loader the provider; hand its general plugin manager (a dual-mode
    plugin, enabled in plugins.enabled) the session-finalize hook."""
    from hermes_cmms.hermes.provider import CmmsMemoryProvider, on_session_finalize  # absolute:
    # Hermes may load this directory by path, as it loads $HERMES_HOME/plugins/<name>/

    if hasattr(ctx, "register_memory_provider"):
        ctx.register_memory_provider(CmmsMemoryProvider())
    else:
        ctx.register_hook("on_session_finalize", on_session_finalize)
