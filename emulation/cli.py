"""`mrclab`: the one command line of MRC lab.

    mrclab fabric [--planes P --groups G --spines S --hosts H ...] [--check]
    mrclab link ACTION ...              (a fault of model/faults.py, or clear WHAT)
    mrclab deny|allow --link A~B | --plane P [--t1 S] | --ev EV | --show
    mrclab clean
    mrclab run | analyze | notebook | wireshark ...
    mrclab scenario keys
    mrclab sweep | compare | top ...
    mrclab bench NAME|all [--json]

One argparse tree: every subcommand declares its own options (`mrclab <command> --help`).
Subcommands owned by other modules are imported lazily through "module:function" strings, only for
the command chosen: `mrclab link` does not pay the runner's seconds of imports.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import os
import sys

from model.argtypes import (UsageError, add_renamed, bounded_float, bounded_int, nonneg_float,
                            nonneg_int, positive_float, positive_int, print_to_pipe, tcp_port)

# Subcommands implemented elsewhere, imported only when chosen, so `mrclab link` does not pay for
# the runner's imports and a missing module breaks only its own subcommand. Each module declares
# its options in an "add arguments" function and runs from the parsed namespace in its main.
DISPATCH = {
    "run": "emulation.run.runner:main",
    "analyze": "analysis.cli:main",
    "notebook": "analysis.cli:notebook_main",
    "wireshark": "analysis.open_captures:main",
}
ARGUMENTS = {
    "run": "emulation.run.runner:add_arguments",
    "analyze": "analysis.cli:add_analyze_arguments",
    "notebook": "analysis.cli:add_notebook_arguments",
    "wireshark": "analysis.open_captures:add_arguments",
}
COMMAND_HELP = {
    "run": "run a scenario (experiments/<name>.toml) for one or all transports",
    "analyze": "figures and report.html of a run directory",
    "notebook": "execute the analysis notebook on a run directory",
    "wireshark": "merge a run's captures and open them with the MRC dissector",
}
# Experiment commands (docs/experiments.md): each module has add_arguments(parser) and main(args).
EXPERIMENT_COMMANDS = {
    "sweep": ("emulation.run.sweep", "run a sweep file: every point x transport x repeat, then the "
                                 "tidy table (CSV, Parquet) and the curves"),
    "compare": ("analysis.compare", "two runs of one scenario side by side: per transport and "
                                    "metric both values, the difference, its significance"),
    "top": ("emulation.run.top", "live view of a running experiment: goodput per plane, EV states, "
                             "retransmissions, trims, faults, CPU"),
}
for _name, (_module, _help) in EXPERIMENT_COMMANDS.items():
    DISPATCH[_name], ARGUMENTS[_name] = f"{_module}:main", f"{_module}:add_arguments"
    COMMAND_HELP[_name] = _help
# `mrclab calibrate` (emulation/calibration/calibrate_cli.py): the time scale this machine needs for a fabric.
DISPATCH["calibrate"] = "emulation.calibration.calibrate_cli:main"
ARGUMENTS["calibrate"] = "emulation.calibration.calibrate_cli:add_arguments"
COMMAND_HELP["calibrate"] = ("the smallest time scale at which this machine runs a scenario's "
                             "fabric with fidelity \"ok\" (cached; --json: margins)")
# name -> (module, add-arguments function, main function taking the parsed args and returning
# the figures as a dict, one-line help).
BENCHES = {
    "codec": ("emulation.benches.codec", "add_codec_arguments", "codec_main",
              "fast codec vs Scapy encode+decode rate (no fabric)"),
    "goodput": ("emulation.benches.fabric", "add_goodput_arguments", "goodput_main",
                "one MRC QP over the real fabric: goodput and CPU per packet"),
    "unshaped": ("emulation.benches.fabric", "add_unshaped_arguments", "unshaped_main",
                 "= goodput --unshaped: one MRC QP vs one kernel TCP connection, no rate limit"),
    "cpu": ("emulation.benches.fabric", "add_cpu_arguments", "cpu_main",
            "endpoint CPU per MiB: reference path vs fast path on one fabric"),
    "failover": ("emulation.benches.fabric", "add_failover_arguments", "failover_main",
                 "recovery time after a T0-T1 link goes down, in base RTTs"),
    "memory": ("emulation.benches.fabric", "add_memory_arguments", "memory_main",
               "endpoint RSS after a transfer"),
    "pcap": ("emulation.benches.pcap", "add_pcap_arguments", "pcap_main",
             "pcap loading rate of analysis.pcap vs Scapy's rdpcap"),
    "trim": ("emulation.benches.trim", "add_bench_arguments", "bench_main",
             "cost of the in-fabric trimming program per packet"),
    "timescale": ("emulation.benches.timescale", "add_timescale_arguments", "timescale_main",
                  "mrclab calibrate on the demo fabric: the time scale this machine needs"),
    "fidelity": ("emulation.benches.fidelity", "add_fidelity_arguments", "fidelity_main",
                 "the demo's short version idle and with busy processes: MRC's median "
                 "iteration, their ratio, both fidelity verdicts"),
}

EXIT_USAGE = 2
DEFAULT_API_PORT = 8787


def resolve(target: str):
    """'pkg.module:function' -> the function, imported only now (see the module docstring)."""
    module_name, _, func_name = target.partition(":")
    return getattr(importlib.import_module(module_name), func_name)


def _run_main(prog: str, target: str, args) -> int:
    func = resolve(target)
    try:
        rc = func(args)
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as e:
        if not _is_fabric_error(e):
            raise
        print(f"{prog}: the fabric failed: {e}", file=sys.stderr)
        return 1
    return int(rc or 0)


def _is_fabric_error(err: BaseException) -> bool:
    """A FabricError (OVS down, a failed tc/ip command): a message for the user, not a
    traceback. Imported here: most subcommands never load the fabric module."""
    from emulation.network.fabric import FabricError  # deferred: only when a command failed
    return isinstance(err, FabricError)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose subcommand choices can carry their own "unknown" message."""

    def _check_value(self, action, value):
        message = getattr(action, "unknown_choice_message", None)
        if message and action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, message.format(value=value))
        super()._check_value(action, value)


