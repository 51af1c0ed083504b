"""Runs what the planner returns: external commands with their exit status checked, flow mods
through the OpenFlow handle the os-ken adapter provides, flap timers through callbacks.

A failure raises: CommandError (api: 500) for a command, TimeoutError (api: 504) when the
OpenFlow side is not running or a switch does not answer.
"""
from __future__ import annotations

from typing import Callable

from controller.api import CommandError
from controller.commands import CancelFlap, DeleteCookie, InstallRules, RunArgv, StartFlap
from model.proc import run_checked as run_command

COMMAND_TIMEOUT_S = 10.0


def run_checked(argv: list[str]) -> str:
    """model.proc.run_checked raising CommandError (the API answers it with a 500)."""
    return run_command(argv, timeout=COMMAND_TIMEOUT_S, error=CommandError)


class Executor:
    """run(argv) -> stdout raises on failure; openflow() returns the adapter's handle (install,
    delete_cookie) or None; start_flap / cancel_flap take the StartFlap / CancelFlap command;
    where(node, argv) -> the argv that runs argv on the node's server (unchanged by default)."""

    def __init__(self, run: Callable[[list[str]], str], openflow: Callable[[], object],
                 start_flap: Callable[[StartFlap], None],
                 cancel_flap: Callable[[CancelFlap], None],
                 where: Callable[[str | None, list[str]], list[str]] = lambda node, argv: argv):
        self.run = run
        self.where = where
        self.openflow = openflow
        self.start_flap = start_flap
        self.cancel_flap = cancel_flap

    def _require_openflow(self):
        of = self.openflow()
        if of is None:
            raise TimeoutError("OpenFlow side not running")
        return of

    def execute(self, commands) -> None:
        for cmd in commands:
            match cmd:
                case RunArgv():
                    self.run(self.where(cmd.node, list(cmd.argv)))
                case InstallRules():
                    self._require_openflow().install(cmd.switch, list(cmd.rules))
                case DeleteCookie():
                    self._require_openflow().delete_cookie(cmd.switch, cmd.cookie)
                case StartFlap():
                    self.start_flap(cmd)
                case CancelFlap():
                    self.cancel_flap(cmd)
                case _:
                    raise TypeError(f"not a command: {cmd!r}")
