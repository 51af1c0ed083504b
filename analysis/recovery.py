"""Recovery time: THE one definition, used by the runner's summary, the analysis and the plots.

    recovery time = time from the fault's timestamp until the goodput stays >= 90% of what the
    surviving capacity allows, for a sustained window; None (null) if that never happens
    before the next fault or the end of the traffic.

Concretely (all parameters are keyword arguments with these defaults):
- Goodput is measured from cumulative byte samples (t_ns, bytes) (the workers' `goodput` events,
  every 10 ms, summed over hosts) as the average rate over a sliding window of `window_ms` = 100 ms,
  evaluated every `step_ms` = 10 ms. 100 ms spans several ring steps, so the idle gaps between
  a collective's steps do not read as outages, while the error on a recovery time is at most
  ~10% of the window (10 ms).
- For a collective the window is one typical iteration (collective_windows: the median
  iteration time, at least 100 ms) and the hold at least one window: a collective's goodput is
  periodic with its iterations (ring steps, then the verification and the start of the next
  iteration), so a window shorter than an iteration reads the gaps between phases as outages and
  a transport that never stalls would "never recover". The error on a recovery time stays about
  10% of that window; the runner and the analysis derive the window the same way.
- "Stays" means: the window starting at t and every window starting in (t, t + hold_ms]
  (hold_ms = 500 ms) are all >= threshold * expected. The hold is cut short by the end of the
  evaluation span (next fault or end of traffic), but at least one whole window must fit.
  The recovery time is t - fault_t.
- "What the surviving capacity allows" (expected_bps) is estimated as the healthy pre-fault
  steady goodput (median of the windows before the first fault, steady_goodput_bps) times the
  fraction of the collective's top rate the surviving fabric still allows
  (surviving_capacity_fraction): the collectives here are capacity-bound (back-to-back
  iterations over HTB-limited links), so goodput scales with the capacity of the collective's
  tightest cut, weighed by the traffic that crosses it (the collective's demand). A fault on a
  cut the collective never filled leaves the whole rate allowed: asking only for the lost
  share of that cut would let goodput read above 100% of "allowed" and a stalled transport
  pass the bar early. Without a demand, every cut counts as full (never asks for more than the
  surviving fabric can carry). A restore (link_up, *_clear) is measured the same way against
  the capacity after it.
Pure: no I/O, no sockets.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from model import faults as fault_kinds

DEFAULT_THRESHOLD = 0.9
DEFAULT_WINDOW_MS = 100.0
DEFAULT_HOLD_MS = 500.0
DEFAULT_STEP_MS = 10.0
# Loss below this percentage leaves a link "usable" for capacity purposes (random-loss
# scenarios: a healthy transport should keep almost all of the rate); above it, a transport
# is expected to route around the link, so it counts as lost capacity.
GRAY_LOSS_UNUSABLE_PERCENT = 5.0

MS = 1_000_000


def _as_arrays(samples: Iterable[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(list(samples), dtype=np.float64).reshape(-1, 2)
    if len(arr) and np.any(np.diff(arr[:, 0]) < 0):
        order = np.argsort(arr[:, 0], kind="stable")
        arr = arr[order]
    return arr[:, 0], arr[:, 1]


def window_rates(samples, start_ns: float, end_ns: float, *, window_ms: float = DEFAULT_WINDOW_MS,
                 step_ms: float = DEFAULT_STEP_MS) -> tuple[np.ndarray, np.ndarray]:
    """(window start times, bytes/s over [start, start + window]) for windows fully inside
    [start_ns, end_ns] and inside the sampled span. Cumulative bytes are interpolated linearly."""
    t, cum = _as_arrays(samples)
    window_ns, step_ns = window_ms * MS, step_ms * MS
    if len(t) < 2:
        return np.empty(0), np.empty(0)
    lo, hi = max(start_ns, t[0]), min(end_ns, t[-1]) - window_ns
    if hi < lo:
        return np.empty(0), np.empty(0)
    starts = np.arange(lo, hi + 1, step_ns)
    rates = (np.interp(starts + window_ns, t, cum) - np.interp(starts, t, cum)) / (window_ns / 1e9)
    return starts, rates


def collective_windows(iteration_ms: Iterable[float]) -> dict:
    """{"window_ms", "hold_ms"} for a run whose iterations took iteration_ms (see the module
    docstring); the defaults when no iteration time is known."""
    vals = [float(x) for x in iteration_ms if x is not None and float(x) > 0]
    if not vals:
        return {"window_ms": DEFAULT_WINDOW_MS, "hold_ms": DEFAULT_HOLD_MS}
    window = max(DEFAULT_WINDOW_MS, float(np.median(vals)))
    return {"window_ms": window, "hold_ms": max(DEFAULT_HOLD_MS, window)}


def iteration_spans_ms(iterations: Iterable[tuple]) -> list[float]:
    """Duration of each collective iteration from (iter, start_ns, end_ns) records of every
    rank: from the first rank's start to the last rank's end."""
    spans: dict = {}
    for it, start, end in iterations:
        lo, hi = spans.get(it, (start, end))
        spans[it] = (min(lo, start), max(hi, end))
    return [(hi - lo) / 1e6 for _, (lo, hi) in sorted(spans.items())]


def steady_goodput_bps(samples, start_ns: float, end_ns: float, **kw) -> float | None:
    """Median windowed goodput over [start_ns, end_ns]; None if no window fits."""
    _, rates = window_rates(samples, start_ns, end_ns, **kw)
    return float(np.median(rates)) if len(rates) else None


def recovery_time_ms(samples, fault_t_ns: float, expected_bps: float, *,
                     until_ns: float | None = None, threshold: float = DEFAULT_THRESHOLD,
                     window_ms: float = DEFAULT_WINDOW_MS, hold_ms: float = DEFAULT_HOLD_MS,
                     step_ms: float = DEFAULT_STEP_MS) -> float | None:
    """Milliseconds from fault_t_ns until goodput stays >= threshold * expected_bps (see the
    module docstring); None if never within [fault_t_ns, until_ns] (default: last sample).

    samples: (t_ns, cumulative bytes) pairs. expected_bps: bytes/s the surviving capacity allows.
    """
    if expected_bps is None or expected_bps <= 0:
        raise ValueError(f"expected_bps must be > 0, got {expected_bps!r}")
    t, _ = _as_arrays(samples)
    if len(t) < 2:
        return None
    end = t[-1] if until_ns is None else min(until_ns, t[-1])
    starts, rates = window_rates(samples, fault_t_ns, end, window_ms=window_ms, step_ms=step_ms)
    if not len(starts):
        return None
    good = rates >= threshold * expected_bps
    hold_steps = int(round(hold_ms / step_ms))
    # bad_after[i] = number of bad windows in starts[i:]
    bad_after = np.concatenate([np.cumsum(~good[::-1])[::-1], [0]])
    for i in np.flatnonzero(good):
        j = min(len(good), i + hold_steps + 1)
        if bad_after[i] - bad_after[j] == 0:
            return float((starts[i] - fault_t_ns) / MS)
    return None


def aggregate_cumulative(per_host: Mapping[str, Sequence[Sequence[float]]], *,
                         step_ms: float = DEFAULT_STEP_MS) -> list[tuple[float, float]]:
    """Sum several hosts' cumulative byte series onto one time grid (each host interpolated;
    before its first sample a host counts 0, after its last it keeps its last value)."""
    series = [_as_arrays(s) for s in per_host.values() if len(s)]
    if not series:
        return []
    t0 = min(t[0] for t, _ in series)
    t1 = max(t[-1] for t, _ in series)
    grid = np.arange(t0, t1 + 1, step_ms * MS)
    if grid[-1] < t1:
        grid = np.append(grid, t1)
    total = np.zeros(len(grid))
    for t, cum in series:
        total += np.interp(grid, t, cum, left=0.0, right=cum[-1])
    return list(zip(grid.tolist(), total.tolist()))


def _cuts(topology) -> list[tuple[list, frozenset[str]]]:
    """(links, hosts on the inside) of every cut the capacity model considers: each host's NIC
    ports (all planes), and, with more than one group, each group's T0 uplinks (all planes and
    spines), which every cross-group byte must cross."""
    cuts = [(list(topology.links_of(h.name)), frozenset((h.name,))) for h in topology.hosts]
    if topology.spec.groups > 1:
        for g in range(topology.spec.groups):
            links = [lk for lk in topology.links if lk.kind == "fabric"
                     and topology.switches[lk.a].index == g]
            cuts.append((links, frozenset(h.name for h in topology.hosts if h.group == g)))
    return cuts


def surviving_capacity_fraction(topology, link_capacity: Mapping[tuple[str, str], float],
                                demand: Mapping[tuple[str, str], float] | None = None) -> float:
    """Fraction of the healthy goodput the surviving fabric still allows.

    topology: model.topology.Topology. link_capacity: (a, b) -> remaining fraction of that
    link's rate (0 = down/unusable, 1 = healthy; missing = 1), either order of a/b.
    demand: (src host, dst host) -> relative rate of each flow of the collective
    (analysis.flows.collective_demand). With it, the collective's top rate is that of its
    tightest cut (the cut's capacity over the demand crossing it, each direction, for each cut
    of _cuts), and the fraction is the top rate after the faults over the top rate before,
    at most 1: a link lost on a cut the collective does not fill costs it nothing (a ring's
    one cross-group hop does not need all four uplinks of its group). Without it, every cut
    counts as full, and the fraction is that of the cut that lost the most.
    """
    remaining = {}
    for (a, b), frac in link_capacity.items():
        if not 0 <= frac <= 1:
            raise ValueError(f"capacity fraction of link {a}~{b} must be in [0, 1], got {frac}")
        remaining[frozenset((a, b))] = frac

    def left(link, state) -> float:
        return link.mbit * state.get(frozenset(link.ends()), 1.0)

    cuts = _cuts(topology)
    if demand is None:
        return min(sum(left(lk, remaining) for lk in links) / sum(lk.mbit for lk in links)
                   for links, _ in cuts)

    def top_rate(state) -> float:
        rate = float("inf")
        for links, inside in cuts:
            cap = sum(left(lk, state) for lk in links)
            out = sum(w for (s, d), w in demand.items() if s in inside and d not in inside)
            into = sum(w for (s, d), w in demand.items() if d in inside and s not in inside)
            rate = min([rate] + [cap / load for load in (out, into) if load > 0])
        return rate

    healthy = top_rate({})
    if not 0 < healthy < float("inf"):        # no cut carries the collective: nothing to lose
        return 1.0
    return min(1.0, top_rate(remaining) / healthy)


def apply_fault_to_capacity(topology, link_capacity: dict, fault: Mapping) -> dict:
    """The link-capacity state after one fault-log entry (a new dict; input unchanged).
    Actions as in the controller's fault API; each changes capacity as the fault registry's
    `capacity` says (model/faults.py); unknown actions leave capacity unchanged."""
    state = dict(link_capacity)
    kind = fault_kinds.BY_ACTION.get(fault.get("action"))
    if kind is None or kind.capacity is fault_kinds.CAP_NONE:
        return state
    a, b = fault.get("a"), fault.get("b")

    def drop_equivalent_keys(pair):
        for k in [k for k in state if frozenset(k) == frozenset(pair)]:
            del state[k]

    if kind.target == fault_kinds.NODE:     # every link of the switch
        targets = [link.ends() for link in topology.links_of(fault.get("node") or a)]
    else:
        targets = [(a, b)]
    for key in targets:
        drop_equivalent_keys(key)
        if kind.capacity == fault_kinds.CAP_ZERO:
            state[key] = 0.0
        elif kind.capacity == fault_kinds.CAP_LOSS:
            if float(fault.get(kind.capacity_param, 100)) >= GRAY_LOSS_UNUSABLE_PERCENT:
                state[key] = 0.0
        elif kind.capacity == fault_kinds.CAP_FRACTION:
            state[key] = max(0.0, min(1.0, float(fault.get(kind.capacity_param, 1.0))))
    return state