def package_version() -> str:
    try:
        return importlib.metadata.version("mrclab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed as a package; run scripts/setup.sh)"


# ---------------------------------------------------------------- fabric


def _fabric(args) -> int:
    if not getattr(args, "validate_only", False) and _not_root(
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
    except (SpecError, LinkOptionError, QueueConfigError) as e:
        print(f"mrclab fabric: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        if buffer_bytes is not None:
            print("mrclab fabric: --switch-buffer-kb has no effect on --check (probes only)",
                  file=sys.stderr)
        from emulation.network.check import run_check  # deferred: only for this subcommand
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

    from emulation.network.fabric import Fabric  # deferred: only for this subcommand
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


# Shell-safe spellings of the controller's directions ("a->b" would be a redirect to file "b").
WIRE_DIRECTION = {"forward": "a->b", "reverse": "b->a", "both": "both"}


def _fault_body(args) -> dict:
    """The POST /fault body of a `mrclab link` command line: the registry (model/faults.py)
    names the action of each subcommand, its target and its parameters."""
    from model import faults as R     # deferred: only for `mrclab link`
    if args.action == "clear":
        kind = R.BY_CLEAR_WORD[args.what]
        body = {"action": kind.action, "a": args.a}
        if args.b is not None:
            body["b"] = args.b
        return body
    kind = R.BY_CLI[args.action]
    body = {"action": kind.action}
    body.update({"a": args.switch} if kind.target == R.NODE else {"a": args.a, "b": args.b})
    for p in kind.params:
        if hasattr(args, p.name):
            value = getattr(args, p.name)
            body[p.name] = WIRE_DIRECTION[value] if p.name == "direction" else value
    return body


def _call_controller(prog: str, api_port: int, request) -> int:
    """Run request(client) against the running controller and print its JSON answer: exit 1 when
    no controller answers (no fabric running), 2 when it refuses the command or `request` finds
    the command line unusable."""
    from controller.client import (  # deferred: only for the subcommands that call it
        ControllerClient, ControllerError)
    try:
        result = request(ControllerClient(port=api_port))
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ControllerError as e:
        if e.status is None:
            print(f"{prog}: {e} (is a fabric running? start one with `mrclab fabric`)",
                  file=sys.stderr)
            return 1
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(result))
    return 0


def _link(args) -> int:
    body = _fault_body(args)
    return _call_controller(f"mrclab link {args.action}", args.api_port,
                            lambda client: client.fault(body))


def _add_link_parser(sub) -> argparse.ArgumentParser:
    # The registry's own bounds (model/faults.py), checked here before anything is sent (the
    # controller checks them again), so an out-of-range value never reaches a running fabric.
    from model import faults as R     # deferred: only when the link parser is built
    link = sub.add_parser("link", help="inject a fault through the running fabric's controller",
                          description="Inject or clear a fault through the controller API of a "
                          "running `mrclab fabric` (or run). Nodes: hosts h0.., switches "
                          "t0p<plane>g<group>, t1p<plane>s<spine>.")
    link.add_argument("--api-port", type=tcp_port, default=DEFAULT_API_PORT,
                      help=f"controller API port on 127.0.0.1 (default {DEFAULT_API_PORT})")
    acts = link.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    # --api-port is accepted after the action too; SUPPRESS keeps an earlier value when absent.
    port_after = argparse.ArgumentParser(add_help=False)
    port_after.add_argument("--api-port", type=tcp_port, default=argparse.SUPPRESS,
                            help=f"controller API port on 127.0.0.1 (default {DEFAULT_API_PORT})")

    def action(fault, **kwargs):
        return acts.add_parser(R.kind(fault).cli, parents=[port_after], **kwargs)

    def ab(p):
        p.add_argument("a", help="node at one end (e.g. t0p0g0 or h0)")
        p.add_argument("b", help="node at the other end (e.g. t1p0s0)")
        return p

    def direction(p, what):
        p.add_argument("--direction", default="both", choices=tuple(WIRE_DIRECTION),
                       help=f"forward: {what} packets from A to B only; reverse: from B to A "
                            f"only; both (default)")

    def bounded(fault, name):
        """argparse type of a number parameter within the registry's range, and the range."""
        p = R.kind(fault).param(name)
        if p.type == R.INT:
            return bounded_int(int(p.lo), int(p.hi)), p.range_text()
        return bounded_float(p.lo, p.hi, lo_open=p.lo_open), p.range_text()

    ab(action("link_down", help="take a link down (both ends, port-status events)"))
    ab(action("link_up", help="bring a link back up"))
    p = ab(action("flap", help="take a link down and up repeatedly"))
    period, period_range = bounded("flap", "period_s")
    p.add_argument("--period-s", type=period, default=1.0,
                   help=f"seconds down, then the same up, {period_range} (default 1)")
    count, count_range = bounded("flap", "count")
    p.add_argument("--count", type=count, default=3,
                   help=f"down/up cycles, {count_range} (default 3)")
    p = ab(action("gray_loss", help="gray loss: drop a percentage of packets silently"))
    percent, percent_range = bounded("gray_loss", "percent")
    p.add_argument("percent", type=percent, help=f"packets dropped, {percent_range}")
    direction(p, "drop")
    p = action("blackhole", help="a switch silently drops everything")
    p.add_argument("switch", help="switch name (e.g. t1p0s1)")
    p = ab(action("degrade", help="meter a link to a fraction of its rate"))
    fraction, fraction_range = bounded("degrade", "fraction")
    p.add_argument("fraction", type=fraction,
                   help=f"fraction of the link rate kept, {fraction_range}")
    p = ab(action("ecn_mark", help="mark CE on packets above a rate"))
    rate, rate_range = bounded("ecn_mark", "rate_mbit")
    p.add_argument("rate_mbit", type=rate,
                   help=f"rate (Mbit/s) above which packets are CE-marked, {rate_range}")
    direction(p, "mark")
    words = tuple(R.BY_CLEAR_WORD)
    p = acts.add_parser("clear", parents=[port_after],
                        help=f"clear a fault: {'|'.join(words)}")
    p.add_argument("what", choices=words, help="which fault to clear")
    p.add_argument("a", help="the switch (blackhole) or one end of the link")
    p.add_argument("b", nargs="?", help="the other end of the link (not for blackhole)")
    return link


# ---------------------------------------------------------------- denylist


def _ev_number(text: str) -> int:
    """An EV as a decimal or 0x-hex integer (the logs print EVs both ways)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an EV number (e.g. 268484609 or "
                                         f"0x1000c001), got {text!r}") from None
    if not 1 <= value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"an EV is 1..0xffffffff, got {text!r}")
    return value


def _deny_body(args) -> dict:
    if args.t1 is not None and args.plane is None:
        raise UsageError("--t1 needs --plane (a T1 switch is t1p<plane>s<t1>)")
    if args.link is not None:
        body = {"link": args.link}
    elif args.plane is not None:
        body = {"plane": args.plane} if args.t1 is None else {"plane": args.plane, "t1": args.t1}
    else:
        body = {"ev": args.ev}
    if args.reason:
        body["reason"] = args.reason
    return body


def _deny(args) -> int:
    def request(client):
        if args.show:
            return client.denylist()
        body = _deny_body(args)
        return client.deny(body) if args.cmd == "deny" else client.allow(body)
    return _call_controller(f"mrclab {args.cmd}", args.api_port, request)


def _add_deny_parsers(sub) -> None:
    for name, verb in (("deny", "deny paths on every endpoint (they stop using them at once)"),
                       ("allow", "lift a denial (the endpoints probe the paths back before use)")):
        p = sub.add_parser(name, help=f"{verb}, through the controller",
                           description=f"{verb[0].upper()}{verb[1:]}. The controller keeps the "
                           "denylist and pushes it to the control socket of every endpoint "
                           "registered with it (the runner registers them). A rule names paths "
                           "by link, by plane, by T1 switch or by one EV.")
        p.add_argument("--api-port", type=tcp_port, default=DEFAULT_API_PORT,
                       help=f"controller API port on 127.0.0.1 (default {DEFAULT_API_PORT})")
        what = p.add_mutually_exclusive_group(required=True)
        what.add_argument("--link", metavar="A~B",
                          help="every path crossing the link between nodes A and B "
                               "(e.g. h1~t0p0g0 or t0p0g0~t1p0s1)")
        what.add_argument("--plane", type=nonneg_int,
                          help="every path of this plane (with --t1: only those through it)")
        what.add_argument("--ev", type=_ev_number,
                          help="one entropy value (decimal or 0x hex, as in the endpoint logs)")
        what.add_argument("--show", action="store_true",
                          help="print the denylist in force and the registered endpoints")
        p.add_argument("--t1", type=nonneg_int, default=None,
                       help="with --plane P: every path through T1 switch t1p<P>s<T1>")
        p.add_argument("--reason", default="", help="free text kept in the controller's log")


# ---------------------------------------------------------------- bench / clean


def _run_bench(name: str, args) -> tuple[int, dict | None]:
    module, _, main_name, _ = BENCHES[name]
    func = resolve(f"{module}:{main_name}")
    try:
        if getattr(args, "json", False):
            # The human-readable figures go to stderr so stdout holds one JSON object.
            with contextlib.redirect_stdout(sys.stderr):
                figures = func(args)
        else:
            figures = func(args)
    except UsageError as e:
        print(f"mrclab bench {name}: {e}", file=sys.stderr)
        return EXIT_USAGE, None
    except RuntimeError as e:
        if not _is_fabric_error(e):
            raise
        print(f"mrclab bench {name}: the fabric failed: {e}", file=sys.stderr)
        return 1, None
    return 0, figures


def _bench(args, parser) -> int:
    if args.bench != "all":
        rc, figures = _run_bench(args.bench, args)
        if rc == 0 and args.json:
            print(json.dumps(figures, default=str))
        return rc
    results, rc = {}, 0
    for name in BENCHES:
        sub = parser.bench_parsers[name]
        bench_args = sub.parse_args([])          # every bench with its defaults
        bench_args.json = args.json
        print(f"== bench {name}", file=sys.stderr if args.json else sys.stdout, flush=True)
        one_rc, figures = _run_bench(name, bench_args)
        rc = max(rc, one_rc)
        if one_rc == 0:
            results[name] = figures
    if not results:
        return EXIT_USAGE
    if args.json:
        print(json.dumps(results, default=str))
    return rc


def _add_bench_parsers(sub, populate: bool) -> dict:
    b = sub.add_parser("bench", help="benchmarks: " + ", ".join(BENCHES) + ", all",
                       description="Benchmarks: each measures the compared implementations side "
                       "by side in one run and prints its figures (--json: one JSON object).")
    names = b.add_subparsers(dest="bench", metavar="NAME", parser_class=_Parser)
    names.unknown_choice_message = ("unknown benchmark {value!r}; known: "
                                    + ", ".join(BENCHES) + ", all")
    parsers = {}
    for name, (module, add_name, _, help_text) in BENCHES.items():
        p = names.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true",
                       help="print the figures as one JSON object on stdout")
        if populate:
            resolve(f"{module}:{add_name}")(p)
        parsers[name] = p
    p = names.add_parser("all", help="every benchmark above with its defaults")
    p.add_argument("--json", action="store_true",
                   help="print {bench name: figures} as one JSON object on stdout")
    parsers[""] = b
    return parsers


def _not_root(prog: str, why: str) -> bool:
    """True (after saying so) when not root: the fabric needs namespaces, OVS and nft."""
    if os.geteuid() == 0:
        return False
    print(f"{prog}: must run as root ({why}); try `sudo .venv/bin/{prog}` or `sudo make ...`",
          file=sys.stderr)
    return True


def _clean(args) -> int:
    if _not_root("mrclab clean", "it deletes the fabric's network interfaces, OVS bridges and "
                 "nft tables"):
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
    return 0


# ---------------------------------------------------------------- the tree


def _chosen_command(argv: list[str]) -> str | None:
    """The subcommand word of argv (the top level has no options that take a value)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole `mrclab` tree. Options of the subcommands that live in other modules are
    declared only for the subcommand argv chooses (all of them when argv is None), so that
    `mrclab link` does not import the runner."""
    chosen = None if argv is None else _chosen_command(argv)

    def populate(name: str) -> bool:
        return argv is None or name == chosen

    ap = _Parser(prog="mrclab", description="MRC lab: multipath RDMA transport emulator on a "
                 "Mininet multi-plane Clos fabric")
    ap.add_argument("--version", action="version", version=f"mrclab {package_version()}",
                    help="print the package version and exit")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)

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
    f.add_argument("--mtu", type=positive_int, default=1500,
                   help="IP MTU of every host and switch port, 1280..9000 (default 1500)")
    f.add_argument("--routing", choices=("srv6", "ecmp"), default="srv6",
                   help="srv6: the sender picks the path (MRC); ecmp: switches hash flows "
                        "(default srv6)")
    f.add_argument("--switch-buffer-kb", type=positive_int, default=None,
                   help="drop-tail buffer of every switch egress port (default: HTB's deep queue)")
    f.add_argument("--dynamic-convergence-s", type=nonneg_float, default=None,
                   help="ecmp: recompute buckets this long after a port goes down")
    f.add_argument("--run-dir", default=None, help="controller log + fault log here")
    f.add_argument("--check", action="store_true", help="verify forwarding, print one line, exit")
    # Accepted only to explain why they cannot work here (no sch_netem on this kernel).
    f.add_argument("--delay", default=None, help=argparse.SUPPRESS)
    f.add_argument("--loss", default=None, help=argparse.SUPPRESS)

    ap.group_parsers = {"link": _add_link_parser(sub)}
    _add_deny_parsers(sub)

    c = sub.add_parser("clean", help="remove leftovers of a crashed fabric (ours only; root)")
    c.add_argument("--wait-s", type=nonneg_float, default=5.0,
                   help="how long to wait for a running fabric's lock (default 5)")

    for name, target in ARGUMENTS.items():
        p = sub.add_parser(name, help=COMMAND_HELP[name], description=COMMAND_HELP[name])
        if populate(name):
            resolve(target)(p)
    ap.bench_parsers = _add_bench_parsers(sub, populate=populate("bench"))
    ap.group_parsers["bench"] = ap.bench_parsers.pop("")
    ap.group_parsers["scenario"] = _add_scenario_parser(sub)
    return ap


def _group_help(parser: argparse.ArgumentParser, args) -> int | None:
    """A command group named without its subcommand (bare `mrclab`, `mrclab link`, `mrclab
    bench`, `mrclab scenario`): print its help and return the usage exit code, as argparse does
    for a missing argument; None when a subcommand was given."""
    if args.cmd is None:
        parser.print_help()
        return EXIT_USAGE
    chosen = {"link": "action", "bench": "bench", "scenario": "what"}.get(args.cmd)
    if chosen is not None and getattr(args, chosen) is None:
        parser.group_parsers[args.cmd].print_help()
        return EXIT_USAGE
    return None


def _add_scenario_parser(sub) -> argparse.ArgumentParser:
    s = sub.add_parser("scenario", help="about scenario files: `mrclab scenario keys` lists every "
                       "key", description="About scenario files (experiments/*.toml).")
    what = s.add_subparsers(dest="what", metavar="WHAT", parser_class=_Parser)
    what.add_parser("keys", help="every scenario key: type, range, default, meaning (Markdown)",
                    description="Print every key a scenario file may hold, one Markdown table per "
                    "TOML table (the same tables as docs/reference.md).")
    return s


def _scenario(args) -> int:
    from emulation.config.scenario_schema import reference  # deferred: only for this subcommand
    return print_to_pipe(reference())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    rc = _group_help(parser, args)
    if rc is not None:
        return rc
    if args.cmd == "scenario":
        return _scenario(args)
    if args.cmd == "fabric":
        try:
            return _fabric(args)
        except RuntimeError as e:
            if not _is_fabric_error(e):
                raise
            print(f"mrclab fabric: the fabric failed: {e}", file=sys.stderr)
            return 1
    if args.cmd == "link":
        return _link(args)
    if args.cmd in ("deny", "allow"):
        return _deny(args)
    if args.cmd == "clean":
        return _clean(args)
    if args.cmd == "bench":
        return _bench(args, parser)
    if (args.cmd in ("run", "sweep") and not getattr(args, "validate_only", False)
            and _not_root(f"mrclab {args.cmd}",
                          "it builds the fabric: namespaces, veths, OVS bridges")):
        return EXIT_USAGE
    return _run_main(f"mrclab {args.cmd}", DISPATCH[args.cmd], args)


if __name__ == "__main__":
    sys.exit(main())
