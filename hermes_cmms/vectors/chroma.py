"""The Chroma vector index (derived data), vectors computed by us: embedded, one collection per
scope and view; on a Chroma server, `chroma_buckets` collections a view, each scope hashed into
one of them, each vector's id and metadata carrying its scope's key (see BUCKETS)."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import quote, urlparse

from ..common.config import Settings
from ..common.errors import VectorsUnavailable

SPACE = {"hnsw:space": "cosine"}
# Chroma logs every write (embeddings_queue in chroma.sqlite3, vectors included) until its HNSW
# index is next saved to disk, every `sync_threshold` (1,000) writes to the collection, and then
# drops the log up to there. After a forget, deleting that many ids that were never stored
# (BLANK_ID:n) makes it save and drop the log now; its last record, which it keeps, is one of them.
BLANK_ID = "cmms:scrub"
SYNC_THRESHOLD = 1000  # Chroma's default, for a collection whose configuration does not say

# chroma.sqlite3 is held open by the SQLite built into Chroma's Rust core. Python's sqlite3 is a
# second SQLite, and file locks belong to the process, so in one process neither sees the other's
# locks: a VACUUM through it ran while Chroma read the file on another thread, Chroma took the
# VACUUM's journal for a crashed writer's and played it back into the file ("database disk image
# is malformed", at times for good). So this process never opens that file itself: each statement
# on it runs in a child process, whose locks Chroma's SQLite waits for as for any other process.
CHROMA_SQL = ("import json, sqlite3, sys\n"
              "database = sqlite3.connect(sys.argv[1], timeout=float(sys.argv[4]), uri=sys.argv[1].startswith('file:'))\n"
              "print(json.dumps(database.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()))\n"
              "database.close()\n")
BUSY_S = 15.0  # SQLite's wait for another process's lock on chroma.sqlite3
CHILD_S = 120.0  # the longest a chroma_sql child runs (a read of a 1.7 GB file: 2.5 s)


class IndexBusy(RuntimeError):
    """chroma.sqlite3 stayed locked by another process (or the child ran out of time): not damage."""


# What was embedded: the text; it in context; its sentences (`<memory id>:<n>` each, the
# memory's id in their metadata: several vectors a memory, see units.py).
VIEWS = {"content": "cmms_", "context": "cmmsc_", "sentences": "cmmss_"}
UNITS = "sentences"


def owner(unit_id: str) -> str:
    """The memory a sentence vector's id belongs to."""
    return unit_id.rpartition(":")[0] or unit_id


def scope_key(scope: str) -> str:
    """A fixed-length key for a scope, whatever its string holds."""
    return hashlib.sha256(scope.encode("utf-8")).hexdigest()[:40]


def collection_name(scope: str, view: str = "content") -> str:
    """A Chroma-safe, fixed-length collection name for a scope and view (embedded; a server's
    before it hashed scopes into buckets, issue 31)."""
    return VIEWS[view] + scope_key(scope)


# BUCKETS: a Chroma server holds the scopes of a view in `chroma_buckets` collections (100 by
# default), each scope hashed into one, not a collection per scope: Chroma keeps ~2.7 MB of memory
# for every collection it has opened (30,000 collections for 10,000 users would need ~80 GB), while
# one collection for every scope makes each filtered search walk all of them (1.4 s p95 at 2,000
# scopes). ~100 scopes a collection is the middle (docs/benchmarks.md, "Many scopes"). Scope
# isolation then rests on two things every call does: a stored id is `<scope key>:<memory id>` (two
# scopes' ids never meet), and every read filters on the scope key in the metadata (`where`).
def bucket_name(scope: str, view: str, buckets: int) -> str:
    """The server collection holding the scope's vectors of `view`, among `buckets` a view."""
    return f"{_bucket_prefix(view, buckets)}{int(scope_key(scope), 16) % buckets}"


def _bucket_prefix(view: str, buckets: int) -> str:
    return f"{VIEWS[view]}b{buckets}_"


def _is_old(name: str, buckets: int) -> bool:
    """Whether a server collection is of a layout before `buckets` a view."""
    return name.startswith(tuple(VIEWS.values())) and _bucket_count(name) != buckets


def old_layouts(names, buckets: int) -> dict[str, int]:
    """A server's collections (`names`) of a layout before `buckets` a view, counted by what
    they are ("a collection per scope", "<n> buckets a view"): the vectors recall does not reach
    until `reindex` moves them."""
    found: dict[str, int] = {}
    for name in sorted(n for n in names if _is_old(n, buckets)):
        count = _bucket_count(name)
        kind = "a collection per scope" if count is None else f"{count} buckets a view"
        found[kind] = found.get(kind, 0) + 1
    return found


