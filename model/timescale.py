"""The time scale: `[fabric] time_scale = k` runs the emulated world k times slower than the wall
clock, so a machine too slow for the declared link rates still keeps up (time dilation, the idea
of DieCast, Gupta et al., NSDI 2008). This module is the one place that converts a quantity
between the two worlds; every other module reads k and passes it here.

Two directions:
  forward: emulated -> wall (the scenario as declared -> what the fabric and the endpoints run):
           wall_time(), wall_ns(), wall_rate();
  back:    wall -> emulated (a run's logs and captures -> the scenario's own world):
           emulated_time(), emulated_ns(), emulated_rate().
convert() is the same by a declared kind and direction, scale_params() for a table of named
parameters (a fault command, a log record).

What scales, the one rule:
  - a TIME (a duration or an instant, in any unit): forward x k, back / k. The emulated world
    runs k times slower, so everything in it lasts k times longer on the wall clock;
  - a RATE (anything per second: Mbit/s, bit/s, packets or events per second): forward / k,
    back x k. The same bytes take k times longer on the wall clock;
  - everything else is unchanged: bytes, counts, ratios, and times counted in base RTTs (the
    base RTT is taken in the world the timer runs in, so they scale by themselves).
A quantity's kind is declared (TIME, RATE) or, for named parameters, read off its name by
kind_of(): a name ending in one of RATE_SUFFIXES is a rate, else one ending in one of
TIME_SUFFIXES is a time, else it does not scale. Rates are matched first because `_per_s` also
ends in `_s`. Declared lists of time and rate names, when a caller has them, replace the suffix
rule (scale_params).

Numbers: the arithmetic is plain float arithmetic (an int setting of 3 ms at k = 2.5 is
7.5 ms: a time in ms or s is not rounded, nor is a rate). Only a time in nanoseconds, the
finest unit here, is kept whole: wall_ns() and emulated_ns() round to the nearest ns (the same
rounding both ways, so forward then back gives the int back), an integer array of ns (numpy,
pandas) keeps its dtype, and scale_params keeps an int under a `*_ns` name whole. None (a
setting left unset) stays None; k = 1 gives every value back as it is.

k itself: check() is the one test of a time scale, a number in 1..MAX_SCALE (never a bool), and
every conversion here applies it.

Pure standard library.
"""
from __future__ import annotations

import math

TIME = "time"
RATE = "rate"
FORWARD = "forward"
BACK = "back"
TIME_SUFFIXES = ("_s", "_ms", "_us", "_ns")
RATE_SUFFIXES = ("_mbit", "_bps", "_per_s")


# A time scale beyond this would stretch a 1 s fault schedule past 17 minutes: not meant, and a
# run's file claiming one (1e308 would make every time of it 0) is not a run's.
MAX_SCALE = 1000


class TimeScaleError(ValueError):
    """A time scale that cannot be applied; the message names the value."""


def check(k) -> float:
    """k as a float, or a TimeScaleError: a time scale is a number in 1..MAX_SCALE (the emulated
    world runs k times slower than the wall clock, never faster); a bool is not a number here."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k):
        raise TimeScaleError(f"time_scale must be a finite number >= 1, got {k!r}")
    if k < 1:
        raise TimeScaleError(f"time_scale must be >= 1 (the emulated world runs k times slower "
                             f"than the wall clock, never faster), got {k!r}")
    if k > MAX_SCALE:
        raise TimeScaleError(f"time_scale must be at most {MAX_SCALE}, got {k!r}")
    return float(k)


def kind_of(name: str, time_params=None, rate_params=None) -> str | None:
    """TIME, RATE or None (does not scale) for a parameter called `name`. time_params and
    rate_params, when given, are the declared names of that kind and replace the suffix rule
    for it."""
    if rate_params is not None and name in rate_params:
        return RATE
    if name.endswith(RATE_SUFFIXES):
        # a rate name is never a time, even when the declared rates leave it out
        return RATE if rate_params is None else None
    if time_params is not None:
        return TIME if name in time_params else None
    return TIME if name.endswith(TIME_SUFFIXES) else None


def convert(value, kind: str, k, direction: str):
    """`value` of `kind` (TIME or RATE) moved `direction` (FORWARD: emulated -> wall, BACK:
    wall -> emulated) under time scale k."""
    k = check(k)
    if kind not in (TIME, RATE):
        raise ValueError(f"kind must be {TIME!r} or {RATE!r}, got {kind!r}")
    _check_direction(direction)
    if value is None or k == 1.0:
        return value
    if isinstance(value, (bool, str)):
        raise TypeError(f"a {kind} to scale must be a number, got {value!r}")
    return _scaled(value, kind, k, direction)


def _check_direction(direction: str) -> None:
    if direction not in (FORWARD, BACK):
        raise ValueError(f"direction must be {FORWARD!r} or {BACK!r}, got {direction!r}")


def _scaled(value, kind: str, k: float, direction: str):
    """The arithmetic, for a checked k: a time grows on the way to the wall world, a rate on
    the way back."""
    grows = (kind == TIME) == (direction == FORWARD)
    return value * k if grows else value / k


def _whole_ns(scaled, value):
    """`scaled` (from `value`, a time in ns) as whole ns: an int, or an integer array in the
    dtype it came in."""
    if isinstance(value, int):
        return int(round(scaled))
    if scaled is None:
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return scaled.round().astype(dtype) if getattr(dtype, "kind", "") in ("i", "u") \
            else scaled
    return int(round(scaled))


def wall_time(t, k):
    """An emulated time (any unit) in the wall world: x k."""
    return convert(t, TIME, k, FORWARD)


def wall_ns(t, k):
    """An emulated time in ns in the wall world: x k, whole ns."""
    return _whole_ns(convert(t, TIME, k, FORWARD), t)


def wall_rate(rate, k):
    """An emulated rate (any unit per second) in the wall world: / k."""
    return convert(rate, RATE, k, FORWARD)


def emulated_time(t, k):
    """A wall-clock time (any unit) in the emulated world: / k."""
    return convert(t, TIME, k, BACK)


def emulated_ns(t, k):
    """A wall-clock time in ns in the emulated world: / k, whole ns."""
    return _whole_ns(convert(t, TIME, k, BACK), t)


def emulated_rate(rate, k):
    """A wall-clock rate (any unit per second) in the emulated world: x k."""
    return convert(rate, RATE, k, BACK)


def scale_params(params: dict, k, time_params=None, rate_params=None,
                 direction: str = FORWARD) -> dict:
    """A copy of `params` with every number under a time or rate name (kind_of, with the
    declared lists when given) moved `direction`, an int under a `*_ns` name kept whole; other
    values (bools, strings, None, tables) as they are."""
    k = check(k)
    _check_direction(direction)
    out = dict(params)
    if k == 1.0:
        return out
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        kind = kind_of(name, time_params, rate_params)
        if kind is None:
            continue
        scaled = _scaled(value, kind, k, direction)
        whole = kind == TIME and isinstance(value, int) and name.endswith("_ns")
        out[name] = _whole_ns(scaled, value) if whole else scaled
    return out
