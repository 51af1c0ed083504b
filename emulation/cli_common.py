"""What every `mrclab` subcommand family shares (emulation/cli.py builds the tree; the families
are emulation/cli_fabric.py, cli_controller.py, cli_bench.py): the usage exit code, the lazy
"module:function" import, the parser class whose subcommands carry their own "unknown" message,
and the checks for a fabric error and for root."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

EXIT_USAGE = 2
# Ctrl-C: the shell's code for a command ended by SIGINT (128 + 2)
EXIT_INTERRUPTED = 130


def resolve(target: str):
    """'pkg.module:function' -> the function, imported only now (see emulation/cli.py)."""
    module_name, _, func_name = target.partition(":")
    return getattr(importlib.import_module(module_name), func_name)


def is_fabric_error(err: BaseException) -> bool:
    """A FabricError (OVS down, a failed tc/ip command): a message for the user, not a
    traceback. Imported here: most subcommands never load the fabric module."""
    from emulation.network.fabric import FabricError  # deferred: only when a command failed
    return isinstance(err, FabricError)


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose subcommand choices can carry their own "unknown" message."""

    def _check_value(self, action, value):
        message = getattr(action, "unknown_choice_message", None)
        if message and action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, message.format(value=value))
        super()._check_value(action, value)


def not_root(prog: str, why: str) -> bool:
    """True (after saying so) when not root: the fabric needs namespaces, OVS and nft."""
    if os.geteuid() == 0:
        return False
    print(f"{prog}: must run as root ({why}); try `sudo .venv/bin/{prog}` or `sudo make ...`",
          file=sys.stderr)
    return True
