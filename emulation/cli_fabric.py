"""`mrclab fabric` (build the fabric and open Mininet's CLI on it, or --check) and `mrclab clean`
(remove a crashed fabric's leftovers): their options and handlers. Both need root."""
from __future__ import annotations

import argparse
import sys

from emulation.cli_common import EXIT_USAGE, is_fabric_error, not_root
from model.argtypes import add_deprecated, add_renamed, nonneg_float, positive_float, positive_int


def add_fabric_parser(sub) -> argparse.ArgumentParser:
    f = sub.add_parser("fabric", help="build the fabric (Mininet CLI, or --check)",
                       description="Build the multi-plane Clos fabric and open Mininet's CLI on "
                       "it (or verify forwarding with --check). Needs root.")
    f.add_argument("--planes", type=positive_int, default=2, help="parallel planes (default 2)")
    f.add_argument("--groups", type=positive_int, default=2,
                   help="T0 groups (one T0 switch per plane and group; default 2)")
    f.add_argument("--spines", type=positive_int, default=2,
                   help="T1 spines per plane (default 2)")
    f.add_argument("--hosts", type=positive_int, default=2, help="hosts per T0 group (default 2)")
    f.add_argument("--host-link-mbit", type=positive_float, default=100.0,
                   help="rate of every host-T0 link in Mbit/s (default 100; scenario key "
                        "[fabric] host_link_mbit)")
    f.add_argument("--fabric-link-mbit", type=positive_float, default=100.0,
                   help="rate of every T0-T1 link in Mbit/s (default 100; scenario key "
                        "[fabric] fabric_link_mbit)")
    add_renamed(f, "--host-mbit", "--host-link-mbit")
    add_renamed(f, "--fabric-mbit", "--fabric-link-mbit")
    f.add_argument("--mtu", type=positive_int, default=9000,
                   help="IP MTU of every host and switch port, 1280..9000 (default 9000, as "
                        "experiments/demo.toml)")
    f.add_argument("--routing", choices=("srv6", "ecmp"), default="srv6",
                   help="srv6: the sender picks the path (MRC); ecmp: switches hash flows "
                        "(default srv6)")
    f.add_argument("--switch-buffer-kb", type=positive_int, default=None,
                   help="drop-tail buffer of every switch egress port (default: HTB's deep queue)")
    f.add_argument("--dynamic-convergence-s", type=nonneg_float, default=None,
                   help="ecmp: recompute buckets this long after a port goes down")
    f.add_argument("--out-dir", default=None, metavar="DIR",
                   help="where the controller log and the fault log go (default: a new "
                        "temporary directory)")
    add_deprecated(f, "--run-dir", "--out-dir")
    f.add_argument("--check", action="store_true", help="verify forwarding, print one line, exit")
    f.add_argument("--servers", default=None, metavar="A,B,...",
                   help="spread the fabric over these servers ([user@]host, comma-separated; "
                        "the first is this machine; docs/cluster.md): switches, hosts and the "
                        "VXLAN tunnels between them, controlled from this machine")
    f.add_argument("--placement", default="plane", choices=("plane", "pod"),
                   help="with --servers: whole planes per server, or a group's T0s and hosts "
                        "per server with the T1s spread (default plane)")
    # Accepted only to explain why they cannot work here (no sch_netem on this kernel).
    f.add_argument("--delay", default=None, help=argparse.SUPPRESS)
    f.add_argument("--loss", default=None, help=argparse.SUPPRESS)
    return f


def _placement(spec, servers: str | None, mode: str):
    """The placement of `mrclab fabric --servers` (None without it); PlacementError (a
    ValueError) names what cannot be placed."""
    if not servers:
        return None
    from emulation.cluster.placement import place  # deferred: only with --servers
    from model.topology import Topology  # deferred: only with --servers
    placement = place(Topology(spec), servers, mode)
    return placement if len(placement.servers) > 1 else None


def add_clean_parser(sub) -> argparse.ArgumentParser:
    c = sub.add_parser("clean", help="remove leftovers of a crashed fabric (ours only; root)")
    c.add_argument("--wait-s", type=nonneg_float, default=5.0,
                   help="how long to wait for a running fabric's lock (default 5)")
    c.add_argument("--servers", default=None, metavar="A,B,...",
                   help="a fabric spread over these servers (the first is this machine): clean "
                        "this one, then each other one over ssh (its own mrclab clean)")
    return c


def fabric_main(args) -> int:
    """`mrclab fabric`: a FabricError (OVS down, a failed command) or a controller that does not
    answer is a message, not a traceback."""
    from controller.client import ControllerError  # deferred: only for this subcommand
    try:
        return _fabric(args)
    except ControllerError as e:
        print(f"mrclab fabric: the controller failed: {e}", file=sys.stderr)
        return 1
    except RuntimeError as e:
        if not is_fabric_error(e):
            raise
        print(f"mrclab fabric: the fabric failed: {e}", file=sys.stderr)
        return 1


