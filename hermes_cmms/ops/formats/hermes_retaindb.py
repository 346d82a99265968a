"""The bundled RetainDB provider's local queue (`retaindb_queue.db` in a Hermes home): the turns
it had not yet sent to its service (it deletes a row once sent; what was sent lives in
RetainDB's cloud, out of reach offline). One session per Hermes session id, each turn's user
and assistant messages at the time they were queued, into the scope the cmms provider gives
that session's user: found in the home's state.db (platform and user), the profile's owner
(RetainDB's user "default") into the profile's scope. A gateway user's turn whose session
state.db does not name is skipped: its platform, and so its scope, is not known, and guessing
could put one user's words in another's memory. Shape: the provider's `_WriteQueue` (table
`pending`: user_id, session_id, messages_json = [{"role", "content", "timestamp"}], created_at)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from ...common.scopes import local_scope, scope_for
from . import _hermes_files as hermes_files
from . import Skipped, memory, session, timestamp

NAME = "hermes-retaindb"
OWNER = "default"  # the user id RetainDB gives the profile's owner (no user_id from Hermes)


def sniff(path: Path) -> bool:
    return path.is_file() and "pending" in hermes_files.tables(path) and hermes_files.has_columns(
        path, "pending", ("user_id", "session_id", "messages_json"))


def records(path: Path, *, scope: str) -> Iterator[Any]:
    home = path.resolve().parent
    profile = local_scope(home).split(":", 1)[1]
    owners = hermes_files.session_owners(home / "state.db")
    sessions: dict[tuple[str, str], list] = defaultdict(list)
    with hermes_files.copy_of(path) as conn:
        for row in hermes_files.retaindb_queued(conn):
            where = f"queued turn {row['id']}"
            sid, user = str(row.get("session_id") or ""), str(row.get("user_id") or OWNER)
            owner = owners.get(sid)
            if owner is not None:
                turn_scope = scope_for(owner.get("source") or "cli", owner.get("user_id"), profile,
                                       str(owner.get("session_key") or owner.get("chat_id") or sid))
            elif user == OWNER:
                turn_scope = f"local:{profile}"
            else:
                yield Skipped("a gateway user's turn whose platform state.db does not name", where)
                continue
            messages = _messages(row.get("messages_json"))
            if not messages:
                yield Skipped("a queued turn without a message to keep", where)
                continue
            sessions[(turn_scope, sid or f"queued-{row['id']}")].append((row, messages))
    for (turn_scope, sid), turns in sessions.items():
        first = timestamp(turns[0][0].get("created_at"))
        yield session(NAME, (turn_scope, sid), started_at=first, turns=len(turns), scope=turn_scope, known_as=sid)
        for number, (row, messages) in enumerate(turns, 1):
            for index, (role, text, when) in enumerate(messages):
                yield memory(NAME, (turn_scope, sid, row["id"], index), text,
                             original=f"retaindb:queue/{row['id']}/{index}",
                             created_at=timestamp(when) or timestamp(row.get("created_at")), role=role,
                             turn=number, conversation=(turn_scope, sid), tags=("hermes-retaindb",), scope=turn_scope)


def _messages(raw: Any) -> list[tuple[str, str, Any]]:
    """(role, text, time) of the user's and the assistant's messages of a queued turn."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    return [(m["role"], m["content"].strip(), m.get("timestamp")) for m in value if isinstance(m, dict)
            and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
            and m["content"].strip()] if isinstance(value, list) else []
