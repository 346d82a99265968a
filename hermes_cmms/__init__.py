"""hermes-cmms: Composite Memory for Hermes Agent."""
from .common.config import Settings
from .common.errors import CmmsError, InvalidInput, StoreUnavailable, UnknownMemory
from .hooks import hookimpl
from .service import MemoryService, acquire, release
from .common.version import __version__
from .store.store import NewMemory

__all__ = ["CmmsError", "InvalidInput", "MemoryService", "NewMemory", "Settings",
           "StoreUnavailable", "UnknownMemory", "acquire", "hookimpl", "release"]
