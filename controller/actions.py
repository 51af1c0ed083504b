"""Fault actions as typed values: one frozen dataclass per fault kind.

The HTTP API takes JSON objects; controller.faults.validate checks them (and owns the error
messages). parse() turns a validated command into one of these values, which the planner
(controller.planner) matches on, and as_dict() gives back the normalized command for the fault
log and the API reply, so both look exactly like the validated JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Union

from controller import faults as F
from model import faults as R
from model.topology import Topology


@dataclass(frozen=True)
class _Action:
    name: ClassVar[str]

    def as_dict(self) -> dict:
        """The validated command: {"action": name, field: value, ...}."""
        return {"action": self.name, **{f.name: getattr(self, f.name) for f in fields(self)}}


@dataclass(frozen=True)
class _LinkAction(_Action):
    a: str
    b: str

    @property
    def pair(self) -> frozenset:
        return frozenset((self.a, self.b))


@dataclass(frozen=True)
class _DirectionalAction(_LinkAction):
    direction: str

    def directed_pairs(self) -> list[tuple[str, str]]:
        """(sender, receiver) of every direction this action touches."""
        return F.directed_pairs({"a": self.a, "b": self.b, "direction": self.direction})


@dataclass(frozen=True)
class _SwitchAction(_Action):
    a: str          # the switch; the API also accepts it as "node"


@dataclass(frozen=True)
class LinkDown(_LinkAction):
    name = "link_down"


@dataclass(frozen=True)
class LinkUp(_LinkAction):
    name = "link_up"


@dataclass(frozen=True)
class Flap(_LinkAction):
    name = "flap"
    period_s: float
    count: int


@dataclass(frozen=True)
class GrayLoss(_DirectionalAction):
    name = "gray_loss"
    percent: float


@dataclass(frozen=True)
class GrayLossClear(_DirectionalAction):
    name = "gray_loss_clear"


@dataclass(frozen=True)
class Degrade(_DirectionalAction):
    name = "degrade"
    fraction: float


@dataclass(frozen=True)
class DegradeClear(_DirectionalAction):
    name = "degrade_clear"


@dataclass(frozen=True)
class EcnMark(_DirectionalAction):
    name = "ecn_mark"
    rate_mbit: float


@dataclass(frozen=True)
class EcnClear(_DirectionalAction):
    name = "ecn_clear"


@dataclass(frozen=True)
class Blackhole(_SwitchAction):
    name = "blackhole"


@dataclass(frozen=True)
class BlackholeClear(_SwitchAction):
    name = "blackhole_clear"


FaultAction = Union[LinkDown, LinkUp, Flap, GrayLoss, GrayLossClear, Degrade, DegradeClear,
                    EcnMark, EcnClear, Blackhole, BlackholeClear]
# in the fault registry's order (model/faults.py); tests/model/test_faults.py checks that every
# registered action has its class here and its fields are the registry's parameters
BY_NAME: dict[str, type] = {
    name: cls for name in R.ACTIONS for cls in FaultAction.__args__ if cls.name == name}

# What clears a directional fault kind, as recorded in the planner's state ("active" keys).
CLEAR_OF_KIND: dict[str, type] = {k.action: BY_NAME[k.cleared_by] for k in R.KINDS
                                  if k.directional and k.cleared_by}


def from_validated(fault: dict) -> FaultAction:
    """The typed value of a command controller.faults.validate returned."""
    cls = BY_NAME[fault["action"]]
    return cls(**{f.name: fault[f.name] for f in fields(cls)})


def parse(cmd, topo: Topology) -> FaultAction:
    """Validate an API command (FaultError names what is wrong) and type it."""
    return from_validated(F.validate(cmd, topo))
