"""The cluster a run uses: the scenario's [cluster], overridden by `mrclab run --servers a,b`
and `--placement`, placed on the scenario's fabric (emulation/cluster/placement.py) and
printed before the run, so the tunnels it will need are known before anything starts.

A command-line server list replaces the scenario's; a command-line placement replaces the
scenario's, and without either the default "plane" applies. One server is the single-machine
run, unchanged.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

from emulation.cluster import preflight, vxlan
from emulation.cluster.placement import PLACEMENTS, Placement, PlacementError, place
from emulation.cluster.server_commands import Servers
from emulation.config.scenario_cluster import ClusterSpec
from model.proc import run_checked


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


def with_placement(scn, placement: Placement | None):
    """`scn` carrying the placement the command line chose as its [cluster] (what every run of
    it, the calibration's trials included, is placed by, and what the calibration cache keys
    on); `scn` itself on one server."""
    if placement is None:
        return scn
    nodes = scn.cluster.nodes if scn.cluster is not None and placement.mode == "explicit" \
        else {}
    return dataclasses.replace(scn, cluster=ClusterSpec(tuple(placement.servers),
                                                        placement.mode, nodes))


def limits(scn) -> str | None:
    """Why `scn` cannot run over several servers yet (docs/cluster.md), or None: what acts on
    this machine's ports and processes alone."""
    if scn.trimming:
        return ("[options] trimming = true over several servers: the trimming program is "
                "attached on this machine's ports only, yet; set it to false")
    if scn.scheduling != "none":
        return (f'[fabric] scheduling = "{scn.scheduling}" over several servers: it places this '
                'machine\'s processes only, yet; set it to "none"')
    return None


def preflight_problem(scn, placement: Placement) -> str | None:
    """What a server of the placement lacks (emulation/cluster/preflight.py: ssh, sudo, Open
    vSwitch, Mininet, VXLAN, the same commit without uncommitted changes, a management network
    that carries a tunnelled frame), or None when every one is ready."""
    servers = Servers(placement, PlacementError)
    try:
        addresses = {s: servers.address(s) for s in placement.servers[1:]}
        toward = addresses[placement.servers[1]]
        addresses[placement.local] = vxlan.route_source(
            run_checked(vxlan.route_get_argv(toward), what=f"the route to {toward}",
                        error=PlacementError), toward)
    except (PlacementError, vxlan.TunnelError, ValueError) as exc:
        return f"preflight: {exc}"
    results = preflight.run(placement.servers, addresses, scn.spec.mtu)
    return preflight.report(results) if any(results.values()) else None


def announce(scn, args, check=preflight_problem) -> tuple[str | None, Placement | None]:
    """Print the run's placement, if it spans servers (on stdout with --validate-only, else on
    stderr ahead of the run's own lines), then check the scenario's limits over servers and
    every server (`check`: the preflight); returns (why the run cannot go on or None, the
    placement or None on one server)."""
    try:
        placement = placement_for(scn, getattr(args, "servers", None),
                                  getattr(args, "placement", None))
    except PlacementError as exc:
        return str(exc), None
    if placement is None:
        return None, None
    validate_only = getattr(args, "validate_only", False)
    print(placement.describe(), file=sys.stdout if validate_only else sys.stderr, flush=True)
    return limits(scn) or check(scn, placement), placement
