"""The extraction API's public path for plugin authors (`hermes_cmms.extract.Item`,
`make_item`, `extract`): this name, and each of its submodules', is the module of
hermes_cmms.knowledge.extract itself (one object, so a patch through either name is seen)."""
import importlib
import pkgutil
import sys

from .knowledge import extract as _extract

for _sub in pkgutil.iter_modules(_extract.__path__):
    sys.modules[f"{__name__}.{_sub.name}"] = importlib.import_module(f"{_extract.__name__}.{_sub.name}")
sys.modules[__name__] = _extract
