"""`mrclab compare RUN_A RUN_B [--force] [--figure PNG] [--json]`: two runs of one scenario side by
side, per transport and metric: both values, B - A, and whether the difference is significant.

Significance comes from the per-iteration distributions (iteration time, and busbw, which is a
function of it): a percentile bootstrap interval of the difference of the medians (B - A), from
BOOTSTRAP_RESAMPLES resamples of each run's iterations with a fixed seed (so the verdict is
reproducible); "yes" when the 95% interval excludes 0. Metrics with one value for a whole run (the
slowest recovery, retransmissions, EVs retired) have no distribution: their difference is
shown, their significance is "n/a". Each transport's rows open with both runs' fidelity verdict
and time scale; when either verdict is not "ok", every other row of that transport is "void
(fidelity)" instead of significant or not (analysis/fidelity_words.py).

Runs of different scenarios (scenario.toml differs) are refused unless --force: their numbers
measure different experiments. The two runs' goodput (all hosts, from goodput.csv) is drawn
overlaid, one panel per transport.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

import numpy as np

from analysis import metric_names, safe_write
from analysis.fidelity_verdict import OK
from analysis.fidelity_words import time_scale_of, verdict_of
from analysis.logs import MAX_JSON_BYTES, resolve_run
from model.argtypes import add_renamed
from model.safe_read import read_regular

BOOTSTRAP_RESAMPLES = 4000
SEED = 20261127
CONFIDENCE = 0.95
GOODPUT_BIN_MS = 100.0
VOID = "void (fidelity)"     # a row's significance when either run's verdict is not "ok"


class CompareError(ValueError):
    """Runs that cannot be compared; the message says why and what to do."""


def bootstrap_median_difference(a, b, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED,
                                confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(median(b) - median(a), low, high): the percentile bootstrap interval of the difference
    of medians, resampling each sample with replacement."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("both samples need at least one value")
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    mb = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    diff = mb - ma
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(diff, [tail, 100 - tail])
    return float(np.median(b) - np.median(a)), float(low), float(high)


MAX_SCENARIO_BYTES = 1 << 20          # emulation/config/scenario.py's bound on a scenario file


def _summary(tdir: Path) -> dict:
    try:
        data = json.loads(read_regular(tdir / "summary.json", MAX_JSON_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        raise CompareError(f"{tdir}: no readable summary.json ({exc.__class__.__name__}); was "
                           f"the run written by `mrclab run`?") from None
    if not isinstance(data, dict):
        raise CompareError(f"{tdir}/summary.json: not a JSON object")
    for key, ok, kind in SUMMARY_KINDS:
        if data.get(key) is not None and not ok(data[key]):
            raise CompareError(f"{tdir}/summary.json: {key} is not {kind}; was the run written "
                               f"by `mrclab run`?")
    return data


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(v) -> bool:
    return isinstance(v, list) and all(x is None or _number(x) for x in v)


# the summary.json fields compare computes with, and their kinds
SUMMARY_KINDS = (
    ("iteration_times_ms", _numbers, "a list of numbers"),
    ("recovery_ms", _numbers, "a list of numbers (or nulls)"),
    ("nccl", lambda v: isinstance(v, dict) and all(
        v.get(k) is None or _number(v[k]) for k in ("busbw_GBps", "time_mean_ms")),
     "an object with numeric busbw_GBps and time_mean_ms"),
    ("retransmissions", _number, "a number"), ("evs_retired", _number, "a number"))


def _transports(run: Path) -> dict[str, dict]:
    out = {}
    for d in sorted(p for p in run.iterdir() if p.is_dir() and (p / "summary.json").exists()):
        s = _summary(d)
        if isinstance(s.get("transport"), str):
            out[s["transport"]] = s
    if not out:
        raise CompareError(f"{run}: no transport directory with a summary.json")
    return out


def check_same_scenario(run_a: Path, run_b: Path) -> str | None:
    """None when both runs have the same scenario.toml, else a sentence naming the difference."""
    texts = []
    for run in (run_a, run_b):
        try:
            texts.append(read_regular(run / "scenario.toml", MAX_SCENARIO_BYTES)
                         .decode("utf-8", "replace"))
        except OSError:
            return f"{run} has no scenario.toml"
    if texts[0] == texts[1]:
        return None
    la, lb = texts[0].splitlines(), texts[1].splitlines()
    for i, (x, y) in enumerate(zip(la, lb), start=1):
        if x != y:
            return f"scenario.toml differs at line {i}: {x.strip()!r} vs {y.strip()!r}"
    return f"scenario.toml differs in length ({len(la)} vs {len(lb)} lines)"


def _busbw_per_iteration(s: dict) -> list[float]:
    """busbw (analysis/metric_names.py) of each iteration: the sample behind the interval of
    the median's difference."""
    world = s.get("world_size")
    if not s.get("collective") or not isinstance(world, int):
        return []
    values = [metric_names.busbw_mbit(s["collective"], s.get("message_bytes"), world, t)
              for t in s.get("iteration_times_ms") or [] if t and t > 0]
    return [v for v in values if v is not None]


