"""`hermes cmms …`: the `hermes-cmms` inspection commands inside Hermes' own CLI. Hermes calls
`register_cli(subparser)` from the active memory provider's cli.py while it builds its parser,
and `cmms_command(args)` to run one; each command is the `hermes-cmms` one, unchanged."""
from __future__ import annotations

import argparse
import sys

# Absolute imports: Hermes loads a provider's cli.py by its path, under a module name of its own.
from hermes_cmms.cli.commands import build_parser, exit_now, run, settled

COMMANDS = ("status", "search", "doctor", "audit-log", "audit", "forget", "reindex", "export",
            "import", "plugins", "ui", "edit", "pin", "unpin", "tag", "inspect", "list", "show")


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Add the COMMANDS under `hermes cmms`, each with the `hermes-cmms` command's arguments."""
    subparser.set_defaults(func=cmms_command, cmms_func=None)
    commands = subparser.add_subparsers(dest="cmms_command", metavar="COMMAND")
    ours = _subcommands(build_parser())
    for name in COMMANDS:
        own = ours[name]
        parser = commands.add_parser(name, parents=[own], add_help=False, help=own.description,
                                     description=own.description)
        parser.set_defaults(func=cmms_command, cmms_func=own.get_default("func"))
    subparser.set_defaults(cmms_usage=subparser.format_help())


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def cmms_command(args: argparse.Namespace) -> None:
    """Run one command as `hermes-cmms` would: an error in one sentence, its exit code."""
    if getattr(args, "cmms_func", None) is None:
        print(getattr(args, "cmms_usage", "usage: hermes cmms COMMAND"))
        return
    code = run(args.cmms_func, args)
    if not settled():
        exit_now(code)
    if code:
        sys.exit(code)
