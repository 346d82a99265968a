"""Process-wide objects shared by key: made by the first user, closed by the last."""
from __future__ import annotations

import threading
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class Shared:
    """A use-counted registry of one kind of object (services, mirrors)."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, list] = {}  # key -> [object, users]
        self._lock = threading.Lock()

    def acquire(self, key: Hashable, make: Callable[[], T]) -> T:
        """The object for `key`, made with `make()` on first use; one more user either way."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = [make(), 0]
            entry[1] += 1
            return entry[0]

    def release(self, obj) -> bool:
        """One user fewer; True when the caller should close `obj` (it was the last user, or
        `obj` was never acquired here)."""
        with self._lock:
            for key, entry in list(self._entries.items()):
                if entry[0] is obj:
                    entry[1] -= 1
                    if entry[1] > 0:
                        return False
                    del self._entries[key]
                    break
        return True
