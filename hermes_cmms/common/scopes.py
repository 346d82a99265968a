"""The scopes Hermes gives its users, as hermes-cmms names them for every door."""
from __future__ import annotations

import os
from pathlib import Path


def local_scope(home: Path) -> str:
    """The scope Hermes gives its CLI user in this home: `local:<profile>`, the profile being
    what hermes_cli.profiles.get_active_profile_name says for it ('default', or the name of
    a `<root>/profiles/<name>` home)."""
    try:
        from hermes_cli.profiles import get_active_profile_name
    except ImportError:  # Hermes not installed here: the same rule, simplified
        resolved = Path(home).expanduser().resolve()
        return f"local:{resolved.name if resolved.parent.name == 'profiles' else 'default'}"
    previous = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home)
    try:
        return f"local:{get_active_profile_name()}"
    finally:
        if previous is None:
            del os.environ["HERMES_HOME"]
        else:
            os.environ["HERMES_HOME"] = previous
