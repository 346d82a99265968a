"""The Hermes provider's public path, kept for the shims `install-hermes-plugin` wrote into
users' Hermes homes and for the gateway hook: this name is hermes_cmms.hermes.provider itself
(one module object, so a patch through either name is seen by both)."""
import sys

from .hermes import provider as _provider

sys.modules[__name__] = _provider
