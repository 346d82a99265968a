"""Typed errors with one-sentence messages; each door translates them once."""


class CmmsError(Exception):
    """Base class for every error hermes-cmms raises on purpose."""


class InvalidInput(CmmsError, ValueError):
    """A caller passed an argument the engine cannot accept."""


class UnknownMemory(CmmsError, KeyError):
    """A memory id that does not exist in the caller's scope."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "Unknown memory."


class StoreUnavailable(CmmsError):
    """The SQL store could not be opened or written."""


class NoVectorIndex(StoreUnavailable):
    """Semantic search asked of a store with no embedding model or vector index loaded."""


class UnknownEntity(CmmsError):
    """An entity id that is not in the caller's scope's graph."""


class LlmUnavailable(CmmsError):
    """No LLM is configured, or the configured one could not answer."""


class VectorsUnavailable(CmmsError, RuntimeError):
    """The Chroma server did not answer (recall falls back to keyword; the outbox keeps writes)."""


class AmbiguousId(InvalidInput):
    """A short id (the start of an id, as the doors print it) that starts several memories of the scope."""