def _bucket_count(name: str) -> int | None:
    """The bucket count a collection name was made with (bucket_name), or None."""
    head, _, tail = name.partition("_")
    count = tail[1:].partition("_")[0]
    if head + "_" in VIEWS.values() and tail.startswith("b") and "_" in tail and count.isdigit():
        return int(count)
    return None


# A Chroma server's database holds the vectors of one store: its collection OWNER names that
# store's id (Store.identity) in its metadata. A process of another store is refused there (its
# recall is keyword-only, its writes wait in the outbox, `doctor` says why): two stores sharing
# a database would each take the other's vectors for strays (reindex) or its own (forget).
OWNER = "hermes-cmms-store"  # not a VIEWS prefix: no listing of vectors sees it


class ForeignDatabase(VectorsUnavailable):
    """The Chroma database holds another store's vectors."""


def foreign(location: str, held, owner: str) -> str:
    """What a store is told when the Chroma database at `location` names store `held`."""
    named = "".join(c for c in str(held) if c.isascii() and c.isalnum())[:32] or "unnamed"
    return (f"The Chroma database at {location} holds the vectors of another hermes-cmms store ({named}, this "
            f"one is {owner}); give each store a database of its own (CMMS_CHROMA_URL=http://host:port/<name>) "
            "and run `hermes-cmms reindex`, or, if that store is gone and this one replaces it (restored by "
            "import), run `hermes-cmms reindex --claim`.")


def copied(location: str, held_at, here: str) -> str:
    """What a copy of a store is told when the Chroma database at `location` is its id's, claimed
    where the store lived then (`held_at`; this copy lives `here`: Store.location)."""
    there = "".join(c for c in str(held_at) if c.isprintable())[:200]
    return (f"The Chroma database at {location} holds the vectors of this store as it lives at {there}, and this "
            f"is a copy of it at {here} (a copied SQLite file, a database cloned or restored elsewhere): two copies "
            "in one database would take each other's vectors for strays; give this one a database of its own "
            "(CMMS_CHROMA_URL=http://host:port/<name>) and run `hermes-cmms reindex`, or, if it replaces the store "
            "that lived there (restored or moved here), run `hermes-cmms reindex --claim`.")


def same_location(held_at, here: str) -> bool:
    """Whether a store's location as claimed (`held_at`) is where this one lives (`here`), both
    Store.location: a SQLite file by its device and inode only (after the '#': the path names it
    in messages, and the same file reached by another path, a bind mount or a Docker volume, is
    the same store), a PostgreSQL database by the whole string; one claimed by the server's
    address (before a role without the system identifier was given the database's oid) by the
    database's name."""
    if not isinstance(held_at, str) or not isinstance(here, str):
        return False
    if held_at.startswith("sqlite:") and here.startswith("sqlite:"):
        return held_at.rpartition("#")[2] == here.rpartition("#")[2]
    server, _, database = held_at.removeprefix("postgresql:").rpartition("/")
    if held_at.startswith("postgresql:") and here.startswith("postgresql:oid ") and ":" in server:
        return database == here.rpartition("/")[2]  # (an address: host:port, or ':' by a socket)
    return held_at == here


HTTP_TIMEOUT_S = 10.0  # one request to a Chroma server; chromadb itself waits forever
WRITE_TRIES = 3  # a write to a Chroma server is tried this often, 0.2 s then 0.4 s apart
DOWN_MAX_S = 30.0  # after failures, calls fail fast for up to this long before trying again


