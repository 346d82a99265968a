"""`python -m hermes_cmms.cli`."""
import sys

from .main import main

sys.exit(main())
