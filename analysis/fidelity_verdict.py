"""The fidelity monitor's verdicts: the names of its invariants, one invariant's verdict from
measured / bound (Check, severity), and a transport's `fidelity` object from its checks
(assemble).

Apart from analysis/fidelity.py because the verdict rules (ok / degraded / invalid, the worst
invariant decides, nothing measured means degraded) are the same whatever measured the
invariants; fidelity.py and fidelity_captures.py measure them. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass


OK, DEGRADED, INVALID = "ok", "degraded", "invalid"
VERDICTS = (OK, DEGRADED, INVALID)
# A bound exceeded by at most this factor leaves figures that are off, but in the right order of
# magnitude ("degraded": read with care); more, and the machine set them ("invalid").
DEGRADED_MAX_RATIO = 2.0
# margins (bound / observed value) are capped here, so an observed 0 stays a finite JSON number.
MARGIN_CAP = 1000.0

TIMER_LATENESS = "timer_lateness"
RECEIVE_LATENESS = "receive_lateness"
WORKER_LATENESS = "worker_lateness"
HELD_BEYOND_QUEUE = "held_beyond_queue_bound"
LINK_PACING = "link_pacing"
OVS_STALLS = "ovs_stalls"
RECOVERY_WINDOWS = "recovery_window_stalls"
FABRIC_PACING = "fabric_link_pacing"      # T0-T1 links: named, no evidence exists (docs/fidelity.md)
CLOCK_ALIGNMENT = "clock_alignment"       # a run over servers: their clocks against this one's
INVARIANTS = (TIMER_LATENESS, RECEIVE_LATENESS, WORKER_LATENESS, HELD_BEYOND_QUEUE, LINK_PACING,
              OVS_STALLS, RECOVERY_WINDOWS, FABRIC_PACING, CLOCK_ALIGNMENT)


def severity(ratio: float) -> str:
    """ok / degraded / invalid of one invariant from measured / bound."""
    if ratio <= 1.0:
        return OK
    return DEGRADED if ratio <= DEGRADED_MAX_RATIO else INVALID


def worst(verdicts) -> str:
    verdicts = list(verdicts)
    return max(verdicts, key=VERDICTS.index) if verdicts else OK


@dataclass
class Check:
    """One invariant measured: `measured` and `bound` in `unit`; `reason` says why the bound."""

    invariant: str
    measured: float
    bound: float
    unit: str
    reason: str

    @property
    def ratio(self) -> float:
        return self.measured / self.bound

    @property
    def verdict(self) -> str:
        return severity(self.ratio)

    @property
    def margin(self) -> float:
        return MARGIN_CAP if self.measured <= 0 else min(MARGIN_CAP, self.bound / self.measured)

    def violation(self) -> dict:
        return {"invariant": self.invariant, "measured": _round(self.measured),
                "bound": self.bound, "unit": self.unit, "ratio": _round(self.ratio),
                "severity": self.verdict, "reason": self.reason}


def _round(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def assemble(checks: list[Check], measurements: dict, unmeasured: dict,
             problems: list[str] | None = None) -> dict:
    """The `fidelity` object from the checks made and the invariants left unmeasured."""
    violations = [c.violation() for c in checks if c.verdict != OK]
    if checks:
        verdict = worst(c.verdict for c in checks)
    else:
        verdict = DEGRADED
        violations.append({"invariant": "evidence", "reason": "no invariant could be measured: "
                           "nothing vouches for this run's figures"})
    out = {"verdict": verdict, "violations": violations, "measurements": measurements,
           "margins": {c.invariant: _round(c.margin) for c in checks},
           "unmeasured": unmeasured}
    if problems:
        out["problems"] = problems[:10]
    return out
