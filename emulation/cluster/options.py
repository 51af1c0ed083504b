"""The cluster a run uses: the scenario's [cluster], overridden by `mrclab run --servers a,b`
and `--placement`, placed on the scenario's fabric (emulation/cluster/placement.py) and
printed before the run, so the tunnels it will need are known before anything starts.

A command-line server list replaces the scenario's; a command-line placement replaces the
scenario's, and without either the default "plane" applies. One server is the single-machine
run, unchanged.
"""
from __future__ import annotations

import argparse
import sys

from emulation.cluster.placement import PLACEMENTS, Placement, PlacementError, place


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--servers", default=None, metavar="A,B,...",
                        help="spread the fabric over these servers ([user@]host, comma-"
                             "separated; the first is this machine): overrides [cluster] "
                             "servers. The placement and the links that cross servers are "
                             "printed before the run")
    parser.add_argument("--placement", default=None, choices=PLACEMENTS,
                        help="which server holds each switch and host: plane (whole planes "
                             "per server), pod (a group's T0s and hosts per server, T1s "
                             "spread) or explicit ([cluster.nodes]); overrides [cluster] "
                             "placement (default plane)")


def placement_for(scn, servers: str | None = None, mode: str | None = None) -> Placement | None:
    """The placement of the run of `scn` (a loaded Scenario) with the command line's `servers`
    and `mode`; None when the run stays on this machine (no cluster, or one server). Raises
    PlacementError naming what cannot be placed."""
    spec = scn.cluster
    if servers is None and spec is None:
        if mode is not None:
            raise PlacementError(f"--placement {mode} needs servers: --servers a,b or "
                                 "[cluster] servers")
        return None
    chosen = servers if servers is not None else spec.servers
    nodes = spec.nodes if spec is not None else {}
    chosen_mode = mode or (spec.placement if spec is not None else PLACEMENTS[0])
    if chosen_mode != "explicit":
        nodes = {}                      # the command line chose a placement that decides itself
    result = place(scn.topology, chosen, chosen_mode, nodes)
    return result if len(result.servers) > 1 else None


def announce(scn, args) -> str | None:
    """Print the run's placement, if it spans servers (on stdout with --validate-only, else on
    stderr ahead of the run's own lines); returns why the run cannot go on, or None."""
    try:
        placement = placement_for(scn, getattr(args, "servers", None),
                                  getattr(args, "placement", None))
    except PlacementError as exc:
        return str(exc)
    if placement is None:
        return None
    validate_only = getattr(args, "validate_only", False)
    print(placement.describe(), file=sys.stdout if validate_only else sys.stderr, flush=True)
    if validate_only:
        return None
    return ("a run over several servers is not supported yet (docs/cluster.md): the placement "
            "above is checked, --validate-only prints it without running, and `mrclab fabric "
            "--servers` builds the fabric alone over them")
