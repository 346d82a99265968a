"""hermes-cmms: `hermes cmms …` commands (Hermes reads register_cli from the active memory
provider's cli.py). The code lives in the pip package hermes_cmms; this shim imports it only
when Hermes asks, so other `hermes` commands do not pay for it."""


def register_cli(subparser):
    from hermes_cmms.hermes_plugin.cli import register_cli as register
    register(subparser)


def cmms_command(args):
    from hermes_cmms.hermes_plugin.cli import cmms_command as run
    return run(args)
