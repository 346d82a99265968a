"""The hermes-cmms hook specifications.

Hooks are called with keyword arguments; an implementation may accept any subset of them.
Arguments are only ever added, never renamed. hermes-cmms' own behaviour (auto-recall,
auto-retain, session flush, secret redaction, knowledge extraction) is implemented with these
same hooks.

`service` is the facade (`hermes_cmms.MemoryService`), the published way in for plugins.
`engine` is the parts behind it (`hermes_cmms.engine.Engine`), which the built-in
implementations work on so that a call passes through the facade once; its attributes are
internal and may change between releases.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("hermes_cmms")
hookimpl = pluggy.HookimplMarker("hermes_cmms")


@hookspec
def redact(text, scope):
    """Remove secrets from `text` before anything is stored.

    Fires for every text about to be retained, on the caller's thread. Implementations run in
    turn, each receiving the previous one's output. Return the redacted text, or None to leave
    it unchanged.
    """


@hookspec
def retain(service, scope, session_id, items, turn_of, engine):
    """Store already-redacted memories durably.

    Fires on the caller's thread for every write (conversation turns, tool calls, Hermes'
    memory writes, delegation results, imports: a batch of imported memories, each with its
    `row`). `items` is a list of `hermes_cmms.NewMemory`;
    `turn_of` is (scope, session_id) when the items are one conversation turn, else None.
    Return the list of memory ids written, or None if this implementation wrote nothing.
    The built-in auto-retain writes the rows and queues them for background indexing.
    """


@hookspec(firstresult=True)
def recall(service, scope, query, budget_tokens, session_id, seen, engine, prepared, kind):
    """Build the memory text injected before a turn.

    Fires once per user turn (Hermes' prefetch) and for explicit recall calls. `seen` is the
    set of memory ids already injected into this conversation (Hermes re-sends every earlier
    block), or None when the caller does not track them: skip those ids and add the ones you
    inject. `prepared` is None, or the engine's own ranking of this very query when the caller
    has searched already (MCP get_context): the built-in packs the block from it instead of
    searching again; a plugin may ignore it. `kind` says what the block is for: "turn", in front
    of the model for this turn (Hermes' prefetch, a recall call), or "summary", for the summary
    of a conversation Hermes compacts; the built-in records it with the recall event, so history
    shows what each turn was given and no turn that did not happen. Return the text to inject (already fitted to
    `budget_tokens`), "" for nothing relevant, or None to defer to the next implementation.
    The first non-None result wins; the built-in auto-recall runs last (trylast).
    """


@hookspec
def session_flush(service, scope, session_id, engine):
    """Close out a conversation session.

    Fires at every session boundary Hermes reports (provider on_session_end, session switch,
    on_session_finalize, gateway session:end / session:reset). It can fire several times for
    one session and race the session's last turn, so implementations must be idempotent.
    Return value is ignored.
    """


@hookspec
def extract(text, scope, role):
    """Find knowledge (facts, preferences, decisions, skills, beliefs) in one message.

    Fires at a session flush (never inside a turn), once for each of the session's user
    messages not read yet, and once for each text passed to `learn`. `text` is already
    redacted; `scope` is its tenancy scope; `role` says whose words they are ("user").
    Every implementation runs and their items are pooled (exact duplicates, same kind and
    text, are dropped; an item whose parts are malformed, or an implementation that raises,
    is logged and skipped). Return a list of `hermes_cmms.knowledge.extract.Item`, or None for
    nothing. The built-in auto-extract applies hermes_cmms.knowledge.extract's whole-word rules.
    """
