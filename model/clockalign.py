"""Clock alignment of a cluster run's servers: each server's monotonic clock against the
controller's (the reference), from NTP-style ping-pong exchanges over the management network,
at the start and at the end of the run. The runner measures; the analysis applies the result
when it merges logs and captures, and the fidelity monitor judges its bound.

One exchange (the on-wire arithmetic of NTP, RFC 5905):
    t0  the controller sends        (reference clock)
    t1  the server receives         (server clock)
    t2  the server answers          (server clock)
    t3  the controller receives     (reference clock)
  offset = ((t1 - t0) + (t2 - t3)) / 2     the server's clock minus the reference's
  delay  = (t3 - t0) - (t2 - t1)            the round trip, less the server's own time
Whatever the split of the round trip between the two directions (each at least 0), the true
offset lies within delay / 2 of the estimate: delay / 2 is its error bound. Of several
exchanges the one with the smallest delay is kept (NTP's clock filter): queueing only adds
delay, so the fastest exchange has the tightest bound.

Start and end: the two estimates give the drift (end offset minus start offset) and its rate; a
server time maps to the reference by the offset interpolated linearly between them, held at the
nearer one outside the interval. The offset's path between the two measurements is not seen;
while it stays between the two measured values, the interpolated offset is off by at most the
drift's size plus the larger error bound: bound_ns.

The bound a run is judged by, CLOCK_BOUND_RTTS base RTTs per server: two servers' times, each
off by less than a quarter of a base RTT, are off against each other by less than half of one,
which is less than any packet's one-way trip; so in the merged timeline no packet arrives on one
server before it left another.

Pure: integer nanoseconds in; offsets as floats (a half nanosecond is exact).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CLOCK_BOUND_RTTS = 0.25
PPM = 1e6
# A transport's run directory file: {server: Alignment.to_dict()} of every other server, written
# when the run's files are collected and read by the fidelity monitor (analysis/fidelity.py).
CLOCKS_FILE = "clocks.json"


class ClockError(ValueError):
    """Exchanges or a recorded alignment that cannot be used; the message names the value."""


def _ns(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ClockError(f"{name} must be an integer number of nanoseconds, got {value!r}")
    return value


@dataclass(frozen=True)
class Exchange:
    """One ping-pong: t0, t3 on the reference clock, t1, t2 on the server's."""
    t0: int
    t1: int
    t2: int
    t3: int

    def __post_init__(self) -> None:
        for name in ("t0", "t1", "t2", "t3"):
            _ns(name, getattr(self, name))
        if self.t3 < self.t0:
            raise ClockError(f"the answer came back (t3 = {self.t3}) before the request left "
                             f"(t0 = {self.t0})")
        if self.t2 < self.t1:
            raise ClockError(f"the server answered (t2 = {self.t2}) before it received "
                             f"(t1 = {self.t1})")
        if self.delay_ns < 0:
            raise ClockError(f"the server's time between receiving and answering "
                             f"({self.t2 - self.t1} ns) exceeds the round trip "
                             f"({self.t3 - self.t0} ns)")

    @property
    def offset_ns(self) -> float:
        return ((self.t1 - self.t0) + (self.t2 - self.t3)) / 2

    @property
    def delay_ns(self) -> int:
        return (self.t3 - self.t0) - (self.t2 - self.t1)

    @property
    def at_ns(self) -> float:
        """The reference time the exchange stands for: the middle of its round trip."""
        return (self.t0 + self.t3) / 2


@dataclass(frozen=True)
class Estimate:
    offset_ns: float        # server minus reference
    error_ns: float         # |true offset - offset_ns| <= error_ns
    at_ns: float            # on the reference clock
    exchanges: int = 1      # how many the estimate was chosen from


def estimate(exchanges) -> Estimate:
    """The offset of the exchange with the smallest delay, its error bound delay / 2."""
    items = [e if isinstance(e, Exchange) else Exchange(*e) for e in exchanges]
    if not items:
        raise ClockError("no exchanges: the offset needs at least one ping-pong")
    best = min(items, key=lambda e: e.delay_ns)
    return Estimate(best.offset_ns, best.delay_ns / 2, best.at_ns, len(items))


