"""What both web doors share: this dashboard (`hermes-cmms ui`) and the Hermes Dashboard's Memory
tab (hermes_plugin/dashboard_api.py, a door above this one). The one error map (an engine error
as an HTTP status and its one sentence), an answer with its ids shown dashed, and an id as a
door takes it."""
from __future__ import annotations

import time
from typing import Any, Callable

from starlette.responses import JSONResponse

from ..common.errors import CmmsError, StoreUnavailable, UnknownEntity, UnknownMemory
from ..common.ids import public_ids, stored_id


class NotHere(CmmsError):
    """A scope this dashboard does not show (it was started with --scope)."""


# the first class an error is an instance of gives its status: what is not in this scope is not
# found, a store that cannot be read is unavailable, anything else the caller asked wrongly
ERRORS: tuple[tuple[type[CmmsError], int], ...] = (
    (UnknownMemory, 404), (UnknownEntity, 404), (NotHere, 404), (StoreUnavailable, 503), (CmmsError, 400))


def status(exc: CmmsError) -> int:
    return next(code for kind, code in ERRORS if isinstance(exc, kind))


def sentence(exc: CmmsError) -> str:
    """The error's one sentence (its message), or its class's name when it has none."""
    return str(exc.args[0]) if exc.args else type(exc).__name__


def error_json(exc: CmmsError) -> JSONResponse:
    """An engine error as the JSON doors answer it: {"detail": sentence}, with its status."""
    return JSONResponse({"detail": sentence(exc)}, status_code=status(exc))


SCOPES_SECONDS = 30.0  # the scope picker's list is read again after this long


class ScopeList:
    """The scope picker's list, as both web doors offer it: the owner's scope first, then the
    store's others, read again after SCOPES_SECONDS (counting the scopes scans a large store)."""

    def __init__(self) -> None:
        self.at, self.names = float("-inf"), []

    def __call__(self, owner: str, scopes: Callable[[], list[dict]]) -> list[str]:
        if time.monotonic() - self.at > SCOPES_SECONDS:
            self.names, self.at = [entry["scope"] for entry in scopes()], time.monotonic()
        return [owner, *(name for name in self.names if name != owner)]


def answer(value: Any) -> Any:
    """A verb's answer with its ids shown dashed, as at every door."""
    return public_ids(value)


def memory_id(text: Any) -> Any:
    """An id as a door takes it (dashed or stored) in its stored form; a short one (its first 8
    or more digits, as the pages print it) as given, for the verb to resolve in its scope."""
    return stored_id(text.strip()) if isinstance(text, str) else text
