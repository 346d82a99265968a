"""hermes-cmms: Composite Memory for Hermes Agent."""
from .common.config import Settings
from .common.errors import CmmsError, InvalidInput, StoreUnavailable, UnknownMemory
from .hooks import hookimpl
from .service import MemoryService, acquire, release
from .store.store import NewMemory

__version__ = "0.1.0"
__all__ = ["CmmsError", "InvalidInput", "MemoryService", "NewMemory", "Settings",
           "StoreUnavailable", "UnknownMemory", "acquire", "hookimpl", "release"]
