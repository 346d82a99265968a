"""Steering by hand: a memory of one scope corrected, pinned, retagged, or forgotten with a
preview of everything that goes with it. Each goes through the same checks, redaction and audit
as every other write; an id of another scope is answered as a missing one."""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Sequence

from ..common.checks import MAX_TAGS, scope_of, tags_of
from ..common.errors import InvalidInput, UnknownMemory
from ..common.plugins import run_redactors
from ..common.text import Key, brief, clean, clean_key
from ..common.answers import ITEM_KEYS
from ..recall.shape import memory_dict
from ..retain import admission
from ..store.models import Memory
from . import _rows

if TYPE_CHECKING:
    from ..engine import Engine

SHOWN_KEYS = (*ITEM_KEYS, "pinned")  # a memory as a preview lists it
MAX_ACTOR_CHARS = 200
MAX_IDS = 1000  # most memories one preview or one forget of a selection names


def correct(engine: "Engine", scope: str, memory_id: str, text: str, *, actor: str) -> str:
    """Store `text` as a new memory of the same tier, kind, role, session and tags that
    supersedes the memory `memory_id` (kept, marked corrected: it was wrong, so recall never
    shows it again); return the new id. The text is redacted and bounded like any note; the new
    memory is queued for indexing (the outbox); a 'correct' event names both; all in the one
    transaction of the write. A pinned memory's correction is pinned. A belief is corrected by
    holding the right one (set_belief)."""
    scope, actor = scope_of(scope), _actor(actor)
    old = _found(engine, scope, memory_id)
    if old.superseded_by:
        raise InvalidInput(f"Memory {memory_id!r} was already replaced by {old.superseded_by!r}; correct that one.")
    if old.kind == "belief":
        raise InvalidInput("A belief is corrected by holding the right one in its place (set_belief with "
                           "supersedes); nothing was changed.")
    if isinstance(text, str) and clean(text).strip() == old.content:
        raise InvalidInput("The correction reads as the memory already does; nothing was changed.")
    ttl = max(1.0, old.expires_at - time.time()) if old.expires_at else None
    new = admission.store_note(engine, Key(scope), text, kind=old.kind, tier=old.tier, role=old.role,
                               tags=json.loads(old.tags or "[]"), source=f"{actor}:correct",
                               session_id=Key(old.session_id) if old.session_id else None, ttl_seconds=ttl,
                               supersedes=[old.id], judge=False, dedup=False, corrects=True)
    return new.id


def pin(engine: "Engine", scope: str, memory_id: str, pinned: bool = True, *, actor: str) -> bool:
    """Pin (or unpin) a memory: a pinned one never decays, never expires and is never
    consolidated. Return whether it is pinned now."""
    if not isinstance(pinned, bool):
        raise InvalidInput(f"pinned must be true or false, not {pinned!r}.")
    scope, actor, key = scope_of(scope), _actor(actor), _id(memory_id)
    if _rows.set_pinned(engine.store, scope, key, pinned, actor) is None:
        raise _missing(memory_id)
    return pinned


def tag(engine: "Engine", scope: str, memory_id: str, add: Sequence[str] = (), remove: Sequence[str] = (), *,
        actor: str) -> list[str]:
    """Add the tags `add` to a memory and remove `remove` (each checked as every door's tags
    are, and redacted as a note's); return its tags now."""
    scope, actor, key = scope_of(scope), _actor(actor), _id(memory_id)
    add, remove = (tuple(run_redactors(engine.pm, t, scope) for t in tags_of(given)) for given in (add, remove))
    if not add and not remove:
        raise InvalidInput("Name a tag to add or to remove; nothing was changed.")
    try:
        tags = _rows.retag(engine.store, scope, key, add, remove, actor, MAX_TAGS)
    except ValueError as exc:
        raise InvalidInput(f"A memory carries at most {MAX_TAGS} tags, not {exc.args[0]}; nothing was changed.") from None
    if tags is None:
        raise _missing(memory_id)
    return tags


def forget_preview(engine: "Engine", scope: str, memory_ids: Sequence[str]) -> dict:
    """Everything forgetting `memory_ids` would delete, computed by the forget's own plan
    without changing anything: the memories, those that go with them (`cascaded`, each with
    its `reason`), and the counts of facts, links, beliefs, evidence, graph relations, entities
    only they support, vectors (one per memory), messages embedded again without their
    context (`reembedded`), memories current again (`restored`) and audit snapshots kept."""
    scope, keys = scope_of(scope), _ids(memory_ids)
    found = _rows.forget_preview(engine.store, scope, keys)
    if isinstance(found, str):
        raise _missing(found)
    return {**found, "memories": [memory_dict(m, SHOWN_KEYS) for m in found["memories"]],
            "cascaded": [memory_dict(m, SHOWN_KEYS, reason=why) for m, why in found["cascaded"]]}


def forget_many(engine: "Engine", scope: str, memory_ids: Sequence[str], *, actor: str) -> int:
    """Forget the memories `memory_ids` (all of this scope, or none: a missing id is refused
    before anything is deleted) with all that goes with them; return how many were asked and
    forgotten (what went with them is not counted)."""
    scope, actor, keys = scope_of(scope), _actor(actor), _ids(memory_ids)
    missing = next((k for k in keys if _rows.steerable(engine.store, scope, k) is None), None)
    if missing is not None:
        raise _missing(missing)
    return len(engine.store.delete_where(scope, ids=keys, actor=actor))


def _found(engine: "Engine", scope: str, memory_id: str) -> Memory:
    memory = _rows.steerable(engine.store, scope, _id(memory_id))
    if memory is None:
        raise _missing(memory_id)
    return memory


def _missing(memory_id) -> UnknownMemory:
    """The one answer for an id that is not in the scope (missing, or of another scope)."""
    return UnknownMemory(f"No memory {brief(str(memory_id), 80)!r} in this scope.")


def _id(memory_id) -> str:
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidInput("A memory id must be a non-empty string.")
    return clean_key(memory_id.strip())


def _ids(memory_ids) -> list[str]:
    """The ids as stored, each once, in the order given: 1 to MAX_IDS of them."""
    if isinstance(memory_ids, str) or not isinstance(memory_ids, (list, tuple)) or not memory_ids:
        raise InvalidInput("Name the memories as a list of 1 or more ids.")
    if len(memory_ids) > MAX_IDS:
        raise InvalidInput(f"At most {MAX_IDS:,} memories at a time, not {len(memory_ids):,}.")
    return list(dict.fromkeys(_id(i) for i in memory_ids))


def _actor(actor) -> str:
    """Who acts, as the audit trail records it (redacted there)."""
    if not isinstance(actor, str) or not clean(actor).strip():
        raise InvalidInput("Name who acts (the actor, e.g. 'cli' or 'ui').")
    return clean(actor).strip()[:MAX_ACTOR_CHARS]
