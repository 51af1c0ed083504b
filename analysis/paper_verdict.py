"""Whether a sweep's curves agree with what the paper says, decided by their 95% intervals
(analysis/sweep_stats.py), so that no verdict on the results page is written by hand.

A claim (a sweep file's [[paper]] entry, emulation/config/sweep_plan.py) names a metric, the
direction the paper expects ("lower" or "higher") and what is compared:

* "transports": the reference transport (the first of the claim's `transports`, by default
  the sweep's) against each other one of them at
  each x of `at` (default every x run), within each group (the same values of the grid keys
  other than x);
* "x": within each series of the claim's transports, the metric at the second x of `at`
  against the first (default the last x run against the first): a trend along the curve.

One comparison of two points says:

* "agrees" when both 95% intervals exist, do not overlap and lie in the order the paper expects;
* "disagrees" when they do not overlap and lie in the other order;
* "cannot be told apart" when they overlap, or when either point has no interval (a single
  run), is not trusted (a repeat's fidelity verdict is not "ok": its number measured this
  machine's CPU, not the fabric) or was not run.

A figure disagrees when any of its comparisons disagrees, agrees when every one agrees, and
otherwise cannot be told apart: a point that cannot speak never makes a figure agree.
"""
from __future__ import annotations

from dataclasses import dataclass

AGREES, DISAGREES, UNDECIDED = "agrees", "disagrees", "cannot be told apart"
TRANSPORTS, ALONG_X = "transports", "x"


@dataclass(frozen=True)
class Comparison:
    what: str       # which two points, in words
    verdict: str
    why: str        # the intervals, or why they cannot decide


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _speaks(rec: dict | None, metric: str) -> str | None:
    """Why this point cannot take part in a comparison, or None when it can."""
    if rec is None:
        return "not run"
    if rec.get(metric) is None:
        return f"no {metric} value"
    if not rec.get("trusted"):
        return "fidelity not ok in a repeat"
    if rec.get(f"{metric}_low") is None or rec.get(f"{metric}_high") is None:
        return "one run, no interval"
    return None


def compare_points(a: dict | None, b: dict | None, metric: str, expect: str,
                   names: tuple[str, str]) -> tuple[str, str]:
    """(verdict, why) of "a's metric is `expect` (lower or higher) than b's"."""
    for rec, name in zip((a, b), names):
        why = _speaks(rec, metric)
        if why is not None:
            return UNDECIDED, f"{name}: {why}"
    a_lo, a_hi = a[f"{metric}_low"], a[f"{metric}_high"]
    b_lo, b_hi = b[f"{metric}_low"], b[f"{metric}_high"]
    intervals = (f"{names[0]} [{_fmt(a_lo)}, {_fmt(a_hi)}], "
                 f"{names[1]} [{_fmt(b_lo)}, {_fmt(b_hi)}]")
    if a_hi < b_lo:
        order = "lower"
    elif b_hi < a_lo:
        order = "higher"
    else:
        return UNDECIDED, f"the intervals overlap: {intervals}"
    return (AGREES if order == expect else DISAGREES), f"{names[0]} {order}: {intervals}"


def _at(curves: list[dict], x: float, transport: str, group: str) -> dict | None:
    for rec in curves:
        if rec["transport"] == transport and rec.get("group", "") == group \
                and float(rec["x"]) == float(x):
            return rec
    return None


def _where(x: float, group: str) -> str:
    return f"x = {x:g}" + (f" ({group})" if group else "")


def _across_transports(curves, claim: dict, transports: list[str]) -> list[Comparison]:
    ref, others = transports[0], transports[1:]
    xs = claim.get("at") or sorted({float(r["x"]) for r in curves})
    groups = sorted({r.get("group", "") for r in curves}) or [""]
    if not others:
        return [Comparison(f"{ref} against the other transports", UNDECIDED,
                           f"only {ref} ran")]
    out = []
    for group in groups:
        for x in xs:
            for other in others:
                verdict, why = compare_points(_at(curves, x, ref, group),
                                              _at(curves, x, other, group), claim["metric"],
                                              claim["expect"], (ref, other))
                out.append(Comparison(f"{ref} against {other} at {_where(x, group)}", verdict,
                                      why))
    return out


def _along_x(curves, claim: dict, transports: list[str]) -> list[Comparison]:
    out = []
    for series in sorted({r["series"] for r in curves if r["transport"] in transports}):
        mine = [r for r in curves if r["series"] == series]
        xs = sorted(float(r["x"]) for r in mine)
        start, end = claim.get("at") or (xs[0], xs[-1])
        what = f"{series}: x = {end:g} against x = {start:g}"
        if float(start) == float(end):
            out.append(Comparison(what, UNDECIDED, "a single x was run"))
            continue
        pick = {float(r["x"]): r for r in mine}
        verdict, why = compare_points(pick.get(float(end)), pick.get(float(start)),
                                      claim["metric"], claim["expect"],
                                      (f"x = {end:g}", f"x = {start:g}"))
        out.append(Comparison(what, verdict, why))
    return out


def judge(curves: list[dict], claim: dict, transports: list[str]) -> tuple[str, list[Comparison]]:
    """The figure's verdict on `claim` (keys metric, expect, compare, at) and every comparison
    behind it. `curves`: analysis.sweep_stats.aggregate records; `transports`: the sweep's, the
    reference first; the claim's own `transports`, when it names them, take their place."""
    transports = list(claim.get("transports") or transports)
    if claim["compare"] == TRANSPORTS:
        comparisons = _across_transports(curves, claim, transports)
    elif claim["compare"] == ALONG_X:
        comparisons = _along_x(curves, claim, transports)
    else:
        raise ValueError(f"compare must be {TRANSPORTS!r} or {ALONG_X!r}, got "
                         f"{claim['compare']!r}")
    return overall([c.verdict for c in comparisons]), comparisons


def overall(verdicts: list[str]) -> str:
    """disagrees if any disagrees, agrees if all agree (and there is one), else undecided."""
    if DISAGREES in verdicts:
        return DISAGREES
    if verdicts and all(v == AGREES for v in verdicts):
        return AGREES
    return UNDECIDED
