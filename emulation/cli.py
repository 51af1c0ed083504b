"""`mrclab`: the one command line of MRC lab.

    mrclab fabric [--planes P --groups G --spines S --hosts H ...] [--check]
    mrclab link ACTION ...              (a fault of model/faults.py, or clear WHAT)
    mrclab deny|allow --link A~B | --plane P [--t1 S] | --ev EV | --show
    mrclab clean
    mrclab run | analyze | notebook | wireshark ...
    mrclab scenario keys
    mrclab sweep | compare | top | paper ...
    mrclab bench NAME|all [--json]
    mrclab local-server up|down [NAME]

One argparse tree: every subcommand declares its own options (`mrclab <command> --help`).
Subcommands owned by other modules are imported lazily through "module:function" strings, only for
the command chosen: `mrclab link` does not pay the runner's seconds of imports.

This module builds the tree and dispatches; each family of subcommands declares its options and
handles them in its own module: emulation/cli_fabric.py (fabric, clean), cli_controller.py (link,
deny, allow), cli_bench.py (bench); what they share is in cli_common.py.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import sys

from emulation.cli_bench import add_bench_parsers, bench
from emulation.cli_common import (EXIT_INTERRUPTED, EXIT_USAGE, Parser, is_fabric_error, not_root,
                                  resolve)
from emulation.cli_controller import add_deny_parsers, add_link_parser, deny, link
from emulation.cli_fabric import add_clean_parser, add_fabric_parser, clean, fabric_main
from model.argtypes import UsageError, print_to_pipe

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
    "paper": ("emulation.run.paper", "every shipped sweep in full (resumable), then "
                                     "docs/results/paper.md from their tables"),
}
for _name, (_module, _help) in EXPERIMENT_COMMANDS.items():
    DISPATCH[_name], ARGUMENTS[_name] = f"{_module}:main", f"{_module}:add_arguments"
    COMMAND_HELP[_name] = _help
# `mrclab local-server` (emulation/cluster/local_server.py): a server made of namespaces, to try
# a run over several servers without a second machine.
DISPATCH["local-server"] = "emulation.cluster.local_server:main"
ARGUMENTS["local-server"] = "emulation.cluster.local_server:add_arguments"
COMMAND_HELP["local-server"] = ("a second server on this machine (namespaces, its own Open "
                                 "vSwitch and sshd) to try or test a run over several servers")
# `mrclab calibrate` (emulation/calibration/calibrate_cli.py): the time scale this machine needs for a fabric.
DISPATCH["calibrate"] = "emulation.calibration.calibrate_cli:main"
ARGUMENTS["calibrate"] = "emulation.calibration.calibrate_cli:add_arguments"
COMMAND_HELP["calibrate"] = ("the smallest time scale at which this machine runs a scenario's "
                             "fabric with fidelity \"ok\" (cached; --json: margins)")


def _run_main(prog: str, target: str, args) -> int:
    func = resolve(target)
    try:
        rc = func(args)
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as e:
        if not is_fabric_error(e):
            raise
        print(f"{prog}: the fabric failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Whatever ran cleaned up on the way out (fabric, workers, captures); a run directory
        # keeps what was collected and says "interrupted" in run.json.
        print(f"\n{prog}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return int(rc or 0)


def package_version() -> str:
    try:
        return importlib.metadata.version("mrclab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed as a package; run scripts/setup.sh)"


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

    ap = Parser(prog="mrclab", description="MRC lab: multipath RDMA transport emulator on a "
                 "Mininet multi-plane Clos fabric")
    ap.add_argument("--version", action="version", version=f"mrclab {package_version()}",
                    help="print the package version and exit")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)

    add_fabric_parser(sub)
    ap.group_parsers = {"link": add_link_parser(sub)}
    add_deny_parsers(sub)
    add_clean_parser(sub)
    for name, target in ARGUMENTS.items():
        p = sub.add_parser(name, help=COMMAND_HELP[name], description=COMMAND_HELP[name])
        if populate(name):
            resolve(target)(p)
    ap.bench_parsers = add_bench_parsers(sub, populate=populate("bench"))
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
    what = s.add_subparsers(dest="what", metavar="WHAT", parser_class=Parser)
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
        return fabric_main(args)
    if args.cmd == "link":
        return link(args)
    if args.cmd in ("deny", "allow"):
        return deny(args)
    if args.cmd == "clean":
        return clean(args)
    if args.cmd == "bench":
        return bench(args, parser)
    if (args.cmd in ("run", "sweep", "paper") and not getattr(args, "validate_only", False)
            and not getattr(args, "page_only", False)
            and not_root(f"mrclab {args.cmd}",
                          "it builds the fabric: namespaces, veths, OVS bridges")):
        return EXIT_USAGE
    return _run_main(f"mrclab {args.cmd}", DISPATCH[args.cmd], args)


if __name__ == "__main__":
    sys.exit(main())