@dataclass(frozen=True)
class Alignment:
    """A server's clock against the reference, measured at the start and at the end of a run."""
    start: Estimate
    end: Estimate

    def __post_init__(self) -> None:
        if self.end.at_ns <= self.start.at_ns:
            raise ClockError(f"the end measurement (at {self.end.at_ns:.0f} ns) must come after "
                             f"the start's (at {self.start.at_ns:.0f} ns)")

    @property
    def drift_ns(self) -> float:
        return self.end.offset_ns - self.start.offset_ns

    @property
    def drift_ppm(self) -> float:
        """The server clock's rate against the reference's, parts per million."""
        return self.drift_ns / (self.end.at_ns - self.start.at_ns) * PPM

    @property
    def bound_ns(self) -> float:
        """How far a time mapped by to_reference_ns may be off (module docstring)."""
        return max(self.start.error_ns, self.end.error_ns) + abs(self.drift_ns)

    def offset_at(self, reference_ns: float) -> float:
        span = self.end.at_ns - self.start.at_ns
        frac = min(1.0, max(0.0, (reference_ns - self.start.at_ns) / span))
        return self.start.offset_ns + self.drift_ns * frac

    def to_reference_ns(self, server_ns: int) -> int:
        """A time of the server's clock on the reference clock, to the nearest ns."""
        return round(server_ns - self.offset_at(server_ns - self.start.offset_ns))

    def to_dict(self) -> dict:
        """As run.json records it."""
        return {"start": vars(self.start), "end": vars(self.end), "drift_ns": self.drift_ns,
                "drift_ppm": self.drift_ppm, "bound_ns": self.bound_ns}

    @classmethod
    def from_dict(cls, data) -> "Alignment":
        """The alignment of to_dict(); ClockError naming the field when it is not one."""
        if not isinstance(data, dict):
            raise ClockError(f"a clock alignment must be a table, got {data!r}")
        parts = []
        for name in ("start", "end"):
            part = data.get(name)
            if not isinstance(part, dict):
                raise ClockError(f"clock alignment: {name} must be a table, got {part!r}")
            values = []
            for key in ("offset_ns", "error_ns", "at_ns"):
                value = part.get(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                        not math.isfinite(value):
                    raise ClockError(f"clock alignment: {name}.{key} must be a number, got "
                                     f"{value!r}")
                values.append(float(value))
            if values[1] < 0:
                raise ClockError(f"clock alignment: {name}.error_ns must be >= 0, got "
                                 f"{values[1]!r}")
            count = part.get("exchanges", 1)
            count = count if isinstance(count, int) and not isinstance(count, bool) else 1
            parts.append(Estimate(*values, exchanges=max(1, count)))
        return cls(*parts)


def alignments_from_dict(data) -> dict[str, Alignment]:
    """{server: Alignment} of a CLOCKS_FILE's content; ClockError naming the server whose entry
    is not one."""
    if not isinstance(data, dict):
        raise ClockError(f"the clocks must be a table of servers, got {type(data).__name__}")
    out = {}
    for server, entry in data.items():
        try:
            out[server] = Alignment.from_dict(entry)
        except ClockError as exc:
            raise ClockError(f"server {server}: {exc}") from None
    return out


def align(start_exchanges, end_exchanges) -> Alignment:
    return Alignment(estimate(start_exchanges), estimate(end_exchanges))


def worst_bound_rtts(alignments: dict, base_rtt_ns: float) -> tuple[str | None, float]:
    """(server, its bound in base RTTs) of the server whose alignment is least certain, to set
    against CLOCK_BOUND_RTTS; (None, 0.0) for a run on one machine."""
    if not base_rtt_ns > 0:
        raise ClockError(f"the base RTT must be > 0 ns, got {base_rtt_ns!r}")
    if not alignments:
        return None, 0.0
    server = max(alignments, key=lambda s: alignments[s].bound_ns)
    return server, alignments[server].bound_ns / base_rtt_ns
