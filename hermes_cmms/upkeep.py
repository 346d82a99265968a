"""What keeps a store well, and what moves it: the facade's verbs for operators and for the
processes around the engine, apart from the verbs a user's memory is read and written with.

`MemoryService.upkeep` sweeps, decays, consolidates every scope, audits and repairs, waits for the
vector index, holds the store's leases, counts tool calls and flushes sessions left open;
`MemoryService.transfer` exports and imports; `MemoryService.copies` is what the Hermes door's
mirror of MEMORY.md / USER.md reads. Each is built once with its service and calls its features.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterator, Optional, Sequence

from .common.answers import Item
from .common.checks import scope_of as _scope
from .common.text import Key, clean, clean_key
from .recall import shape
from .redact import redact_text

log = logging.getLogger(__name__)

HISTORY_BATCH = 1000  # imported user turns the scheduler's learn job reads a run (one a sweep interval)
FORGET_STALLED_S = 60  # a forget --all with no batch for this long was interrupted: the sweep finishes it


class _Part:
    """One group of the facade's verbs, over the parts of its service."""

    def __init__(self, service):  # the facade (service.py, the floor above: not imported)
        self.service, self.engine = service, service.engine
        self.settings, self.store, self.indexer = service.settings, service.store, service.indexer


class Upkeep(_Part):
    """Maintenance, health and the processes around the engine."""

    def vectors_pending(self, scope: str) -> int:
        """How many forgotten memories of `scope` still have vectors in the vector index: their
        removal is queued in SQL (the outbox), so it happens even if this process exits now, as
        soon as a process that writes the index (this one, the gateway, a bridge, the next
        command that loads the index) gets to it. 0 in a keyword-only process where there is
        no vector index was ever written (one written before the embedder was turned off still
        holds them)."""
        indexer = self.indexer
        if indexer.ready.is_set() and indexer.embedder is None and indexer.error is None and not self._has_index():
            return 0  # keyword-only by choice, and no index to remove them from
        return self.store.deletes_queued(_scope(scope))

    def _has_index(self) -> bool:
        """Whether a vector index holds any of this store's vectors: some process has written it
        (the generation it counts in SQL has moved), embedded or on a Chroma server."""
        return self.store.index_generation() > 0

    def sweep(self, now: Optional[float] = None) -> int:
        """Delete working memories past their expiry time; return how many. Also finish any
        forget --all that stopped (its process died) and drop the content of forget snapshots
        older than the `snapshot_days` setting."""
        now = time.time() if now is None else now
        for scope, actor in self.store.unfinished_forgets(now - FORGET_STALLED_S):
            self.service.forget_all(Key(scope), actor or "cmms:sweep")  # a forget --all that was interrupted
        self.store.blank_snapshots(now - self.settings.snapshot_days * 86400)
        gone = sum(len(self.store.delete_where(scope, ids=ids, now=now, action="expire", actor="cmms:sweep"))
                   for scope, ids in self.store.expired(now).items())
        if gone:
            self.indexer.notify()
        return gone

    def decay(self, now: Optional[float] = None) -> dict:
        """Age every lasting memory to `now`: confidence decays, states move on (stale,
        archived); every move is a lifecycle event on the audit trail."""
        changed, moved = self.store.age(time.time() if now is None else now)
        return {"updated": changed, "transitions": moved}

    def consolidate_all(self, now: Optional[float] = None) -> dict:
        """Consolidate every scope with episodic memories not looked at yet."""
        self.indexer.drain(30.0)
        clusters, failed = 0, []
        for scope in self.store.unconsolidated_scopes():
            try:
                clusters += self.service.consolidate(Key(scope), actor="cmms:scheduler").clusters  # a stored key
            except Exception as exc:  # noqa: BLE001 - one broken scope does not stop the others
                log.warning("hermes-cmms: consolidating %s failed: %s", scope, exc)
                failed.append(scope)
        return {"clusters": clusters, "failed_scopes": len(failed)}

    def record_call(self, door: str, tool: str, scope: Optional[str], ok: bool, error: str = "") -> None:
        """Put a tool call on the audit trail; never fails the call itself. A tool name that is
        not text (any caller can send anything to the Hermes door) is recorded as "unknown"."""
        try:
            self.store.record("tool", clean(door), clean_key(scope) if isinstance(scope, str) else None,
                              tool=clean(tool) if isinstance(tool, str) else "unknown", ok=ok, **({"error": _error_text(error)} if error else {}))
        except Exception as exc:  # noqa: BLE001
            log.warning("hermes-cmms: could not audit the %s call: %s", tool, exc)

    def flush_open_sessions(self, scope: Optional[str] = None, session_id: Optional[str] = None) -> int:
        """Flush every unflushed session matching the filters (a scope and a session id as the
        store keys them); return how many."""
        sessions = self.store.unflushed_sessions(scope=clean_key(scope), session_id=clean_key(session_id))
        for session_scope, sid in sessions:
            self.service.flush_session(Key(session_scope), Key(sid))  # stored keys: not made again
        return len(sessions)

    def recent_recalls(self, scope: Optional[str] = None, limit: int = 10) -> list[dict]:
        """The newest recall events (of `scope`, or of every scope): ids and ranks only."""
        from .recall import history

        return history.recent_recalls(self.engine, scope, limit)

    def extract_session(self, scope: str, session_id: str) -> int:
        """Learn from a session's user turns not read yet; return how many items were stored."""
        from .knowledge.learn import extract_session

        return extract_session(self.engine, _scope(scope), clean_key(session_id))

    def learn_history(self, limit: Optional[int] = None,
                      progress: Optional[Callable[[int, int], None]] = None,
                      stop: Optional[Callable[[], bool]] = None) -> dict:
        """Learn from the user turns of imported conversations not read yet, at most `limit`
        turns, oldest conversation first, a claim of CLAIM_TURNS at a time (`progress(done,
        total)` in turns after each; the run ends between two claims once `stop()` is true):
        {"sessions", "turns", "learned", "waiting", "waiting_turns"}."""
        from .knowledge.learn import learn_history

        return learn_history(self.engine, limit, progress, stop)

    def audit(self, audit_type: str = "full", scope: Optional[str] = None) -> dict:
        """Health checks on the stored data (orphans, receipts, lifecycle, confidence, drift)."""
        from .ops import audit

        return audit.run(self.engine, audit_type, _scope(scope) if scope is not None else None)

    def reindex(self, scope: Optional[str] = None, progress: Optional[Callable[[int], None]] = None,
                claim: bool = False) -> dict:
        """Repair drift: vectors re-queued or removed, orphans deleted, the graph rebuilt
        (`progress(outbox rows left)` while it waits for the indexer). `claim`: make the Chroma
        server's database this store's first, whatever store it named (this one replaces it)."""
        from .ops import audit

        return audit.reindex(self.engine, _scope(scope) if scope is not None else None, progress=progress,
                             claim=claim)

    def lease(self, name: str, owner: str, seconds: float) -> bool:
        """Take or renew the store's lease `name` for `owner`; False while another holds it."""
        return self.store.lease(owner, seconds, time.time(), name=name)

    def release_lease(self, name: str, owner: str) -> None:
        self.store.release_lease(owner, name=name)

    def drain(self, timeout: float, progress: Optional[Callable[[int], None]] = None) -> int:
        """Wait up to `timeout` seconds for the vector index to catch up with the store
        (`progress(outbox rows left)` about every half second while it waits)."""
        return self.indexer.drain(timeout, progress)

    def wait_vectors(self, timeout: float, *, read_only: bool = False) -> bool:
        """Start the embedder and the vector index if not started; wait up to `timeout` for them.
        `read_only`: this process only queries the index (a command that searches): it never
        writes it, so the vectors queued for the index are left to the process that does."""
        if read_only:
            self.indexer.read_only()
        return self.indexer.ready.wait(timeout)

    @property
    def index_writer(self) -> bool:
        """Whether this process writes the vector index (the others read it)."""
        return self.indexer.writer

    def tool_call(self, door: str, tool: str, scope: Optional[str] = None):
        """A context manager that counts, times and traces one tool call (ops.metrics)."""
        return self.service.metrics.tool_call(door, tool, scope)

    def exposition(self, scope: Optional[str] = None) -> str:
        """Prometheus metrics in the text format, of the whole store or of `scope` only."""
        from .ops.metrics import exposition

        return exposition(self.service, _scope(scope) if scope is not None else None)

    def rebuild_graph(self, scope: Optional[str] = None) -> dict:
        """Rebuild the entity graph of `scope` (None: every scope) from its facts."""
        from .knowledge import graph

        return graph.rebuild(self.engine, scope)


