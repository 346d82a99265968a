"""Mirror Hermes' built-in memory files (MEMORY.md, USER.md) and an inbox folder into a scope.

The store is the state: a sync reads each file, reads the scope's current mirrored memories
back from SQL and writes only the difference (an edit supersedes, a removal forgets), so it
is idempotent and safe to run after any restart. A watchdog observer only schedules work;
one worker thread does it, debounced per file.
"""
from __future__ import annotations

import difflib
import logging
import os
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Optional

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ..common.shared import Shared
from ..common.threads import IN_CONTEXT, Threads
from ..common.errors import CmmsError
from ..common.text import content_hash

log = logging.getLogger(__name__)

MEMORY_FILES = {"MEMORY.md": "hermes-memory", "USER.md": "hermes-user"}  # name -> memory-tool tag
ENTRY_DELIMITER = "\n§\n"  # as Hermes' tools/memory_tool.py writes it
SOURCE_PREFIX = "hermes:file:"
MEMORY_TOOL_SOURCE = "hermes:memory-tool"  # what the provider's on_memory_write stores
ACTOR = "cmms:mirror"
PAIR_RATIO = 0.5  # a removed and an added entry at least this alike are one edit
INBOX_SUFFIXES = (".md", ".txt")
MAX_INBOX_BYTES = 1024 * 1024
MAX_WAIT = 10  # a burst of events delays a sync by at most this many debounce periods
WATCHED = {"created", "modified", "moved", "deleted", "closed"}  # not our own opens and reads
LEASE = "mirror:"  # + the scope: one process at a time mirrors into a scope (a gateway and a CLI share a home)
LEASE_S = 60.0  # a holder that stops renewing loses it after this long (renewed every LEASE_S / 3)


def hermes_entries(service, scope: str, fragment: str, keep: str = "") -> list[str]:
    """Ids of the scope's current copies of Hermes' built-in memory entries (written by its
    memory tool or mirrored from MEMORY.md / USER.md) holding `fragment`, except one whose
    text is `keep`: what a `replace` of that entry supersedes."""
    if not isinstance(fragment, str) or not fragment.strip():
        return []
    sources = [MEMORY_TOOL_SOURCE, *(SOURCE_PREFIX + name for name in MEMORY_FILES)]
    kept = service.copies.as_stored(scope, keep).strip() if keep else None
    found = service.copies.containing(scope, fragment, sources)
    return [m.id for m in found if m.content.strip() != kept]


class _Events(FileSystemEventHandler):
    """Runs on watchdog's thread: only tells the mirror which paths changed."""

    def __init__(self, mirror: "Mirror"):
        self.mirror = mirror

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in WATCHED:
            return
        try:
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    self.mirror._changed(Path(os.fsdecode(raw)))
        except Exception as exc:  # noqa: BLE001 - the observer thread must live on
            log.warning("hermes-cmms mirror: event %s not handled: %s", event, exc)


