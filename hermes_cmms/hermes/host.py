"""What the Hermes running us offers, across versions: 0.19 (the one PyPI has) and 0.20+."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..common.threads import Threads

try:  # Hermes 0.20+: the host's own type, which its UI renders as "🧠 ... recalled N memories"
    from agent.memory_provider import RecallStatus
    HOST_SHOWS_RECALL = True
except ImportError:  # Hermes 0.19 has no recall line; the provider says it through status_callback
    HOST_SHOWS_RECALL = False

    @dataclass
    class RecallStatus:  # the same fields as upstream's, so callers read it the same way
        provider_label: str
        count: int
        glyph: str = "🧠"

try:  # Hermes 0.20+ shows a provider's unavailable_reason() when is_available() is False; 0.19
    # drops such a provider without a word to the person at the chat
    from agent.memory_provider import MemoryProvider as _HostProvider
    HOST_SAYS_UNAVAILABLE = hasattr(_HostProvider, "unavailable_reason")
except ImportError:
    HOST_SAYS_UNAVAILABLE = False

def quiet_stderr():
    """The process's own standard error while Hermes sends `sys.stderr` to the null device for
    the whole run, as 0.19's `hermes -z` does (it prints only the reply, on standard output, and
    its warning line goes to the null device too); else None. A line written there reaches the
    person who ran the command and leaves the reply alone. Read when a session starts (Hermes'
    code_execution_tool mutes stderr around each tool call too, and there the warning line
    stays the place to say something)."""
    import os
    import sys

    quiet = getattr(sys.stderr, "name", None) == os.devnull and sys.stderr is not sys.__stderr__
    return sys.__stderr__ if quiet and sys.__stderr__ is not None else None


PREFETCH_TIMEOUT_S = 8.0  # how long Hermes (0.19 and later) waits for a provider's prefetch


def prefetch_timeout() -> float:
    """How long the running Hermes waits for a prefetch; one that takes longer is dropped (the
    turn goes on without it) even when it ends later."""
    try:
        from agent.memory_manager import _EXTERNAL_PREFETCH_TIMEOUT_S
    except ImportError:
        return PREFETCH_TIMEOUT_S
    return float(_EXTERNAL_PREFETCH_TIMEOUT_S)


# Prompts too small to recall for (0.20+ core skips prefetch for them; on 0.19 the provider does).
# The words are those of 0.19's bundled Honcho provider (`_TRIVIAL_PROMPT_RE`) and the ones
# upstream's `is_trivial_prompt` adds (greetings, "thanks", "next", "lgtm"), with trailing
# punctuation allowed.
_TRIVIAL = re.compile(
    r"(hi|hello|hey|yes|no|ok|okay|sure|thanks|thank you|thx|ty|y|n|yep|nope|yeah|nah|continue|"
    r"go ahead|do it|proceed|got it|cool|nice|great|done|next|lgtm|k)[\s.!?,;:…]*", re.IGNORECASE)


def is_trivial_prompt(text: str) -> bool:
    """Whether `text` is empty, a slash command, or a bare acknowledgement ("ok", "thanks!");
    anything but text has nothing to recall for either."""
    if not isinstance(text, str):
        return True
    stripped = text.strip()
    return not stripped or stripped.startswith("/") or bool(_TRIVIAL.fullmatch(stripped))


def host_threads(provider) -> "Threads":
    """How the engine under `provider` starts its threads: with the host's own spawner where
    Hermes has one (0.23: `spawn_context_thread` and `ctx_bound`, on the MemoryProvider ABC or
    in agent.memory_provider), else in a copy of the caller's context, which carries the profile
    as Hermes keeps it (`HERMES_HOME`'s override and the secret scope are context variables from
    0.19 on)."""
    from ..common.threads import Threads, bind_to_context, spawn_in_context

    try:
        import agent.memory_provider as api
    except ImportError:
        api = None
    spawn = getattr(provider, "spawn_context_thread", None) or getattr(api, "spawn_context_thread", None)
    bind = getattr(provider, "ctx_bound", None) or getattr(api, "ctx_bound", None)
    return Threads(spawn if callable(spawn) else spawn_in_context, bind if callable(bind) else bind_to_context)