class Transfer(_Part):
    """Exports and imports, of our own file and of other tools' (docs/backup.md, docs/import.md)."""

    def export(self, scope: str, actor: str = "") -> Iterator[dict]:
        """The header, then every record of `scope` (see ops.transfer.export_scope)."""
        from .ops.transfer import export_scope

        return export_scope(self.engine, scope, actor=actor)

    def export_open(self, scope: str, fmt: str, directory=None, actor: str = ""):
        """`scope` in an open format: memory-json's lines, or markdown notes written into
        `directory` (see ops.formats._exports)."""
        from .ops.formats._exports import export_open

        return export_open(self.engine, scope, fmt, directory, actor=actor)

    def import_file(self, path, **kwargs) -> dict:
        """Import an export file (see ops.transfer.import_file)."""
        from .ops.transfer import import_file

        return import_file(self.engine, path, **kwargs)

    def import_records(self, records, **kwargs) -> dict:
        """Import export records from lines or a stream (see ops.transfer.import_records)."""
        from .ops.transfer import import_records

        return import_records(self.engine, records, **kwargs)

    def import_foreign(self, path, **kwargs) -> dict:
        """Import another tool's file, or only say what it would add (see
        ops.formats.run.import_foreign)."""
        from .ops.formats.run import import_foreign

        return import_foreign(self.engine, path, **kwargs)

    def import_formats(self) -> list[str]:
        """The names of the formats `import_foreign` reads."""
        from .ops.formats import READERS

        return sorted(READERS)


