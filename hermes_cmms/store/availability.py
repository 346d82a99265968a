"""Is the memory store there, and can it be written? Cheap local checks, no network: for
`is_available`, `hermes memory status`, `hermes-cmms doctor` and the commands that need a store."""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Optional

from sqlalchemy.engine import make_url

from ..common.config import Settings, used_by_hermes
from ..common.errors import StoreUnavailable


def store_file(settings: Settings) -> Optional[Path]:
    """The SQLite file that is the store; None when the store is a database server (the
    database named is the store) or in memory, or when the URL cannot be read (the store says
    so when opened)."""
    try:
        url = make_url(settings.database_url)
    except Exception:  # noqa: BLE001
        return None
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database.removeprefix("file:")).expanduser()


def store_problem(settings: Settings) -> str:
    """Why this store cannot be written, in one sentence; '' when nothing local stands in the
    way. A database or Chroma server is not contacted: reaching it is `initialize`'s job."""
    try:
        url = make_url(settings.database_url)
    except Exception:  # noqa: BLE001 - an unparsable URL: the store says so when opened
        return f"The database URL {settings.database_url.split(':', 1)[0]}:… cannot be read."
    places = []
    database = store_file(settings)
    if database is not None:
        if url.query.get("mode") == "ro" or url.query.get("immutable") == "1":
            return f"The memory store {url.database} is opened read-only (by its database URL)."
        places.append(database)
    if not settings.chroma_url:  # the embedded vector index and the writer lock live here
        places.append(settings.data_dir / "cmms.db")
    for database in places:
        problem = _unwritable(database)
        if problem:
            return problem
    return ""


def _unwritable(database: Path) -> str:
    """'' when the directory of `database` can be made and written, and the file (and its
    WAL) writable; else the reason. Writing a file in the directory (or, while it is not made
    yet, in the nearest one that is: nothing is created) is the test: permission bits alone do
    not tell whether root, a read-only mount or a file in the way would refuse. The database
    files themselves are only asked about (access(2) knows root and read-only mounts), never
    opened: closing any descriptor of a SQLite file drops the locks every connection of this
    process holds on it, which can corrupt the store."""
    where = database.parent
    try:
        nearest = next(place for place in (where, *where.parents) if place.exists())
        if not nearest.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(nearest))
        try:
            with tempfile.TemporaryFile(dir=nearest):
                pass
        except OSError as exc:  # name the directory, not the probe file that could not be made
            raise OSError(exc.errno, exc.strerror, str(nearest)) from exc
        for path in (database, database.with_name(database.name + "-wal")):
            if path.exists() and not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, "permission denied", str(path))
    except OSError as exc:
        return f"The memory store cannot be written at {exc.filename or where}: {exc.strerror or exc}."
    return ""


def door_settings(home, create: Optional[bool], **overrides) -> Settings:
    """A door's settings for `home`, once it may open the store there. A door that only reads
    (or changes what is stored) has `create` None and needs a store there; one that adds to it
    may start one in a home Hermes has used (`create` False), or anywhere (`create` True). A
    typo in --hermes-home or $HERMES_HOME then creates nothing; StoreUnavailable says why."""
    settings = Settings.load(home, **overrides)
    where = store_file(settings)  # None: a database server's, which is there once named
    if where is None or where.exists() or create:
        return settings
    hermes_ran = used_by_hermes(settings.home)
    if create is None and hermes_ran:  # the right home, before its first chat (as doctor says)
        raise StoreUnavailable(f"No cmms store at {where} yet: Hermes makes it at its first chat with cmms "
                               "(nothing was created).")
    if create is None:
        raise StoreUnavailable(f"No cmms store at {where}; check --hermes-home or $HERMES_HOME "
                               "(nothing was created).")
    if not hermes_ran:
        raise StoreUnavailable(f"No cmms store at {where}, and {settings.home} is not a Hermes home; check "
                               "--hermes-home or $HERMES_HOME, or pass --create to start a new store there.")
    return settings