class VectorIndex:
    """Upsert, delete and query vectors of one store, isolated per scope.

    With `chroma_url` set it talks to a Chroma server (`http://host:port[/database]`). A
    server can be down: writes are retried with backoff, and after a failure every call fails
    fast (VectorsUnavailable) for a growing pause, 1 s up to DOWN_MAX_S, instead of making
    each recall wait on a dead connection. Nothing is lost meanwhile: the outbox in SQL holds
    the writes until the server answers again.
    """

    def __init__(self, settings: Settings, owner: str | None = None, home: str | None = None):
        self._settings = settings
        self.owner = owner  # the store's id: on a server, the database must be this store's (OWNER)
        self.home = home  # where the store lives (Store.location): a copy elsewhere is refused too
        self._refused: ForeignDatabase | None = None  # while refused, calls fail fast with it
        self._reclaim = False  # the server lost collections or was away: database and claim checked again
        self._admin = None
        self._collections: dict[str, object] = {}
        self._lock = threading.Lock()
        self.embedded = not settings.chroma_url
        self.shared = not self.embedded  # (see BUCKETS)
        self.buckets = settings.chroma_buckets
        self._old_names: set[str] | None = None  # a server's collections not of this layout (see _old)
        self.location = settings.chroma_url or str(settings.chroma_path)
        self._failures = 0
        self._down_until = 0.0
        self.client = None if not self.embedded else self._connect()

    def _connect(self, claim: bool = True):
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        settings = self._settings
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if not settings.chroma_url:
            settings.chroma_path.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=str(settings.chroma_path), settings=chroma_settings)
        where = _server_address(settings.chroma_url)
        _answers(settings.chroma_url)  # (chromadb's constructor asks the server with no timeout)
        database = self._database()
        client = _with_timeout(_bounded(settings, lambda: chromadb.HttpClient(
            **where, settings=chroma_settings, **({"database": database} if database else {}))))
        if self.owner and claim:
            self._claim(client)
        return client

    def _database(self) -> str:
        """The database the URL names ("": the server's default), made if missing: one Chroma
        server, several deployments, each in its own database."""
        database = urlparse(self._settings.chroma_url).path.strip("/")
        if database:
            if self._admin is None:  # (one an index: chromadb keeps every client it ever made)
                self._admin = admin_client(self._settings.chroma_url)
            try:
                self._admin.get_database(database)
            except Exception:  # noqa: BLE001 - chroma raises several types for "missing"
                self._admin.create_database(database)
        return database

    def _claim(self, client) -> None:
        """Make the server's database this store's (OWNER), or fail if another store's."""
        try:
            marker = client.get_collection(OWNER)
        except Exception as exc:  # chroma raises several types for "missing"
            if _unreachable(exc):
                raise
            try:
                marker = client.create_collection(OWNER, metadata=self._mark())
            except Exception as again:  # another process of the store made it first
                if _unreachable(again):
                    raise
                marker = client.get_collection(OWNER)
        held, at = (marker.metadata or {}).get("store"), (marker.metadata or {}).get("at")
        if held != self.owner:
            raise ForeignDatabase(foreign(self.location, held, self.owner))
        if self.home and at and not same_location(at, self.home):
            raise ForeignDatabase(copied(self.location, at, self.home))
        if self.home and not at:  # claimed before stores said where they live: this one's now
            marker.modify(metadata=self._mark())

    def _mark(self) -> dict:
        """The OWNER collection's metadata naming this store: its id and where it lives."""
        return {"store": self.owner, **({"at": self.home} if self.home else {})}

    def take(self) -> None:
        """Make the server's database this store's, whatever store it named before (`reindex
        --claim`: this store replaces a lost one, e.g. restored by import)."""
        if not self.shared or not self.owner:
            return
        with self._lock:  # (a claim on another thread waits, then finds this store's name)
            if self.client is None:
                self.client = self._connect(claim=False)
            else:
                self._database()
            marker = self.client.get_or_create_collection(OWNER, metadata=self._mark())
            if {k: v for k, v in (marker.metadata or {}).items() if k in ("store", "at")} != self._mark():
                marker.modify(metadata=self._mark())
            self._refused, self._down_until, self._failures, self._reclaim = None, 0.0, 0, False

    def _server(self):
        """The server client, connected now if need be; fails fast while the server is down."""
        if self.client is None or self._reclaim:
            with self._lock:
                if self.client is None:
                    self.client = self._connect()
                elif self._reclaim:  # the same client (it has its timeouts): database and claim again
                    self._database()
                    if self.owner:
                        self._claim(self.client)
                self._reclaim = False
        return self.client

    def reopen(self) -> None:
        """Drop the embedded client and open a new one, which reads the index from disk again
        (an open client never sees vectors another process added)."""
        with self._lock:
            old, self._collections = self.client, {}
            old.close()
            self.client = self._connect()

    def _name(self, scope: str, view: str) -> str:
        return bucket_name(scope, view, self.buckets) if self.shared else collection_name(scope, view)

    def _stored(self, scope: str, ids: Sequence[str]) -> list[str]:
        """The ids as stored: in a shared collection, prefixed with the scope's key."""
        return [f"{scope_key(scope)}:{i}" for i in ids] if self.shared else list(ids)

    def _unstored(self, ids: Sequence[str]) -> list[str]:
        return [i.partition(":")[2] for i in ids] if self.shared else list(ids)

    def _where(self, scope: str, more: dict | None = None) -> dict | None:
        """The metadata filter that keeps a read in the scope (shared collections), and `more`."""
        if not self.shared:
            return more
        mine = {"scope": scope_key(scope)}
        return {"$and": [mine, more]} if more else mine

    def _collection(self, scope: str, create: bool, view: str = "content", name: str | None = None):
        name = name or self._name(scope, view)
        if not self.embedded:
            self._server()  # connected before the lock below is taken (connecting takes it too)
        with self._lock:
            if name not in self._collections:
                if create:
                    self._collections[name] = self.client.get_or_create_collection(
                        name, embedding_function=None, metadata=SPACE)
                else:
                    try:
                        self._collections[name] = self.client.get_collection(name, embedding_function=None)
                    except Exception as exc:  # chroma raises several types for "missing"
                        if _unreachable(exc) or _no_database(exc):  # (the database gone: made again)
                            raise
                        return None
            return self._collections[name]

    def _retrying(self, operation, write: bool = False):
        """Run `operation()`. Embedded: if the client was re-opened under it (another
        thread's refresh), run it once more on the new client. Server: see the class."""
        if not self.embedded:
            return self._on_server(operation, WRITE_TRIES if write else 1)
        client = self.client
        try:
            return operation()
        except Exception:
            with self._lock:  # wait out a re-open in progress
                pass
            if self.client is client:
                raise
            return operation()

    def _on_server(self, operation, tries: int):
        if time.monotonic() < self._down_until:
            if self._refused is not None:
                raise ForeignDatabase(str(self._refused))
            raise VectorsUnavailable(f"The Chroma server at {self.location} is not answering; "
                                     f"retrying in {self._down_until - time.monotonic():.0f} s.")
        for attempt in range(tries + 1):  # (one more after a collection went missing)
            try:
                self._server()
                result = operation()
            except ForeignDatabase as exc:  # asked again after a pause, as a server that is away
                with self._lock:
                    if self.client is None or self._reclaim:  # (not made this store's meanwhile: take)
                        self._refused, self._down_until = exc, time.monotonic() + DOWN_MAX_S
                raise
            except Exception as exc:  # any failure: back off, then say so clearly
                gone = _unreachable(exc)
                # another process dropped the collection (forget --all), or the server restarted
                # empty: the handles kept here name collections that are gone
                missing = not gone and _missing(exc)
                if missing:  # (the database itself may be gone: made, and claimed, again)
                    with self._lock:
                        self._collections, self._reclaim = {}, True
                if attempt + 1 < tries or (missing and attempt + 1 == tries):
                    time.sleep(0.2 * 2 ** attempt)
                    continue
                if gone:
                    self._failures += 1
                    self._down_until = time.monotonic() + min(DOWN_MAX_S, 2.0 ** (self._failures - 1))
                    with self._lock:  # (it may come back empty: database and claim checked again)
                        self._collections, self._reclaim, self._refused = {}, True, None
                    raise VectorsUnavailable(f"The Chroma server at {self.location} is not answering: "
                                             f"{type(exc).__name__}: {exc}") from exc
                raise
            self._failures, self._down_until, self._refused = 0, 0.0, None
            return result

    def upsert(self, scope: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[dict], view: str = "content") -> None:
        if self.shared:
            metadatas = [{**m, "scope": scope_key(scope)} for m in metadatas]
        self._retrying(lambda: self._collection(scope, create=True, view=view).upsert(
            ids=self._stored(scope, ids), embeddings=[list(v) for v in vectors], metadatas=list(metadatas)),
            write=True)
        if self.shared and ids and self._old(scope, view):  # the same memories' older vectors go
            memories = sorted({owner(i) for i in ids}) if view == UNITS else list(ids)
            self._retrying(lambda: self._delete_old(scope, view, memories), write=True)

    def get(self, scope: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """The content-view vectors stored for `ids` (those that exist)."""
        def get():
            collection = self._collection(scope, create=False)
            if collection is None or not ids:
                return {}
            found = collection.get(ids=self._stored(scope, ids), where=self._where(scope), include=["embeddings"])
            return {i: list(map(float, v)) for i, v in zip(self._unstored(found["ids"]), found["embeddings"])}
        return self._retrying(get)

    def delete(self, scope: str, ids: Sequence[str], save: bool = True) -> None:
        """Remove the ids from every view of the scope, leaving no trace of their vectors in
        Chroma's files: HNSW only marks a deleted element (its vector stays in data_level0.bin),
        so each is first overwritten with a blank unit vector, then deleted; then (unless
        `save` is false: the caller calls `save` once after a run of deletes) the index is saved
        and the log dropped. On a server, vectors still in a layout from before (see `_old`)
        go too."""
        def delete():
            for view in VIEWS:
                collection = self._collection(scope, create=False, view=view)
                if collection is not None and ids:
                    _blank_and_delete(collection, view, self._stored(scope, ids), ids, self._where(scope))
                if ids:
                    self._delete_old(scope, view, ids)
        self._retrying(delete, write=True)
        if save:
            self.save(scope)

    def save(self, scope: str) -> None:
        """Make Chroma save the scope's HNSW index and drop its log now (see BLANK_ID): deleting
        as many never-stored ids as its save interval is what triggers it."""
        def save():
            for view in VIEWS:
                collection = self._collection(scope, create=False, view=view)
                if collection is not None:
                    _save(collection)
        self._retrying(save, write=True)

    def drop(self, scope: str) -> None:
        """Delete every view of the scope whole (forget --all), with its index files. In a
        server's buckets: every vector of the scope blanked and deleted, then the index saved;
        its collections from a layout before (see `_old`) emptied the same way, then deleted."""
        if self.shared:
            def drop_shared():
                for view in VIEWS:
                    collection = self._collection(scope, create=False, view=view)
                    homes = ([(collection, False)] if collection is not None else []) + self._old(scope, view)
                    for home, per_scope in homes:
                        where = None if per_scope else self._where(scope)
                        while held := home.get(where=where, include=[], limit=DROP_PAGE)["ids"]:
                            _blank_and_delete(home, view, held, None, None)
                        _save(home)
            self._retrying(drop_shared, write=True)
            self.drop_legacy(scope)
            return
        def drop():
            for view in VIEWS:
                name = collection_name(scope, view)
                with self._lock:
                    self._collections.pop(name, None)
                segments = _segment_dirs(self._settings.chroma_path, name) if self.embedded else []
                try:
                    self.client.delete_collection(name)
                except Exception as exc:  # chroma raises several types for "missing"
                    if _unreachable(exc):
                        raise
                for path in segments:  # Chroma leaves a deleted collection's HNSW files behind
                    shutil.rmtree(path, ignore_errors=True)
        self._retrying(drop, write=True)

    # -- layouts from before: a collection per scope, or another number of buckets ---------------

    def _old(self, scope: str, view: str) -> list[tuple[object, bool]]:
        """The scope's collections of `view` in a server layout from before, that exist: its own
        (a collection per scope, before issue 31: True) and its buckets of another count (False).
        The server's collections are listed once a process (a collection an older process makes
        later is found by the next process, or the next reindex's stray pass)."""
        if not self.shared:
            return []
        if self._old_names is None:
            self._old_names = self._list_old()
        counts = sorted({n for n in map(_bucket_count, self._old_names) if n is not None})
        names = [(collection_name(scope, view), True)] + [(bucket_name(scope, view, n), False) for n in counts]
        found = []
        for name, per_scope in names:
            collection = self._collection(scope, create=False, view=view, name=name) \
                if name in self._old_names else None
            if collection is not None:
                found.append((collection, per_scope))
        return found

    def _list_old(self) -> set[str]:
        """The server's collections, listed now, of a layout before this one."""
        return {c.name for c in self._retrying(lambda: self.client.list_collections())
                if _is_old(c.name, self.buckets)}

    def _delete_old(self, scope: str, view: str, ids: Sequence[str]) -> None:
        """Blank and delete the memories `ids` of the scope from its collections of `view` in a
        layout from before, each saved if it held any."""
        for old, per_scope in self._old(scope, view):
            stored, where = (list(ids), None) if per_scope else (self._stored(scope, ids), self._where(scope))
            if _blank_and_delete(old, view, stored, ids, where):
                _save(old)

    def _delete_collection(self, name: str) -> None:
        """Delete a server collection of a layout from before (emptied or moved)."""
        with self._lock:
            self._collections.pop(name, None)
        self.client.delete_collection(name)
        if self._old_names is not None:
            self._old_names.discard(name)

    def move_old(self, scope: str) -> int:
        """Move the scope's vectors from a server layout before this one into its buckets, as
        they are (nothing embedded again), each removed from where it was as a delete removes
        it; the scope's own old collections are then deleted. What the buckets already hold is
        newer (written since) and is kept, and a blanked vector (a delete cut short) is not
        moved, so a move run twice, or cut short and run again, changes nothing. Returns the
        vectors moved."""
        def move():
            moved, key = 0, scope_key(scope)
            for view in VIEWS:
                for old, per_scope in self._old(scope, view):
                    where = None if per_scope else self._where(scope)
                    while (found := old.get(where=where, include=["embeddings", "metadatas"], limit=DROP_PAGE))["ids"]:
                        ids = found["ids"] if per_scope else self._unstored(found["ids"])
                        metas = [m or {} for m in found["metadatas"]]
                        bucket = self._collection(scope, create=True, view=view)
                        newer = self._newer(bucket, scope, view, ids, metas)
                        keep = [n for n, (i, m, v) in enumerate(zip(ids, metas, found["embeddings"]))
                                if (m.get("memory_id") if view == UNITS else i) not in newer and not _blank(v)]
                        if keep:
                            bucket.upsert(ids=self._stored(scope, [ids[n] for n in keep]),
                                          embeddings=[list(found["embeddings"][n]) for n in keep],
                                          metadatas=[{**metas[n], "scope": key} for n in keep])
                        _blank_and_delete(old, view, found["ids"], None, None)
                        moved += len(keep)
                    _save(old)
            return moved
        moved = self._retrying(move, write=True) if self.shared else 0
        if moved:
            self.save(scope)
        self.drop_legacy(scope)
        return moved

    def _newer(self, bucket, scope: str, view: str, ids: list[str], metas: list[dict]) -> set[str]:
        """Of the memories (sentences view) or ids (other views) of a page of an old layout,
        those the scope's bucket already holds."""
        if view != UNITS:
            return set(self._unstored(bucket.get(ids=self._stored(scope, ids), include=[])["ids"]))
        owners = sorted({m.get("memory_id") for m in metas if m.get("memory_id")})
        held = bucket.get(where=self._where(scope, {"memory_id": {"$in": owners}}), include=["metadatas"]) \
            if owners else {"metadatas": []}
        return {m.get("memory_id") for m in held["metadatas"] if m}

    def drop_legacy(self, scope: str) -> bool:
        """Delete the scope's collections of its own from before BUCKETS (after `move_old`, or
        when the scope is forgotten); whether there were any."""
        def drop():
            own = [old.name for view in VIEWS for old, per_scope in self._old(scope, view) if per_scope]
            for name in own:
                self._delete_collection(name)
            return bool(own)
        return bool(self.shared and self._retrying(drop, write=True))

    def drop_empty_old_buckets(self) -> int:
        """Delete the buckets of another count that `move_old` emptied; how many."""
        if not self.shared:
            return 0
        def drop():
            emptied = [c.name for c in self.client.list_collections()
                       if _bucket_count(c.name) not in (None, self.buckets) and not c.count()]
            for name in emptied:
                self._delete_collection(name)
            return len(emptied)
        return self._retrying(drop, write=True)

    def scrub(self) -> None:
        """Embedded: rewrite chroma.sqlite3 (VACUUM, in a child process: see CHROMA_SQL), whose
        deleted log, embedding and metadata rows otherwise stay readable in its free pages (Chroma
        does not zero them). A Chroma server's files are the server's to vacuum (`chroma vacuum
        --path DIR` while it is stopped)."""
        if self.embedded:
            chroma_sql(self._settings.chroma_path, "VACUUM")

    def query(self, scope: str, vector: Sequence[float], limit: int,
              view: str = "content") -> list[tuple[str, float]]:
        """(memory id, cosine similarity) pairs, most similar first."""
        return self.query_many(scope, [vector], limit, view)[0]

    def query_many(self, scope: str, vectors: Sequence[Sequence[float]], limit: int,
                   view: str = "content") -> list[list[tuple[str, float]]]:
        """`query` for many vectors in one call: a list of (id, similarity) lists, in order."""
        def query():
            collection = self._collection(scope, create=False, view=view)
            if collection is None or not vectors:
                return [[] for _ in vectors]
            found = collection.query(query_embeddings=[list(v) for v in vectors], n_results=limit,
                                     where=self._where(scope), include=["distances"])
            return [[(i, 1.0 - d) for i, d in zip(self._unstored(ids), distances)]
                    for ids, distances in zip(found["ids"], found["distances"])]
        return self._retrying(query)

    def present(self, scope: str, ids: Sequence[str], view: str = "content") -> set[str]:
        """Which of `ids` have a vector in the scope's `view` (for the audit)."""
        def present():
            collection = self._collection(scope, create=False, view=view)
            if collection is None or not ids:
                return set()
            found = self._unstored(_held(collection, view, self._stored(scope, ids), ids, [], self._where(scope))["ids"])
            return {owner(i) for i in found} if view == UNITS else set(found)
        return self._retrying(present)

    def ids(self, scope: str, view: str = "content", batch: int = 1000) -> Iterator[list[str]]:
        """Every id in the scope's `view`, a page at a time (for the audit; a page may shift
        while the index is written)."""
        offset = 0
        while page := self._retrying(lambda: self._page(scope, view, batch, offset)):
            yield list(dict.fromkeys(owner(i) for i in page)) if view == UNITS else page
            offset += len(page)

    def _page(self, scope: str, view: str, limit: int, offset: int) -> list[str]:
        collection = self._collection(scope, create=False, view=view)
        if collection is None:
            return []
        return self._unstored(collection.get(where=self._where(scope), include=[], limit=limit, offset=offset)["ids"])

    def collection_names(self, scope: str) -> set[str]:
        """The collections the scope's vectors are in."""
        return {self._name(scope, view) for view in VIEWS}

    def collection_counts(self) -> dict[str, int]:
        """Vectors per collection of every view and scope (for the audit)."""
        prefixes = tuple(VIEWS.values())
        return self._retrying(lambda: {c.name: c.count() for c in self.client.list_collections()
                                       if c.name.startswith(prefixes)})

    def count(self, scope: str | None = None) -> int:
        """Vectors of the content view (one per indexed memory): of one scope, or of all."""
        if scope is not None and self.shared:
            return sum(len(page) for page in self.ids(scope))
        if scope is not None:
            def one():
                collection = self._collection(scope, create=False)
                return collection.count() if collection is not None else 0
            return self._retrying(one)
        mine = _bucket_prefix("content", self.buckets) if self.shared else VIEWS["content"]
        return self._retrying(lambda: sum(c.count() for c in self.client.list_collections()
                                          if c.name.startswith(mine)))


DROP_PAGE = 1000  # vectors of a scope blanked and deleted a request, when it is forgotten whole


def _held(collection, view: str, stored: Sequence[str], ids: Sequence[str], include: list,
          where: dict | None) -> dict:
    """The vectors `collection` holds for the memories `ids` (`stored`: their ids as stored),
    within `where`: by id, or for the sentences view by the memory id in their metadata."""
    if view != UNITS:
        return collection.get(ids=list(stored), where=where, include=include)
    mine = {"memory_id": {"$in": list(ids)}}
    return collection.get(where={"$and": [where, mine]} if where else mine, include=include)


def _blank_and_delete(collection, view: str, stored: Sequence[str], ids: Sequence[str] | None,
                      where: dict | None) -> bool:
    """Overwrite the held vectors of `ids` (stored as `stored`; None: `stored` are the vectors'
    own ids) with a blank unit vector, then delete them (see VectorIndex.delete); whether it
    held any."""
    present = (collection.get(ids=list(stored), include=["embeddings"]) if ids is None
               else _held(collection, view, stored, ids, ["embeddings"], where))
    if present["ids"]:
        blank = [1.0] + [0.0] * (len(present["embeddings"][0]) - 1)
        collection.upsert(ids=present["ids"], embeddings=[blank] * len(present["ids"]))
    doomed = list(stored) if view != UNITS or ids is None else present["ids"]
    if doomed:
        collection.delete(ids=doomed)
    return bool(present["ids"])


def _blank(vector) -> bool:
    """Whether `vector` is the blank unit vector a delete writes first (see VectorIndex.delete)."""
    return len(vector) > 0 and vector[0] == 1.0 and not any(vector[1:])


def _save(collection) -> None:
    """Make Chroma save the collection's HNSW index and drop its log now (see BLANK_ID)."""
    collection.delete(ids=[f"{BLANK_ID}:{n}" for n in range(_sync_threshold(collection))])


def _sync_threshold(collection) -> int:
    """After how many writes Chroma saves the collection's HNSW index (and drops its log)."""
    hnsw = (collection.configuration or {}).get("hnsw") or {}
    return int(hnsw.get("sync_threshold") or SYNC_THRESHOLD)


def _segment_dirs(chroma_path: Path, name: str) -> list[Path]:
    """The directories of a collection's vector segments under an embedded Chroma's path."""
    rows = chroma_sql(chroma_path, "SELECT s.id FROM segments AS s JOIN collections AS c ON c.id = s.collection "
                                   "WHERE c.name = ? AND s.scope = 'VECTOR'", name)
    return [chroma_path / segment for (segment,) in rows if (chroma_path / segment).is_dir()]


def chroma_sql(chroma_path: Path, statement: str, *params, read_only: bool = False) -> list[list]:
    """The rows of one statement on an embedded Chroma's chroma.sqlite3, run in a child process
    (see CHROMA_SQL) bounded by CHILD_S; a failure raises RuntimeError with the child's last line
    of error, IndexBusy when the file stayed locked past BUSY_S or the child ran out of time.
    `read_only`: the file is opened read-only (a missing file is an error, never made)."""
    path = chroma_path / "chroma.sqlite3"
    where = f"{path.absolute().as_uri()}?mode=ro" if read_only else str(path.absolute())
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", CHROMA_SQL, where, statement, json.dumps(params),
                               str(BUSY_S)], capture_output=True, text=True, errors="replace", timeout=CHILD_S)
    except subprocess.TimeoutExpired:
        raise IndexBusy(f"{statement.split()[0]} on {path} failed: no answer in {CHILD_S:g} s") from None
    if done.returncode:
        said = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
        busy = "database is locked" in said[-1] or "database is busy" in said[-1]
        raise (IndexBusy if busy else RuntimeError)(f"{statement.split()[0]} on {path} failed: {said[-1]}")
    return json.loads(done.stdout)


