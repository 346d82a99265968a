"""The dashboard door (`hermes-cmms ui`): a local web app over the facade's verbs only."""
from ._guard import Door
from ._serve import serve
from .app import make_app

__all__ = ["Door", "make_app", "serve"]
