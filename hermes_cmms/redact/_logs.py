"""A logging filter that redacts every record of the `hermes_cmms` logger tree.

A filter on a logger sees only the records logged to that very logger, not its children's,
so it is put on every logger of the tree: the ones that exist, and (created in advance, found
by walking the package directories without importing them) those of modules loaded later."""
from __future__ import annotations

import importlib.util
import logging
import pkgutil
from pathlib import Path

from ._core import redact_text

ROOT = "hermes_cmms"
_installed = False


class RedactingFilter(logging.Filter):
    """Replaces a record's message (its arguments filled in) and traceback text with their
    redacted forms; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is logging's to report
            return True
        record.msg, record.args = redact_text(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


FILTER = RedactingFilter()


def install_log_filter() -> None:
    """Put the redacting filter on every `hermes_cmms` logger (idempotent, cheap after once)."""
    global _installed
    names = {ROOT, *(n for n in logging.Logger.manager.loggerDict if n.startswith(ROOT + "."))}
    if not _installed:
        names |= set(_module_names())
        _installed = True
    for name in names:
        logger = logging.getLogger(name)
        if FILTER not in logger.filters:
            logger.addFilter(FILTER)


def _module_names():
    """Every module name of the installed package tree (hooks, mcp_bridge and install too,
    which live in other directories), found without importing them."""
    stack = []
    for name in (ROOT, *(f"{ROOT}.{sub}" for sub in ("hooks", "mcp_bridge", "install"))):
        spec = importlib.util.find_spec(name)
        stack += [(path, name) for path in (spec.submodule_search_locations or [])] if spec else []
    while stack:
        path, prefix = stack.pop()
        for info in pkgutil.iter_modules([path]):
            yield f"{prefix}.{info.name}"
            if info.ispkg and f"{prefix}.{info.name}" not in {n for _, n in stack}:
                stack.append((str(Path(path) / info.name), f"{prefix}.{info.name}"))