class Mirror:
    """Keeps `scope` in step with `home/memories/{MEMORY,USER}.md` and learns inbox files."""

    def __init__(self, service, home: Path, scope: str, inbox: Optional[Path] = None,
                 debounce: float = 0.3, lease_s: float = LEASE_S, threads: Threads = IN_CONTEXT):
        self.service = service
        self.threads = threads
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease_s = lease_s
        self.holding = False  # whether this mirror holds the store's mirror lease
        self.scope = scope
        self.memories = Path(home).expanduser().resolve() / "memories"
        self.inbox = Path(inbox).expanduser().resolve() if inbox else None
        self.debounce = debounce
        self.syncs: Counter = Counter()  # reconciliation passes run, per file name
        self._due: dict = {}  # key -> (first scheduled, due) on the monotonic clock
        self._sizes: dict[Path, tuple[int, int]] = {}  # inbox file -> (size, mtime) last seen
        self._cond = threading.Condition()
        self._work = threading.RLock()  # one sync at a time, whichever thread asks
        self._stop = threading.Event()
        self._observer: Optional[Observer] = None
        self._worker: Optional[threading.Thread] = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "Mirror":
        """Watch the folders, then reconcile once (changes made while stopped are caught up)."""
        self.memories.mkdir(parents=True, exist_ok=True)
        if self.inbox:
            self.inbox.mkdir(parents=True, exist_ok=True)
        self._stop.clear()
        self._observer = Observer()
        self._observer.daemon = True
        handler = _Events(self)
        for folder in {self.memories, self.inbox} - {None}:
            self._observer.schedule(handler, str(folder), recursive=False)
        self._observer.start()
        self._worker = self.threads.start(self._run, "cmms-mirror")  # (watchdog's threads only say what changed)
        self._take_over()
        return self

    def _take_over(self) -> None:
        """Take or renew the store's mirror lease; on taking it, catch up with one full sync
        (another process held it until now, or nobody did)."""
        try:
            held = self.service.upkeep.lease(LEASE + self.scope, self.owner, self.lease_s)
        except Exception as exc:  # noqa: BLE001 - e.g. the database is busy: try at the next tick
            log.warning("hermes-cmms mirror: lease not renewed: %s", exc)
            held = False
        taken, self.holding = held and not self.holding, held
        if taken:
            try:
                self.sync()
            except Exception as exc:  # noqa: BLE001 - the next change tries again
                log.warning("hermes-cmms mirror: catching up failed: %s", exc)

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop watching; True when both threads ended within `timeout` seconds."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(max(0.0, deadline - time.monotonic()))
        if self._worker is not None:
            self._worker.join(max(0.0, deadline - time.monotonic()))
        alive = any(t is not None and t.is_alive() for t in (self._observer, self._worker))
        self._observer = self._worker = None
        if self.holding and not alive:
            try:
                self.service.upkeep.release_lease(LEASE + self.scope, self.owner)
            except Exception as exc:  # noqa: BLE001 - it expires on its own
                log.warning("hermes-cmms mirror: lease not released: %s", exc)
            self.holding = False
        return not alive

    def __enter__(self) -> "Mirror":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- scheduling -----------------------------------------------------------------------

    def _changed(self, path: Path) -> None:
        if path.parent == self.memories and path.name in MEMORY_FILES:
            self._schedule(("file", path.name), self.debounce)
        elif self.inbox and path.parent == self.inbox and _inbox_name(path.name):
            self._schedule(("inbox", path), self.debounce)

    def _schedule(self, key: tuple, delay: float) -> None:
        now = time.monotonic()
        with self._cond:
            first = self._due.get(key, (now, now))[0]
            self._due[key] = (first, min(now + delay, first + MAX_WAIT * max(delay, 0.01)))
            self._cond.notify()

    def _next(self) -> list:
        """Wait for the keys that are due; [] at the next lease tick or once stopping."""
        tick = time.monotonic() + self.lease_s / 3
        with self._cond:
            while not self._stop.is_set():
                now = time.monotonic()
                due = [key for key, (_, at) in self._due.items() if at <= now]
                if due:
                    for key in due:
                        del self._due[key]
                    return due
                if now >= tick:
                    return []
                wait = min((at for _, at in self._due.values()), default=tick) - now
                self._cond.wait(max(min(wait, tick - now), 0.001))
            return []

    def _run(self) -> None:
        while not self._stop.is_set():
            due = self._next()
            self._take_over()
            for kind, what in due if self.holding else ():  # else the holder's watcher syncs
                if self._stop.is_set():
                    return
                self._take_over()  # renewed before each piece of work (an inbox learn can be slow)
                if not self.holding:
                    break
                try:
                    with self._work:
                        self._reconcile(what) if kind == "file" else self._check_inbox(what)
                except Exception as exc:  # noqa: BLE001 - logged; the next event retries
                    log.warning("hermes-cmms mirror: %s failed: %s", what, exc)

    # -- memory files ---------------------------------------------------------------------

    def sync(self) -> dict:
        """One reconciliation pass over both memory files and the inbox; what it did."""
        with self._work:
            report = {name: self._reconcile(name) for name in MEMORY_FILES}
            if self.inbox and self.inbox.is_dir():
                checked = [(p.name, self._check_inbox(p)) for p in sorted(self.inbox.iterdir())
                           if p.is_file() and _inbox_name(p.name)]
                report["inbox"] = {name: outcome for name, outcome in checked}
            return report

    def _reconcile(self, name: str) -> dict:
        """Bring the scope's memories of file `name` in line with the file's entries."""
        self.syncs[name] += 1
        entries = self._entries(name)
        rows = self._mirrored(name)
        unchanged = set(entries) & {r.content_hash for r in rows}
        added = [(h, text) for h, text in entries.items() if h not in unchanged]
        removed = [r for r in rows if r.content_hash not in entries and r.owned]
        pairs = _pair(removed, added)
        done = {"unchanged": len(unchanged), "added": 0, "edited": 0, "forgotten": 0}
        for old, (_, text) in pairs:
            done["edited"] += self._store(name, text, old)
        paired = {id(old) for old, _ in pairs} | {id(new) for _, new in pairs}
        for old in removed:
            if id(old) not in paired:
                done["forgotten"] += self._forget(name, old.id)
        for new in added:
            if id(new) not in paired:
                done["added"] += self._store(name, new[1])
        return done

    def _entries(self, name: str) -> dict[str, str]:
        """The file's entries as they would be stored, by content hash; {} when it is gone."""
        try:
            raw = (self.memories / name).read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return {}
        entries = {}
        for part in raw.replace("\r\n", "\n").split(ENTRY_DELIMITER):
            text = part.strip()
            if text:
                stored = self.service.copies.as_stored(self.scope, text)
                entries.setdefault(content_hash(stored), text)
        return entries

    def _owner(self, name: str) -> tuple[str, str, str]:
        """Who writes the copies of file `name` the mirror may edit or forget: the mirror
        itself, and the provider's on_memory_write (tagged with the file's memory-tool tag)."""
        return SOURCE_PREFIX + name, MEMORY_TOOL_SOURCE, MEMORY_FILES[name]

    def _mirrored(self, name: str) -> list:
        """The scope's current memories of file `name`, including any the mirror found already
        stored (and so reinforced, leaving its receipt) instead of inserting."""
        return self.service.copies.file_copies(self.scope, *self._owner(name))

    def _store(self, name: str, text: str, old=None) -> int:
        """Store an added entry (superseding `old`, an edit); 1 if stored."""
        try:
            item = self.service.store_note(
                self.scope, text, kind="note", tier="semantic", source=SOURCE_PREFIX + name,
                tags=["memory-file", name], supersedes=[old.id] if old else [], judge=False)
        except CmmsError as exc:  # e.g. nothing but a secret: retried (and refused) next sync
            log.info("hermes-cmms mirror: an entry of %s was not stored: %s", name, exc)
            return 0
        if old is not None and item.reinforced:  # the new text was already a memory: the old goes
            self._forget(name, old.id)
        return 1

    def _forget(self, name: str, memory_id: str) -> int:
        """Forget a removed entry and the older versions it superseded (else they would be
        current again); 1 if it was forgotten."""
        chain = self.service.copies.copy_chain(self.scope, memory_id, *self._owner(name))
        gone = 0
        for old in reversed(chain):  # oldest first: nothing is current again in between
            try:
                self.service.forget(self.scope, old, actor=ACTOR)
                gone += old == memory_id
            except CmmsError as exc:  # already forgotten elsewhere
                log.info("hermes-cmms mirror: %s", exc)
        return gone

    # -- inbox ----------------------------------------------------------------------------

    def _check_inbox(self, path: Path) -> str:
        """Learn an inbox file once its size and time are the same on two checks in a row."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            self._sizes.pop(path, None)
            return "gone"
        seen = (stat.st_size, stat.st_mtime_ns)
        if self._sizes.get(path) != seen or not stat.st_size:
            self._sizes[path] = seen
            if stat.st_size:  # an empty file waits for its next write event
                self._schedule(("inbox", path), self.debounce)
            return "waiting"
        del self._sizes[path]
        if stat.st_size > MAX_INBOX_BYTES:
            log.warning("hermes-cmms mirror: %s is over %d bytes; moved to rejected/",
                        path.name, MAX_INBOX_BYTES)
            return _move(path, "rejected")
        text = path.read_bytes().decode("utf-8", errors="replace")
        try:
            self._learn(text, f"inbox:{path.name}")
        except CmmsError as exc:
            log.warning("hermes-cmms mirror: %s not learned (%s); moved to rejected/", path.name, exc)
            return _move(path, "rejected")
        return _move(path, "processed")

    def _learn(self, text: str, source: str) -> None:
        self.service.learn(self.scope, text, source=source)


def _inbox_name(name: str) -> bool:
    return not name.startswith(".") and name.lower().endswith(INBOX_SUFFIXES)


def _move(path: Path, folder: str) -> str:
    """Move an inbox file into inbox/<folder>/, numbering it when the name is taken."""
    target_dir = path.parent / folder
    target_dir.mkdir(exist_ok=True)
    target, n = target_dir / path.name, 1
    while target.exists():
        target, n = target_dir / f"{path.stem}-{n}{path.suffix}", n + 1
    path.rename(target)
    return folder


def _pair(removed: list, added: list) -> list[tuple]:
    """Edits: removed and added entries paired by similarity, best pairs first; a single
    removed and a single added entry left over are one rewritten entry."""
    scored = []
    for old in removed:
        for new in added:
            matcher = difflib.SequenceMatcher(None, old.content, new[1], autojunk=False)
            if matcher.real_quick_ratio() >= PAIR_RATIO and matcher.quick_ratio() >= PAIR_RATIO:
                ratio = matcher.ratio()
                if ratio >= PAIR_RATIO:
                    scored.append((ratio, id(old), old, new))
    pairs, used = [], set()
    for _, _, old, new in sorted(scored, key=lambda s: -s[0]):
        if id(old) not in used and id(new) not in used:
            pairs.append((old, new))
            used |= {id(old), id(new)}
    left_old = [o for o in removed if id(o) not in used]
    left_new = [n for n in added if id(n) not in used]
    if len(left_old) == 1 and len(left_new) == 1:
        pairs.append((left_old[0], left_new[0]))
    return pairs


_mirrors = Shared()


def acquire(service, home: Path, scope: str, inbox: Optional[Path] = None, threads: Threads = IN_CONTEXT) -> Mirror:
    """The process's mirror of this home into `scope`, started on first use (every provider
    instance of a gateway shares one) on a thread started by `threads`."""
    key = (str(Path(home).resolve()), scope)
    return _mirrors.acquire(key, lambda: Mirror(service, home, scope, inbox=inbox, threads=threads).start())


def release(mirror: Mirror) -> None:
    """Give back a mirror from `acquire`; the last user stops it."""
    if _mirrors.release(mirror):
        mirror.stop()
