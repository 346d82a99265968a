"""`python -m hermes_cmms.cli`."""
import sys

from .commands import main

sys.exit(main())
