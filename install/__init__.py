"""`hermes-cmms install-hermes-plugin`: put hermes-cmms into a Hermes home, or take it out again."""
from .installer import install, uninstall

__all__ = ["install", "uninstall"]
