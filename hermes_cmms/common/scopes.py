"""The scopes Hermes gives its users, as hermes-cmms names them for every door."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Optional


def local_scope(home: Path) -> str:
    """The scope Hermes gives its CLI user in this home: `local:<profile>` (owner_scope), the
    profile being the one the home is (profile_name). The provider, the MCP bridge, the
    dashboard and every `hermes-cmms` command default to it."""
    return owner_scope(profile_name(home))


def owner_scope(profile: Optional[str]) -> str:
    """The scope of a profile's owner, the one at its keyboard: `local:<profile>`."""
    return f"local:{profile or 'default'}"


def profile_name(home: Path) -> str:
    """The Hermes profile `home` is, as hermes_cli.profiles.get_active_profile_name says (what
    Hermes hands the provider as `agent_identity`): 'default', or the name of a
    `<root>/profiles/<name>` home."""
    try:
        from hermes_cli.profiles import get_active_profile_name
    except ImportError:  # Hermes not installed here: the same rule, simplified
        resolved = Path(home).expanduser().resolve()
        return resolved.name if resolved.parent.name == "profiles" else "default"
    previous = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home)
    try:
        return get_active_profile_name()
    finally:
        if previous is None:
            del os.environ["HERMES_HOME"]
        else:
            os.environ["HERMES_HOME"] = previous


# Platforms where the one at the keyboard is the profile's owner: the CLI, the TUI, the desktop
# app, an editor over ACP (and Hermes' own name for a local gateway source).
LOCAL_PLATFORMS = frozenset({"cli", "tui", "desktop", "acp", "local"})


def scope_for(platform: Optional[str], user_id: Optional[str], agent_identity: Optional[str],
              conversation: Optional[str] = None) -> str:
    """Gateway users get their own scope per platform; the local owner (CLI, TUI...) has the
    profile's. A gateway platform that names no user (Hermes' api_server) gets a scope per
    conversation (`conversation`: the gateway session key, else the chat or session id), never
    the owner's; with none of them, a scope no one else can reach."""
    if user_id:
        return f"user:{platform or 'unknown'}:{user_id}"
    if (platform or "cli") in LOCAL_PLATFORMS:
        return owner_scope(agent_identity)
    return f"conversation:{platform}:{conversation or uuid.uuid4()}"
