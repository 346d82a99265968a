"""hermes-cmms: the Memory tab's backend for the Hermes Dashboard, mounted at /api/plugins/cmms/.
The code lives in the pip package hermes_cmms; this shim hands Hermes its read-only router."""
from hermes_cmms.hermes_plugin.dashboard_api import router  # noqa: F401
