"""`mrclab`: the one command line of MRC lab.

    mrclab fabric [--planes P --groups G --spines S --hosts H ...] [--check]
    mrclab link down|up|flap|loss|blackhole|degrade|ecn|clear ...
    mrclab clean
    mrclab run | analyze | notebook | bench NAME|all

Subcommands owned by other modules are dispatched through "module:function" strings and
imported lazily, so a missing module only breaks its own subcommand (exit 2, "not available yet").
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

# Lazily imported entry points (they take an argv list and return an exit code).
DISPATCH = {
    "run": "emulation.runner:main",
    "analyze": "analysis.cli:main",
    "notebook": "analysis.cli:notebook_main",
}
BENCHES = {
    "codec": "traffic.bench:codec_bench",
    "goodput": "traffic.bench:goodput_bench",
    "cpu": "traffic.bench:cpu_bench",
    "failover": "traffic.bench:failover_bench",
    "memory": "traffic.bench:memory_bench",
    "pcap": "analysis.bench:pcap_bench",
    "trim": "emulation.trimming:bench",
}

EXIT_USAGE = 2


class NotAvailable(Exception):
    pass


def resolve(target: str):
    """'pkg.module:function' -> the function; NotAvailable if the module/function is missing."""
    module_name, _, func_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise NotAvailable(f"not available yet: {module_name}") from None
        raise
    func = getattr(module, func_name, None)
    if func is None:
        raise NotAvailable(f"not available yet: {module_name}:{func_name}")
    return func


def _dispatch(target: str, argv: list[str]) -> int:
    try:
        func = resolve(target)
    except NotAvailable as e:
        print(f"mrclab: {e}", file=sys.stderr)
        return EXIT_USAGE
    rc = func(argv)
    return int(rc or 0)


# ---------------------------------------------------------------- fabric


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _nonneg_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _fabric(args) -> int:
    from emulation.hostnet import LinkOptionError, validate_link_options
    from emulation.switchqueue import QueueConfigError, validate_buffer_bytes
    from emulation.topology import FabricSpec, SpecError

    try:
        validate_link_options({k: v for k, v in (("delay", args.delay), ("loss", args.loss))
                               if v is not None})
        spec = FabricSpec(planes=args.planes, groups=args.groups, spines=args.spines,
                          hosts_per_group=args.hosts, host_link_mbit=args.host_mbit,
                          fabric_link_mbit=args.fabric_mbit, mtu=args.mtu)
        buffer_bytes = validate_buffer_bytes(
            None if args.switch_buffer_kb is None else args.switch_buffer_kb * 1024)
    except (SpecError, LinkOptionError, QueueConfigError) as e:
        print(f"mrclab fabric: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        if buffer_bytes is not None:
            print("mrclab fabric: --switch-buffer-kb has no effect on --check (probes only)",
                  file=sys.stderr)
        from emulation.check import run_check
        return run_check(spec, args.routing, args.dynamic_convergence_s, args.run_dir)
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

    from emulation.fabric import Fabric
    with Fabric(spec, routing=args.routing, dynamic_convergence_s=args.dynamic_convergence_s,
                run_dir=args.run_dir, switch_buffer_bytes=buffer_bytes) as fab:
        print(f"mrclab: fabric up ({args.routing}): {len(fab.topo.hosts)} hosts, "
              f"{len(fab.topo.switches)} switches; controller API http://127.0.0.1:"
              f"{fab.api_port}; logs in {fab.run_dir}. `exit` or Ctrl-D tears it down.")
        setLogLevel("info")
        try:
            FabricCLI(fab.net)
        finally:
            setLogLevel("warning")
    return 0


# ---------------------------------------------------------------- link faults


def _fault_body(args) -> dict:
    a = args.action
    if a == "down":
        return {"action": "link_down", "a": args.a, "b": args.b}
    if a == "up":
        return {"action": "link_up", "a": args.a, "b": args.b}
    if a == "flap":
        return {"action": "flap", "a": args.a, "b": args.b, "period_s": args.period_s,
                "count": args.count}
    if a == "loss":
        return {"action": "gray_loss", "a": args.a, "b": args.b, "percent": args.percent,
                "direction": args.direction}
    if a == "blackhole":
        return {"action": "blackhole", "a": args.switch}
    if a == "degrade":
        return {"action": "degrade", "a": args.a, "b": args.b, "fraction": args.fraction}
    if a == "ecn":
        return {"action": "ecn_mark", "a": args.a, "b": args.b, "rate_mbit": args.rate_mbit,
                "direction": args.direction}
    if a == "clear":
        body = {"action": f"{args.what}_clear", "a": args.a}
        if args.b is not None:
            body["b"] = args.b
        return body
    raise ValueError(a)


def _link(args) -> int:
    body = _fault_body(args)
    try:
        from controller.client import ControllerClient, ControllerError
    except ImportError as e:
        print(f"mrclab: not available yet: controller.client ({e})", file=sys.stderr)
        return EXIT_USAGE
    client = ControllerClient(port=args.api_port)
    try:
        result = client.fault(body)
    except ControllerError as e:
        if getattr(e, "status", None) is None:
            print(f"mrclab link {args.action}: {e} (is a fabric running? start one with "
                  f"`mrclab fabric`)", file=sys.stderr)
            return 1
        print(f"mrclab link {args.action}: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(result))
    return 0


def _add_link_parser(sub) -> None:
    link = sub.add_parser("link", help="inject a fault through the running controller")
    link.add_argument("--api-port", type=int, default=8787)
    acts = link.add_subparsers(dest="action", required=True)

    def ab(p):
        p.add_argument("a", help="node at one end (e.g. t0p0g0 or h0)")
        p.add_argument("b", help="node at the other end")
        return p

    ab(acts.add_parser("down", help="take a link down (both ends, port-status events)"))
    ab(acts.add_parser("up", help="bring a link back up"))
    p = ab(acts.add_parser("flap", help="down/up repeatedly"))
    p.add_argument("--period-s", type=_nonneg_float, default=1.0)
    p.add_argument("--count", type=_positive_int, default=3)
    p = ab(acts.add_parser("loss", help="gray loss: drop a percentage silently"))
    p.add_argument("percent", type=float)
    p.add_argument("--direction", default="both", choices=("a->b", "b->a", "both"))
    p = acts.add_parser("blackhole", help="a switch silently drops everything")
    p.add_argument("switch")
    p = ab(acts.add_parser("degrade", help="meter a link to a fraction of its rate"))
    p.add_argument("fraction", type=float)
    p = ab(acts.add_parser("ecn", help="mark CE above a rate"))
    p.add_argument("rate_mbit", type=float)
    p.add_argument("--direction", default="both", choices=("a->b", "b->a", "both"))
    p = acts.add_parser("clear", help="clear a fault: gray_loss|blackhole|degrade|ecn")
    p.add_argument("what", choices=("gray_loss", "blackhole", "degrade", "ecn"))
    p.add_argument("a")
    p.add_argument("b", nargs="?")


# ---------------------------------------------------------------- bench / clean


def _bench(args) -> int:
    if args.name == "all":
        ran, missing, rc = 0, [], 0
        for name, target in BENCHES.items():
            try:
                func = resolve(target)
            except NotAvailable:
                missing.append(name)
                continue
            print(f"== bench {name}", flush=True)
            rc = max(rc, int(func(args.rest) or 0))
            ran += 1
        if missing:
            print(f"mrclab bench: not available yet: {', '.join(missing)}", file=sys.stderr)
        if not ran:
            return EXIT_USAGE
        return rc
    if args.name not in BENCHES:
        print(f"mrclab bench: unknown benchmark {args.name!r}; known: "
              f"{', '.join(BENCHES)}, all", file=sys.stderr)
        return EXIT_USAGE
    return _dispatch(BENCHES[args.name], args.rest)


def _clean(args) -> int:
    from emulation import cleanup
    from emulation.fabric import FabricLockTimeout, acquire_fabric_lock, release_fabric_lock
    try:
        fd = acquire_fabric_lock(timeout_s=args.wait_s)
    except FabricLockTimeout as e:
        print(f"mrclab clean: refusing while a fabric is running: {e}", file=sys.stderr)
        return 1
    try:
        cleanup.clean(verbose=True)
    finally:
        release_fabric_lock(fd)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="mrclab", description="MRC lab: multipath RDMA transport "
                                 "emulator on a Mininet multi-plane Clos fabric")
    sub = ap.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fabric", help="build the fabric (Mininet CLI, or --check)")
    f.add_argument("--planes", type=_positive_int, default=2)
    f.add_argument("--groups", type=_positive_int, default=2)
    f.add_argument("--spines", type=_positive_int, default=2)
    f.add_argument("--hosts", type=_positive_int, default=2, help="hosts per T0 group")
    f.add_argument("--host-mbit", type=float, default=100.0)
    f.add_argument("--fabric-mbit", type=float, default=100.0)
    f.add_argument("--mtu", type=int, default=1500, help="IP MTU of every port (1280..9000)")
    f.add_argument("--routing", choices=("srv6", "ecmp"), default="srv6")
    f.add_argument("--switch-buffer-kb", type=_positive_int, default=None,
                   help="drop-tail buffer of every switch egress port (default: HTB's deep queue)")
    f.add_argument("--dynamic-convergence-s", type=_nonneg_float, default=None,
                   help="ecmp: recompute buckets this long after a port goes down")
    f.add_argument("--run-dir", default=None, help="controller log + fault log here")
    f.add_argument("--check", action="store_true", help="verify forwarding, print one line, exit")
    # Accepted only to explain why they cannot work here (no sch_netem on this kernel).
    f.add_argument("--delay", default=None, help=argparse.SUPPRESS)
    f.add_argument("--loss", default=None, help=argparse.SUPPRESS)

    _add_link_parser(sub)

    c = sub.add_parser("clean", help="remove leftovers of a crashed fabric (ours only)")
    c.add_argument("--wait-s", type=_nonneg_float, default=5.0,
                   help="how long to wait for a running fabric's lock")

    for name in DISPATCH:
        p = sub.add_parser(name, help=f"(dispatches to {DISPATCH[name]})", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
    b = sub.add_parser("bench", help="benchmarks: " + ", ".join(BENCHES) + ", all")
    b.add_argument("name")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "fabric":
        return _fabric(args)
    if args.cmd == "link":
        return _link(args)
    if args.cmd == "clean":
        return _clean(args)
    if args.cmd == "bench":
        return _bench(args)
    return _dispatch(DISPATCH[args.cmd], args.rest)


if __name__ == "__main__":
    sys.exit(main())