def _recovery_max(s: dict):
    known = [r for r in s.get("recovery_ms") or [] if r is not None]
    return max(known) if known else None


SCALARS = (("recovery_max_ms", _recovery_max),
           ("retransmissions", lambda s: s.get("retransmissions")),
           ("evs_retired", lambda s: s.get("evs_retired")))
# the table's name of each row's metric: the console's heading (analysis/metric_names.py)
HEADINGS = {**metric_names.HEADERS, "recovery_max_ms": "max rec. ms"}
# the metrics compared by their distribution over the iterations: (key, the per-iteration sample)
SAMPLED = (("median_iteration_ms", lambda s: s.get("iteration_times_ms") or []),
           ("busbw_mbit", _busbw_per_iteration))


def compare(run_a, run_b, force: bool = False) -> dict:
    """{"a", "b", "scenario_difference", "rows": [...]}; raises CompareError."""
    run_a = safe_write.check_run_dir(resolve_run(run_a))
    run_b = safe_write.check_run_dir(resolve_run(run_b))
    difference = check_same_scenario(run_a, run_b)
    if difference and not force:
        raise CompareError(f"the runs are of different scenarios ({difference}); "
                           f"pass --force to compare them anyway")
    ta, tb = _transports(run_a), _transports(run_b)
    common = [t for t in ta if t in tb]
    if not common:
        raise CompareError(f"no transport in both runs ({', '.join(ta)} vs {', '.join(tb)})")
    rows = []
    for t in common:
        sa, sb = ta[t], tb[t]
        ma, mb = metric_names.of_summary(sa), metric_names.of_summary(sb)
        for key, sample in SAMPLED:
            xa = [float(x) for x in sample(sa) if x is not None]
            xb = [float(x) for x in sample(sb) if x is not None]
            a, b = ma[key], mb[key]          # the value every other output shows
            row = {"transport": t, "metric": key, "n_a": len(xa),
                   "n_b": len(xb), "a": a, "b": b,
                   "difference": None if a is None or b is None else b - a,
                   "low": None, "high": None, "significant": "n/a"}
            if xa and xb:
                _, low, high = bootstrap_median_difference(xa, xb)
                row.update(low=low, high=high,
                           significant="yes" if low > 0 or high < 0 else "no")
            rows.append(row)
        for metric, get in SCALARS:
            a, b = get(sa), get(sb)
            rows.append({"transport": t, "metric": metric, "n_a": 1, "n_b": 1, "a": a, "b": b,
                         "difference": None if a is None or b is None else b - a,
                         "low": None, "high": None, "significant": "n/a"})
        rows = _judged(rows, t, sa, sb)
    return {"a": str(run_a), "b": str(run_b), "scenario_difference": difference, "rows": rows,
            "transports": common,
            "fidelity": {t: {"a": verdict_of(ta[t]), "b": verdict_of(tb[t]),
                             "time_scale_a": time_scale_of(ta[t]),
                             "time_scale_b": time_scale_of(tb[t])} for t in common}}


def _judged(rows: list[dict], t: str, sa: dict, sb: dict) -> list[dict]:
    """Each run's fidelity verdict and time scale as rows of transport t, first; when either
    verdict is not "ok" its other rows are not significant but void: a difference of two times
    one of which measures the machine's CPU says nothing about the transport."""
    va, vb = verdict_of(sa), verdict_of(sb)
    void = va != OK or vb != OK
    mine = [dict(r, significant=VOID) if void and r["transport"] == t else r for r in rows]
    head = [{"transport": t, "metric": "fidelity", "n_a": 1, "n_b": 1, "a": va, "b": vb,
             "difference": None, "low": None, "high": None, "significant": "n/a"},
            {"transport": t, "metric": "time_scale", "n_a": 1, "n_b": 1, "a": time_scale_of(sa),
             "b": time_scale_of(sb), "difference": None, "low": None, "high": None,
             "significant": "n/a"}]
    first = next(i for i, r in enumerate(mine) if r["transport"] == t)
    return mine[:first] + head + mine[first:]


