"""`mrclab calibrate SCENARIO [--json] [--cached]`: the command line of emulation/calibration/calibrate.py
(the search and the cache live there; trials run through emulation/run/runner.py)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from emulation.calibration import calibrate
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
    parser.add_argument("--json", action="store_true",
                        help="print time_scale, each invariant's margin and the trials as JSON")
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


def main(args) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab calibrate")
        add_arguments(parser)
        args = parser.parse_args(args)
    try:
        scn = scenario_mod.load(args.scenario)
        scn = calibrate.trial_of(scn, scenario_mod.load(args.scenario, short=True)
                                 if scn.has_short else None)
    except ScenarioError as exc:
        print(f"mrclab calibrate: {exc}", file=sys.stderr)
        return 2
    log = (lambda text: print(text, file=sys.stderr)) if args.json else print
    if args.cached:
        result = calibrate.cached(scn, "mrc", Path(args.cache_dir))
        if result is None:
            print(f"mrclab calibrate: no calibration of {scn.name}'s fabric on this machine "
                  f"in {args.cache_dir}", file=sys.stderr)
            return calibrate.EXIT_NO_PASS
    elif os.geteuid() != 0:
        print("mrclab calibrate: needs root (its trials build the fabric: namespaces, veths, OVS "
              "bridges); --cached only reads the cache", file=sys.stderr)
        return 2
    else:
        from emulation.run.runner import run_transport  # deferred: the fabric, only for trials
        try:
            result = calibrate.calibrate(scn, "mrc", Path(args.cache_dir),
                                         run_transport=run_transport, log=log,
                                         max_scale=args.max_scale,
                                         from_previous=not args.from_scratch)
        except calibrate.CalibrationError as exc:
            print(f"mrclab calibrate: {exc}", file=sys.stderr)
            return calibrate.EXIT_NO_PASS
    if args.json:
        print(json.dumps({"time_scale": result["time_scale"], "margins": result["margins"],
                          "trials": result["trials"], "scenario": scn.name,
                          "machine": result["machine"]}, indent=2))
    else:
        print(f"{scn.name}: time_scale {result['time_scale']:g} (the smallest k whose short run "
              f"kept fidelity \"ok\" on this machine)")
    return 0