class Copies(_Part):
    """The Hermes door's mirror of its built-in memory files: the copies it owns in a scope."""

    def containing(self, scope: str, fragment: str, sources: Sequence[str]) -> list[Item]:
        """The scope's current memories from `sources` whose stored text holds `fragment` as it
        would be stored (cleaned and redacted)."""
        scope = _scope(scope)
        found = self.store.containing(scope, self.as_stored(scope, fragment), [clean(s) for s in sources])
        return shape.items(self.store, scope, found)

    def as_stored(self, scope: str, text: str) -> str:
        """`text` as a memory of `scope` would hold it: cleaned, then every redactor run."""
        from .common.plugins import run_redactors

        return run_redactors(self.engine.pm, clean(text), scope)

    def file_copies(self, scope: str, source: str, tool_source: str, tag: str) -> list:
        """The scope's current copies of one file's entries, oldest first (id, content,
        content_hash, owned): written with receipt `source`, or by `tool_source` tagged `tag`
        (`owned`: these a mirror may edit or forget), or reinforced by a write from `source`."""
        from .store import copies

        return copies.current(self.store, _scope(scope), copies.Owner(source, tool_source, tag))

    def copy_chain(self, scope: str, memory_id: str, source: str, tool_source: str, tag: str) -> list[str]:
        """`memory_id` and the owned copies it superseded, directly or not (see file_copies)."""
        from .store import copies

        return copies.chain(self.store, _scope(scope), clean_key(memory_id), copies.Owner(source, tool_source, tag))


def _error_text(error: str) -> str:
    """A tool error as audited: redacted before it is cut to 300 characters, so no cut can
    leave a secret's head that the redactor no longer recognises."""
    return redact_text(clean(error[:2000]))[:300]