def table(result: dict) -> str:
    """One line per transport and metric, within 100 columns."""
    def cell(v):
        if v is None:
            return "-"
        return f"{v:.4g}" if isinstance(v, float) and abs(v) < 10 else (
            f"{v:.1f}" if isinstance(v, float) else str(v))
    lines = [("transport", "metric", "A", "B", "B - A", "95% interval", "significant")]
    for r in result["rows"]:
        interval = "-" if r["low"] is None else f"[{cell(r['low'])}, {cell(r['high'])}]"
        lines.append((r["transport"], HEADINGS.get(r["metric"], r["metric"]), cell(r["a"]),
                      cell(r["b"]), cell(r["difference"]), interval, r["significant"]))
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                     for line in lines)


def goodput_rate(tdir: Path, bin_ms: float = GOODPUT_BIN_MS,
                 timed_start_ns: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(seconds from the timed start, Mbit/s per bin) of a transport's goodput.csv (all hosts'
    cumulative received bytes, emulated time); without a timed start the first sample is t = 0.
    Empty arrays when there is none."""
    try:
        with open(tdir / "goodput.csv", newline="") as f:
            pairs = [(int(r["t_ns"]), int(r["rx_bytes_all_hosts"])) for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return np.array([]), np.array([])
    if len(pairs) < 2:
        return np.array([]), np.array([])
    t = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    bin_ns = bin_ms * 1e6
    edges = t[0] + np.arange(int((t[-1] - t[0]) // bin_ns) + 1) * bin_ns   # whole bins only
    if len(edges) < 2:
        return np.array([]), np.array([])
    at_edges = np.interp(edges, t, b)
    rate = np.diff(at_edges) * 8 / (bin_ms / 1e3) / 1e6
    origin = t[0] if timed_start_ns is None else float(timed_start_ns)
    return (edges[:-1] - origin) / 1e9, rate


def _timed_start(tdir: Path) -> int | None:
    """The transport's timed start (summary.json, emulated ns): t = 0 of every output."""
    try:
        start = _summary(tdir).get("timed_start_ns")
    except CompareError:
        return None
    return start if isinstance(start, int) and not isinstance(start, bool) else None


def plot_goodput(result: dict, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = result["transports"]
    fig, axes = plt.subplots(len(names), 1, figsize=(7.5, 2.4 * len(names)), squeeze=False)
    for ax, t in zip(axes[:, 0], names):
        for label, run, style in (("A", result["a"], "-"), ("B", result["b"], "--")):
            start = _timed_start(Path(run) / t)
            x, y = goodput_rate(Path(run) / t, timed_start_ns=start)
            if len(x):
                ax.plot(x, y, style, label=f"{label}: {Path(run).name}")
        ax.set_title(t, fontsize=9)
        ax.set_ylabel("goodput, sum of\nhosts (Mbit/s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel(f"s from the timed start, emulated ({GOODPUT_BIN_MS:.0f} ms bins)")
    fig.tight_layout()
    try:
        return safe_write.save_figure(fig, path, dpi=110)     # never through a planted link
    finally:
        plt.close(fig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", help="first run directory (A)")
    parser.add_argument("run_b", help="second run directory (B); differences are B - A")
    parser.add_argument("--force", action="store_true",
                        help="compare even when the runs' scenario.toml differ")
    parser.add_argument("--figure", help="goodput figure (default <RUN_B>/analysis/compare.png)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_renamed(parser, "--out", "--figure")


def main(args=None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab compare", description=__doc__.splitlines()[0])
        add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if args is None else args)
    try:
        result = compare(args.run_a, args.run_b, force=args.force)
    except (CompareError, OSError) as exc:
        print(f"mrclab compare: {exc}", file=sys.stderr)
        return 2
    out = Path(args.figure) if args.figure else Path(result["b"]) / "analysis" / "compare.png"
    try:
        result["figure"] = str(plot_goodput(result, out))
    except OSError as exc:
        print(f"mrclab compare: cannot write the figure {out}: {exc}", file=sys.stderr)
        result["figure"] = None
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    if result["scenario_difference"]:
        print(f"note (--force): {result['scenario_difference']}")
    print(table(result))
    print(f"A: {result['a']}\nB: {result['b']}")
    if result["figure"]:
        print(f"goodput overlaid: {result['figure']}")
    return 0
