"""The one registry of fault kinds: every fact about a fault action that more than one part of
the project needs, so the controller, the scenario loader, the command line and the analysis
read one table instead of spelling the kinds out each.

Per kind (one FaultKind per action of the controller's fault API, POST /fault):
* action: its name in the API, the scenario files ([[faults]] action = ...) and the fault log;
* target: LINK (the command names the link's ends a and b) or NODE (a switch, given as a, or
  as node in the API and the scenario files);
* params: its own parameters (Param: type, range, default when optional, meaning), and among
  them which are TIMES (scaled x k by the time scale: time_params) and which are RATES
  (scaled / k: rate_params); a fraction of a link's rate is neither;
* clears / cleared_by: the fault a clear action ends, and the clear that ends a fault;
  needs_fault: the clear is refused unless its fault is in force on the same target;
* what recovery means for it: capacity (how the recovery metric's surviving capacity changes,
  analysis/recovery.py), window (the span over which it impairs a path, for judging EV
  retirements, analysis/retirements.py) and label (how figures name it, analysis/plots.py);
* nft_table: for a fault the controller applies as an nftables table per port, the table's
  name part;
* cli: the spelling of its `mrclab link` subcommand, where it has one (a clear of a kind
  without its own subcommand is `mrclab link clear WHAT`, clear_word).

Every action here is a fault the scenario asked for: a fault-log entry whose action is in
ACTIONS is measured for recovery and drawn; other entries (port status, flap steps) are not.

Pure: standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

# Targets
LINK = "link"       # a, b: the two ends of one link
NODE = "node"       # a (or node): one switch, and so every link of it

# Parameter types
NUMBER = "number"
INT = "int"
CHOICE = "choice"

# What a parameter's value is, for the time scale (model/timescale.py): a time is x k in the wall
# world, a rate / k; any other parameter means the same in both worlds.
TIME = "time"
RATE = "rate"

# capacity: how a fault-log entry changes the surviving capacity the recovery metric expects
CAP_ZERO = "zero"           # the target's links carry nothing
CAP_RESTORE = "restore"     # the target's links are back to their full rate
CAP_FRACTION = "fraction"   # the link keeps capacity_param's fraction of its rate
CAP_LOSS = "loss"           # the link is lost when capacity_param (a loss percentage) is high
CAP_NONE = None             # capacity unchanged (ECN marking delays nothing and drops nothing)

# window: the span over which a fault impairs the paths over its target
WIN_UNTIL_CLEAR = "until_clear"   # from the fault to its clear (or to the end of the run)
WIN_OWN = "own"                   # its own duration (duration_s)
WIN_NONE = None                   # it impairs no path (or, for a clear, ends its fault's window)

DIRECTIONS = ("a->b", "b->a", "both")


@dataclass(frozen=True)
class Param:
    """One parameter of a fault command. A number or int lies in lo..hi (lo excluded when
    lo_open); a choice is one of choices. Optional when default is not None."""
    name: str
    type: str
    meaning: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    unit: str = ""                  # printed after the range in messages ("s")
    choices: tuple = ()
    default: object = None
    scales_as: str | None = None    # TIME, RATE or None

    @property
    def required(self) -> bool:
        return self.default is None

    def range_text(self) -> str:
        """The range as messages and help texts print it: 0..100, (0, 1]."""
        if self.type == CHOICE:
            return ", ".join(self.choices)
        if self.lo_open:
            return f"({self.lo:g}, {self.hi:g}]"
        return f"{self.lo:g}..{self.hi:g}"

    def problem(self, value) -> str | None:
        """Why `value` is not valid for this parameter, or None."""
        if self.type == CHOICE:
            return None if value in self.choices else \
                f"must be one of {self.range_text()}, got {value!r}"
        unit = f" {self.unit}" if self.unit else ""
        if self.type == INT:
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not self.lo <= value <= self.hi:
                return f"must be an integer in {self.range_text()}{unit}, got {value!r}"
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            return f"must be a number, got {value!r}"
        value = float(value)
        above_lo = value > self.lo if self.lo_open else value >= self.lo
        if not above_lo or value > self.hi:
            return f"must be in {self.range_text()}{unit}, got {value!r}"
        return None


@dataclass(frozen=True)
class FaultKind:
    action: str
    meaning: str
    target: str                         # LINK or NODE
    params: tuple[Param, ...] = ()
    clears: str | None = None           # the fault action this one ends
    # a clear the controller refuses when its fault is not in force (a link_up is not: it
    # brings up a link whether or not a link_down took it down)
    needs_fault: bool = False
    capacity: str | None = CAP_NONE
    capacity_param: str | None = None   # the parameter CAP_FRACTION / CAP_LOSS read
    window: str | None = WIN_NONE
    impairs_param: str | None = None    # a value of 0 here impairs nothing (0 % loss)
    label: str | None = None            # figures' name of it; None: the action
    cli: str | None = None              # `mrclab link CLI`
    nft_table: str | None = None        # its nftables table: mrclab_<this>_<port> (controller)

    @property
    def cleared_by(self) -> str | None:
        """The clear action that ends this fault, or None."""
        return CLEARED_BY.get(self.action)

    @property
    def is_clear(self) -> bool:
        return self.clears is not None

    @property
    def nft_applied(self) -> bool:
        """Applied (or cleared) as one nftables table per port: such faults at one instant
        can go to the kernel as one nft transaction per network namespace."""
        return (BY_ACTION[self.clears] if self.clears else self).nft_table is not None

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)

    @property
    def optional(self) -> dict:
        """Optional parameter -> its default."""
        return {p.name: p.default for p in self.params if not p.required}

    @property
    def directional(self) -> bool:
        """It acts on the egress ports of the directions given by `direction`."""
        return "direction" in self.param_names

    @property
    def time_params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.scales_as == TIME)

    @property
    def rate_params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.scales_as == RATE)

    @property
    def clear_word(self) -> str | None:
        """WHAT of `mrclab link clear WHAT` for a clear without a subcommand of its own."""
        if self.is_clear and self.cli is None:
            return self.action.removesuffix("_clear")
        return None

    def display(self) -> str:
        return self.label or self.action

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def _direction(what: str) -> Param:
    return Param("direction", CHOICE, f"which direction of the link {what}: a->b, b->a or both",
                 choices=DIRECTIONS, default="both")


MIN_FLAP_PERIOD_S = 0.02
MAX_FLAP_PERIOD_S = 3600.0
MAX_FLAP_COUNT = 10000
MAX_ECN_RATE_MBIT = 100000.0

KINDS: tuple[FaultKind, ...] = (
    FaultKind("link_down", "take the link down (port-status events on its switch ends)", LINK,
              capacity=CAP_ZERO, window=WIN_UNTIL_CLEAR, label="down", cli="down"),
    FaultKind("link_up", "bring the link back up", LINK, clears="link_down",
              capacity=CAP_RESTORE, label="up", cli="up"),
    FaultKind("flap", "take the link down for half a period, then up, count times", LINK, (
        Param("period_s", NUMBER, "one down/up cycle, seconds", MIN_FLAP_PERIOD_S,
              MAX_FLAP_PERIOD_S, unit="s", scales_as=TIME),
        Param("count", INT, "down/up cycles", 1, MAX_FLAP_COUNT)),
        capacity=CAP_ZERO, window=WIN_OWN, cli="flap"),
    FaultKind("gray_loss", "drop a percentage of the packets silently (no carrier change)", LINK, (
        Param("percent", NUMBER, "packets dropped, percent", 0, 100),
        _direction("drops")),
        capacity=CAP_LOSS, capacity_param="percent", window=WIN_UNTIL_CLEAR,
        impairs_param="percent", cli="loss", nft_table="loss"),
    FaultKind("gray_loss_clear", "end a gray loss", LINK, (_direction("stops dropping"),),
              clears="gray_loss", needs_fault=True, capacity=CAP_RESTORE),
    FaultKind("blackhole", "the switch silently drops everything (no port goes down)", NODE,
              capacity=CAP_ZERO, window=WIN_UNTIL_CLEAR, cli="blackhole"),
    FaultKind("blackhole_clear", "end a blackhole", NODE, clears="blackhole", needs_fault=True,
              capacity=CAP_RESTORE),
    FaultKind("degrade", "shape the link to a fraction of its rate", LINK, (
        Param("fraction", NUMBER, "fraction of the link rate kept", 0, 1, lo_open=True),
        _direction("is shaped")),
        capacity=CAP_FRACTION, capacity_param="fraction", window=WIN_UNTIL_CLEAR, cli="degrade"),
    FaultKind("degrade_clear", "give the link its full rate back", LINK,
              (_direction("is restored"),), clears="degrade", needs_fault=True,
              capacity=CAP_RESTORE),
    FaultKind("ecn_mark", "mark CE on ECN-capable packets above a rate", LINK, (
        Param("rate_mbit", NUMBER, "rate above which packets are CE-marked, Mbit/s", 0,
              MAX_ECN_RATE_MBIT, lo_open=True, scales_as=RATE),
        _direction("marks")),
        cli="ecn", nft_table="ecn"),
    FaultKind("ecn_clear", "stop ECN marking", LINK, (_direction("stops marking"),),
              clears="ecn_mark", needs_fault=True),
)

BY_ACTION: dict[str, FaultKind] = {k.action: k for k in KINDS}
ACTIONS: tuple[str, ...] = tuple(BY_ACTION)
# clear action -> the fault it ends, and the reverse
CLEARS: dict[str, str] = {k.action: k.clears for k in KINDS if k.clears}
CLEARED_BY: dict[str, str] = {fault: clear for clear, fault in CLEARS.items()}
NODE_ACTIONS: tuple[str, ...] = tuple(k.action for k in KINDS if k.target == NODE)
# every parameter name that is a time / a rate in some kind
TIME_PARAMS: tuple[str, ...] = tuple(dict.fromkeys(n for k in KINDS for n in k.time_params))
RATE_PARAMS: tuple[str, ...] = tuple(dict.fromkeys(n for k in KINDS for n in k.rate_params))
BY_CLI: dict[str, FaultKind] = {k.cli: k for k in KINDS if k.cli}
BY_CLEAR_WORD: dict[str, FaultKind] = {k.clear_word: k for k in KINDS if k.clear_word}


def kind(action: str) -> FaultKind:
    """The kind of `action`; KeyError for an action that is not a fault."""
    return BY_ACTION[action]


def time_params_of(cmd: Mapping) -> tuple[str, ...]:
    """The time-valued parameters a fault command carries (none for an unknown action)."""
    k = BY_ACTION.get(cmd.get("action"))
    return tuple(n for n in k.time_params if n in cmd) if k else ()


def rate_params_of(cmd: Mapping) -> tuple[str, ...]:
    """The rate-valued parameters a fault command carries (none for an unknown action)."""
    k = BY_ACTION.get(cmd.get("action"))
    return tuple(n for n in k.rate_params if n in cmd) if k else ()


def target_of(cmd: Mapping):
    """What a command acts on: the switch's name for a node fault, else the link's ends as a
    frozenset (so a clear given b~a matches its fault given a~b)."""
    k = BY_ACTION.get(cmd.get("action"))
    if k is not None and k.target == NODE:
        return cmd.get("node") or cmd.get("a")
    return frozenset((cmd.get("a"), cmd.get("b")))


def window_closed_by(action: str) -> str | None:
    """The fault whose impairment window a clear action ends (None when it ends none)."""
    fault = CLEARS.get(action)
    return fault if fault is not None and BY_ACTION[fault].window == WIN_UNTIL_CLEAR else None


def own_window_ns(cmd: Mapping) -> int:
    """How long a WIN_OWN fault (a flap) impairs its link, ns: down for half a period, then up,
    `count` times, so from the first down to the last up (controller/faults.flap_schedule)."""
    period_ns = int(float(cmd.get("period_s", 0)) * 1e9)
    return (2 * int(cmd.get("count", 1)) - 1) * period_ns // 2