def _fabric(args) -> int:
    if not getattr(args, "validate_only", False) and not_root(
            "mrclab fabric", "it creates network namespaces, veths and Open vSwitch bridges"):
        return EXIT_USAGE
    from emulation.network.hostnet import (  # deferred: only for this subcommand
        LinkOptionError, validate_link_options)
    from emulation.network.switchqueue import (  # deferred: only for this subcommand
        QueueConfigError, validate_buffer_bytes)
    from model.topology import FabricSpec, SpecError  # deferred: only for this subcommand

    try:
        validate_link_options({k: v for k, v in (("delay", args.delay), ("loss", args.loss))
                               if v is not None})
        spec = FabricSpec(planes=args.planes, groups=args.groups, spines=args.spines,
                          hosts_per_group=args.hosts, host_link_mbit=args.host_link_mbit,
                          fabric_link_mbit=args.fabric_link_mbit, mtu=args.mtu)
        buffer_bytes = validate_buffer_bytes(
            None if args.switch_buffer_kb is None else args.switch_buffer_kb * 1024)
        placement = _placement(spec, getattr(args, "servers", None),
                               getattr(args, "placement", "plane"))
    except (SpecError, LinkOptionError, QueueConfigError, ValueError) as e:
        print(f"mrclab fabric: {e}", file=sys.stderr)
        return EXIT_USAGE
    if placement is not None:
        print(placement.describe(), file=sys.stderr, flush=True)
    if args.check:
        if buffer_bytes is not None:
            print("mrclab fabric: --switch-buffer-kb has no effect on --check (probes only)",
                  file=sys.stderr)
        from emulation.network.check import run_check  # deferred: only for this subcommand
        return run_check(spec, args.routing, args.dynamic_convergence_s, args.out_dir,
                         placement=placement)
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    class FabricCLI(CLI):
        """Mininet's CLI, except Ctrl-C at the prompt leaves it (and tears the fabric down).
        Ctrl-C while a host command runs still only interrupts that command (Mininet's
        waitForNode sends it to the node)."""

        def run(self):
            for node in self.mn.values():
                while node.waiting:
                    node.sendInt()
                    node.waitOutput()
            try:
                self.cmdloop()
            except KeyboardInterrupt:
                print("\nmrclab: Ctrl-C, tearing the fabric down", flush=True)

    from emulation.network.fabric import Fabric  # deferred: only for this subcommand
    with Fabric(spec, routing=args.routing, dynamic_convergence_s=args.dynamic_convergence_s,
                run_dir=args.out_dir, switch_buffer_bytes=buffer_bytes,
                placement=placement) as fab:
        print(f"mrclab: fabric up ({args.routing}): {len(fab.topo.hosts)} hosts, "
              f"{len(fab.topo.switches)} switches; controller API http://127.0.0.1:"
              f"{fab.api_port}; logs in {fab.run_dir}. `exit` or Ctrl-D tears it down.")
        setLogLevel("info")
        try:
            FabricCLI(fab.net)
        finally:
            setLogLevel("warning")
    return 0


def clean(args) -> int:
    if not_root("mrclab clean", "it deletes the fabric's network interfaces, OVS bridges and "
                "nft tables"):
        return EXIT_USAGE
    servers = getattr(args, "servers", None)
    if servers is not None:
        from emulation.cluster.placement import (  # deferred: only with --servers
            PlacementError, parse_servers)
        try:
            servers = parse_servers(servers)
        except PlacementError as e:
            print(f"mrclab clean: --servers: {e}", file=sys.stderr)
            return EXIT_USAGE
    from emulation.network import cleanup  # deferred: only for this subcommand
    from emulation.network.fabric import (  # deferred: only for this subcommand
        FabricLockTimeout, acquire_fabric_lock, release_fabric_lock)
    try:
        fd = acquire_fabric_lock(timeout_s=args.wait_s)
    except FabricLockTimeout as e:
        print(f"mrclab clean: refusing while a fabric is running: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"mrclab clean: cannot take the fabric lock {e.filename or ''}: {e.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        cleanup.clean(verbose=True)
    finally:
        release_fabric_lock(fd)
    return _clean_others(servers, args.wait_s) if servers else 0


def _clean_others(servers: tuple, wait_s: float) -> int:
    """The other servers of `mrclab clean --servers`, each cleaning itself over ssh."""
    from emulation.cluster import remote  # deferred: only with --servers
    failed = remote.clean_others(servers, wait_s=wait_s)
    for line in failed:
        print(f"mrclab clean: {line}", file=sys.stderr)
    return 1 if failed else 0
