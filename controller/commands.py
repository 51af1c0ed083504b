"""What the planner asks the executor to do, as plain values (nothing here runs anything).

RunArgv: one external command (ip, tc, nft, nsenter), run with its exit status checked, on the
    server of the node it concerns (`node`; None or a node of this machine: here).
InstallRules / DeleteCookie: OpenFlow flow mods to one switch, confirmed by a barrier.
StartFlap / CancelFlap: the flap scheduler's timers for one link.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from controller.routing import FlowRule


@dataclass(frozen=True)
class RunArgv:
    argv: tuple[str, ...]
    # where it runs, not what it does: two commands with the same argv are the same command
    node: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class InstallRules:
    switch: str
    rules: tuple[FlowRule, ...]


@dataclass(frozen=True)
class DeleteCookie:
    switch: str
    cookie: int


@dataclass(frozen=True)
class StartFlap:
    a: str
    b: str
    period_s: float
    count: int


@dataclass(frozen=True)
class CancelFlap:
    a: str
    b: str


Command = RunArgv | InstallRules | DeleteCookie | StartFlap | CancelFlap


def run_all(argvs, node: str | None = None) -> list[RunArgv]:
    """RunArgv of every argv list a controller.faults builder returned, each on `node`."""
    return [RunArgv(tuple(argv), node) for argv in argvs]