def _server_address(url: str) -> dict:
    """HttpClient's host, port and ssl for a Chroma server URL."""
    parsed = urlparse(url)
    return {"host": parsed.hostname or "127.0.0.1", "port": parsed.port or 8000, "ssl": parsed.scheme == "https"}


def admin_client(url: str):
    """A chromadb AdminClient (databases and tenants) for the Chroma server at `url`."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    where = _server_address(url)
    return _with_timeout(chromadb.AdminClient(ChromaSettings(
        anonymized_telemetry=False, chroma_api_impl="chromadb.api.fastapi.FastAPI",
        chroma_server_host=where["host"], chroma_server_http_port=where["port"],
        chroma_server_ssl_enabled=where["ssl"])))


def _with_timeout(client):
    """Give a chromadb HTTP client a request timeout (chromadb sets none: a hung server would
    hang every caller). Reaches into chromadb's FastAPI client for its httpx session."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None) or getattr(
        getattr(client, "_admin_client", None), "_session", None)
    if session is not None:
        session.timeout = httpx.Timeout(HTTP_TIMEOUT_S, connect=3.0)
    return client


def _answers(url: str) -> None:
    """Raise httpx's TimeoutException (or TransportError) unless the Chroma server at `url`
    answers the request chromadb's constructors make first (`/auth/identity`) within
    HTTP_TIMEOUT_S: those ask before `_with_timeout` can bound their session, so a server that
    accepts and never answers would hang the opener (and with it a turn) for good."""
    import httpx

    where = _server_address(url)
    base = f"{'https' if where['ssl'] else 'http'}://{where['host']}:{where['port']}/api/v2"
    with httpx.Client(timeout=httpx.Timeout(HTTP_TIMEOUT_S, connect=3.0)) as http:
        http.get(f"{base}/auth/identity")


