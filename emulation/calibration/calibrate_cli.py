"""`mrclab calibrate SCENARIO [--transport T] [--json] [--cached] [--servers A,B]`: the command line
of emulation/calibration/calibrate.py (the search and the cache live there; trials run through
emulation/run/runner.py, over the servers of the scenario's [cluster] or of --servers)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from emulation.calibration import calibrate
from emulation.cluster import options as cluster_options
from emulation.config import scenario as scenario_mod
from emulation.config.scenario import ScenarioError
from model import timescale
from model.argtypes import positive_float


def scale_at_least_one(text: str) -> float:
    value = positive_float(text)
    try:
        return timescale.check(value)
    except timescale.TimeScaleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", help="experiments/<name>.toml (its [short] version is run)")
    parser.add_argument("--transport", default="all",
                        help="the transport to calibrate (mrc, roce, tcp), or all the "
                             "scenario's (default): each runs at its own time scale")
    parser.add_argument("--json", action="store_true",
                        help="print per transport its time_scale, each invariant's margin and "
                             "the trials as JSON")
    parser.add_argument("--cached", action="store_true",
                        help="print the cached time scale without running anything (exit 4 "
                             "when there is none)")
    parser.add_argument("--max-scale", type=scale_at_least_one, default=None,
                        help="try no time scale above this (default 64)")
    parser.add_argument("--from-scratch", action="store_true",
                        help="search from k = 1 up, ignoring this fabric's previous "
                             "calibration on this machine (by default the search starts at "
                             "the k it needed last, at any build)")
    parser.add_argument("--cache-dir", default=str(calibrate.CACHE_DIR),
                        help="where calibrations are kept (default: results/.calibration)")
    cluster_options.add_arguments(parser)


def main(args) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab calibrate")
        add_arguments(parser)
        args = parser.parse_args(args)
    try:
        scn = scenario_mod.load(args.scenario)
        problem, placement = cluster_options.announce(scn, args)
        if problem:
            raise ScenarioError(problem)
        scn = calibrate.trial_of(cluster_options.with_placement(scn, placement),
                                 scenario_mod.load(args.scenario, short=True)
                                 if scn.has_short else None)
    except ScenarioError as exc:
        print(f"mrclab calibrate: {exc}", file=sys.stderr)
        return 2
    transports = scn.transports_of(args.transport)
    if args.transport != "all" and args.transport not in scn.transports:
        print(f"mrclab calibrate: --transport {args.transport}: {scn.name} runs "
              f"{', '.join(scn.transports)} (or all)", file=sys.stderr)
        return 2
    if not args.cached and os.geteuid() != 0:
        print("mrclab calibrate: needs root (its trials build the fabric: namespaces, veths, OVS "
              "bridges); --cached only reads the cache", file=sys.stderr)
        return 2
    log = (lambda text: print(text, file=sys.stderr)) if args.json else print
    results = {}
    for transport in transports:
        result = _one(scn, transport, args, log)
        if result is None:
            return calibrate.EXIT_NO_PASS
        results[transport] = result
        if not args.json:
            print(f"{scn.name}: {transport}: time_scale {result['time_scale']:g} (the smallest k "
                  f"whose short run kept fidelity \"ok\" on this machine)")
    if args.json:
        print(json.dumps({"scenario": scn.name, "transports": {
            t: {"time_scale": r["time_scale"], "margins": r["margins"], "trials": r["trials"],
                "machine": r["machine"]} for t, r in results.items()}}, indent=2))
    return 0


def _one(scn, transport: str, args, log) -> dict | None:
    """The cached or newly calibrated answer for one transport; None (said why) when there is
    none."""
    if args.cached:
        result = calibrate.cached(scn, transport, Path(args.cache_dir))
        if result is None:
            print(f"mrclab calibrate: no calibration of {scn.name}'s fabric for {transport} on "
                  f"this machine in {args.cache_dir}", file=sys.stderr)
        return result
    from emulation.run.runner import run_transport  # deferred: the fabric, only for trials
    try:
        return calibrate.calibrate(scn, transport, Path(args.cache_dir),
                                   run_transport=run_transport, log=log,
                                   max_scale=args.max_scale,
                                   from_previous=not args.from_scratch)
    except calibrate.CalibrationError as exc:
        print(f"mrclab calibrate: {exc}", file=sys.stderr)
        return None
