"""Freed heap memory wiped at once, so that bytes one part of the process let go of cannot reach
a file another part writes whole.

Chroma's embedded HNSW index writes its preallocated `data_level0.bin` in full, the slots it has
not used yet included, and allocates that buffer with glibc's malloc without clearing it. What
the heap held there before (a page SQLite freed, holding a user's text) went to disk: the words
of a forgotten memory of one scope were found in another scope's index file, where forgetting
the first scope cannot reach them. glibc's `M_PERTURB` makes malloc fill every block it hands
out, and free overwrite every block it takes back, with a fixed byte.
"""
from __future__ import annotations

import ctypes
import logging
import sys
import threading

log = logging.getLogger(__name__)

M_PERTURB = -6  # glibc's mallopt parameter (malloc.h)
FILL = 0x5A  # free() writes this byte; malloc() hands out FILL ^ 0xFF
_lock = threading.Lock()
_state: dict = {"on": None}


def scrub_freed_memory() -> bool:
    """Turn glibc's perturbation on for this process, once; whether it is on. Elsewhere (another
    C library, another system) it says so once in the log and does nothing."""
    with _lock:
        if _state["on"] is None:
            _state["on"] = _perturb()
        return _state["on"]


def _perturb() -> bool:
    try:
        if not sys.platform.startswith("linux"):
            raise OSError(sys.platform)
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: musl has a mallopt without M_PERTURB
        mallopt = libc.mallopt
    except (AttributeError, OSError):
        log.info("hermes-cmms: this C library is not glibc; freed heap memory is not wiped")
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_PERTURB, FILL) == 1
