"""The extraction API's public path for plugin authors (`hermes_cmms.extract.Item`,
`make_item`, `extract`): this name is hermes_cmms.knowledge.extract itself."""
import sys

from .knowledge import extract as _extract

sys.modules[__name__] = _extract
