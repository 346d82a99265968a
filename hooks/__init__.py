"""pluggy hook specifications and hermes-cmms' built-in hook implementations."""
from .specs import hookimpl, hookspec

__all__ = ["hookimpl", "hookspec"]
