"""The command line: `hermes-cmms` (entry point `hermes_cmms.cli:main`)."""
from .commands import build_parser, main

__all__ = ["build_parser", "main"]
