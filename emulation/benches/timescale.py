"""`mrclab bench timescale`: what this machine can emulate, as one figure per `[fabric]
scheduling` setting side by side. `mrclab calibrate` on the demo fabric at its declared rates
(100 Mbit/s links): the smallest time scale at which its short run keeps fidelity "ok",
measured now (the cache is written, never read), once with scheduling "none" and once with
"hifi" (emulation/network/scheduling.py). Every CPU saving of the endpoints or the switches, and
every scheduling that keeps the per-packet work on time, shows up as a smaller k
(docs/fidelity-timescale.md, docs/performance.md).

--repeat N calibrates each setting N times, alternating the settings (none, hifi, none, hifi,
...) so that a load that drifts during the bench weighs on both alike; each setting's figure is
the median of its calibrations.

--busy N keeps N processes spinning (one core each) through every calibration: the machine a
user shares with other work. Those calibrations write a cache of their own, discarded after the
bench, so a deliberately loaded k never becomes the one this machine's runs start from.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import sys
import tempfile
from pathlib import Path

from emulation.benches.fidelity import start_busy, stop_busy
from emulation.calibration import calibrate
from emulation.config import scenario as scenario_mod
from emulation.config.scenario import ScenarioError
from emulation.network.scheduling import SCHEDULINGS
from model.argtypes import UsageError, nonneg_int, positive_int

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = REPO / "experiments" / "demo.toml"


def add_timescale_arguments(parser) -> None:
    parser.add_argument("--scenario", default=str(DEFAULT_SCENARIO),
                        help="scenario whose [short] version calibrates (default the demo)")
    parser.add_argument("--scheduling", default=",".join(SCHEDULINGS),
                        help="comma-separated [fabric] scheduling settings to compare "
                             f"(default {','.join(SCHEDULINGS)})")
    parser.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                        help="calibrations per setting, the settings alternating (default 1)")
    parser.add_argument("--busy", type=nonneg_int, default=0, metavar="N",
                        help="processes kept spinning (one core each) through every "
                             "calibration (default 0: the machine as it is)")


def settings_of(text: str) -> list[str]:
    """The settings named in a --scheduling value, each once, in the order given."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SCHEDULINGS]
    if not names or bad:
        raise UsageError(f"--scheduling: {', '.join(bad) or 'nothing'} is not a setting; "
                         f"known: {', '.join(SCHEDULINGS)}")
    return list(dict.fromkeys(names))


def calibration_order(settings: list[str], repeat: int) -> list[str]:
    """Every setting `repeat` times, alternating: [a, b, a, b, ...]."""
    return [s for _ in range(repeat) for s in settings]


def median_k(time_scales: list) -> float | None:
    """The median k, a calibration that found none (None) counting as above every k tried;
    None when that is where the median falls."""
    k = statistics.median(math.inf if t is None else t for t in time_scales)
    return None if math.isinf(k) else k


def compare(results: dict[str, list[dict]]) -> dict:
    """Per setting: every calibration's k in order (None: no k up to the largest tried kept
    "ok"), their median, and the margins and trials of each calibration (calibrate.calibrate's
    results; a failed calibration's trials from its CalibrationError)."""
    return {setting: {"time_scales": [r["time_scale"] for r in runs],
                      "time_scale": median_k([r["time_scale"] for r in runs]),
                      "margins": [r["margins"] for r in runs],
                      "trials": [r["trials"] for r in runs],
                      "errors": [r["error"] for r in runs if r.get("error")]}
            for setting, runs in results.items() if runs}


def _k_text(k, above: float) -> str:
    return f"{k:g}" if k is not None else f"above {above:g}"


def comparison_line(scenario: str, mbit: float, by_setting: dict, busy: int = 0) -> str:
    """One line: each setting's median k (and every k when there are several)."""
    parts = []
    above = max(calibrate.DOUBLING)
    for setting, f in by_setting.items():
        each = (" (" + ", ".join(_k_text(k, above) for k in f["time_scales"]) + ")"
                if len(f["time_scales"]) > 1 else "")
        parts.append(f"{setting} {_k_text(f['time_scale'], above)}{each}")
    load = f", {busy} busy process(es) beside it" if busy else ""
    return (f"bench timescale: {scenario} ({mbit:g} Mbit/s links{load}) keeps fidelity \"ok\" "
            f"from time_scale " + "; ".join(parts) + " (scheduling: median k)")


def timescale_main(args) -> dict:
    settings = settings_of(getattr(args, "scheduling", ",".join(SCHEDULINGS)))
    try:
        scn = scenario_mod.load(args.scenario)
        if scn.has_short:
            scn = scenario_mod.load(args.scenario, short=True)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    out = sys.stderr if getattr(args, "json", False) else sys.stdout
    busy = getattr(args, "busy", 0)
    procs = start_busy(busy)
    try:
        if busy:
            print(f"bench timescale: {busy} busy process(es) running (PIDs "
                  f"{', '.join(str(p.pid) for p in procs)})", file=out, flush=True)
            with tempfile.TemporaryDirectory(prefix="mrclab-bench-cache-") as cache:
                results = _calibrations(scn, settings, getattr(args, "repeat", 1), out,
                                        Path(cache))
        else:
            results = _calibrations(scn, settings, getattr(args, "repeat", 1), out)
    finally:
        stop_busy(procs)
    spec = scn.spec
    by_setting = compare(results)
    figures = {"scenario": scn.name, "host_link_mbit": spec.host_link_mbit,
               "fabric_link_mbit": spec.fabric_link_mbit, "busy_processes": busy,
               "scheduling": by_setting}
    print(comparison_line(scn.name, spec.host_link_mbit, by_setting, busy), file=out)
    return figures


def _calibrations(scn, settings: list[str], repeat: int, out,
                  cache_dir: Path | None = None) -> dict[str, list[dict]]:
    """Each setting's calibrations, the settings alternating; cache_dir None: the machine's."""
    from emulation.run.runner import run_transport  # deferred: the fabric
    cache = {} if cache_dir is None else {"cache_dir": cache_dir}
    results: dict[str, list[dict]] = {s: [] for s in settings}
    for setting in calibration_order(settings, repeat):
        print(f"bench timescale: calibrating with scheduling {setting}", file=out, flush=True)
        try:
            results[setting].append(calibrate.calibrate(
                dataclasses.replace(scn, scheduling=setting), "mrc", run_transport=run_transport,
                log=lambda text: print(text, file=out, flush=True), **cache))
        except calibrate.CalibrationError as exc:
            # a setting that keeps no k "ok" is a figure of the comparison, and the other
            # settings' calibrations (already taken, minutes each) must still be reported
            print(f"bench timescale: scheduling {setting}: {exc}", file=out, flush=True)
            results[setting].append({"time_scale": None, "margins": {}, "trials": exc.trials,
                                     "error": str(exc)})
    return results