def _bounded(settings: Settings, make):
    """`make()` (a chromadb client's constructor, which asks the server three times with no
    timeout) on a thread of its own, waited for at most HTTP_TIMEOUT_S: a server that answered
    `_answers` and then stopped answering would hang the caller for good. The thread is left to
    end when the server lets go of it."""
    from concurrent.futures import Future

    done: Future = Future()

    def run() -> None:
        try:
            done.set_result(make())
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
            done.set_exception(exc)

    settings.threads.start(run, "cmms-chroma-connect")
    try:
        return done.result(HTTP_TIMEOUT_S)
    except TimeoutError:
        raise TimeoutError(f"the Chroma server did not finish connecting within {HTTP_TIMEOUT_S:.0f} s") from None


PROBE_S = 3.0  # a request of `probe`: a health page does not wait on a hung server


def probe(url: str, buckets: int) -> dict:
    """What `doctor` and a health page show of the Chroma server at `url`, read only (a
    VectorIndex's first call makes the database and claims it; this makes nothing), over plain
    HTTP with PROBE_S a request (chromadb's client waits without limit while it connects):
    {"answers": False, "error": name} or {"answers": True, "database": whether it exists,
    "owner": the store id it names (None: not claimed yet), "at": where that store lived when it
    claimed it (None: not said), "old": old_layouts}."""
    import httpx

    where = _server_address(url)
    base = f"{'https' if where['ssl'] else 'http'}://{where['host']}:{where['port']}/api/v2"
    database = urlparse(url).path.strip("/") or "default_database"
    api = f"{base}/tenants/default_tenant/databases/{quote(database, safe='')}"
    with httpx.Client(timeout=PROBE_S) as http:
        try:
            http.get(f"{base}/heartbeat").raise_for_status()
        except Exception as exc:  # noqa: BLE001 - away, or not a Chroma server
            return {"answers": False, "error": type(exc).__name__}
        found = http.get(api)
        if found.status_code == 404:
            return {"answers": True, "database": False, "owner": None, "old": {}}
        found.raise_for_status()
        listing = http.get(f"{api}/collections")
        listing.raise_for_status()
        collections = listing.json()
    names = [c.get("name", "") for c in collections]
    mark = next(((c.get("metadata") or {}) for c in collections if c.get("name") == OWNER), {})
    return {"answers": True, "database": True, "owner": mark.get("store"), "at": mark.get("at"),
            "old": old_layouts(names, buckets)}


def _missing(exc: BaseException) -> bool:
    """Whether `exc` says a collection, or the database, is not on the server (any more)."""
    return "does not exist" in str(exc) or _no_database(exc)


def _no_database(exc: BaseException) -> bool:
    """Whether `exc` says the server has no database of the URL's name (any more)."""
    said = str(exc)
    return "Database [" in said and ("not found" in said or "does not exist" in said)


def _unreachable(exc: BaseException) -> bool:
    """Whether `exc` says the server could not be reached (not that it refused the request)."""
    import httpx

    while exc is not None:
        if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
