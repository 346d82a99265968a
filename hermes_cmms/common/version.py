"""The version of hermes-cmms (the root package re-exports it)."""
__version__ = "0.1.0"
