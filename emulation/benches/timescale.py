"""`mrclab bench timescale`: what this machine can emulate, as one figure. `mrclab calibrate`
on the demo fabric at its declared rates (100 Mbit/s links): the smallest time scale at which
its short run keeps fidelity "ok", measured now (the cache is written, never read). Every CPU
saving of the endpoints or the switches shows up as a smaller k (docs/fidelity-timescale.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

from emulation.calibration import calibrate
from emulation.config import scenario as scenario_mod
from emulation.config.scenario import ScenarioError
from model.argtypes import UsageError

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = REPO / "experiments" / "demo.toml"


def add_timescale_arguments(parser) -> None:
    parser.add_argument("--scenario", default=str(DEFAULT_SCENARIO),
                        help="scenario whose [short] version calibrates (default the demo)")


def timescale_main(args) -> dict:
    from emulation.run.runner import run_transport  # deferred: the fabric
    try:
        scn = scenario_mod.load(args.scenario)
        if scn.has_short:
            scn = scenario_mod.load(args.scenario, short=True)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    out = sys.stderr if getattr(args, "json", False) else sys.stdout
    try:
        result = calibrate.calibrate(scn, "mrc", run_transport=run_transport,
                                     log=lambda text: print(text, file=out, flush=True))
    except calibrate.CalibrationError as exc:
        raise UsageError(str(exc)) from None
    spec = scn.spec
    figures = {"scenario": scn.name, "host_link_mbit": spec.host_link_mbit,
               "fabric_link_mbit": spec.fabric_link_mbit, "time_scale": result["time_scale"],
               "margins": result["margins"], "trials": result["trials"]}
    print(f"bench timescale: {scn.name} ({spec.host_link_mbit:g} Mbit/s links) keeps fidelity "
          f"\"ok\" from time_scale {result['time_scale']:g} on this machine", file=out)
    return figures
