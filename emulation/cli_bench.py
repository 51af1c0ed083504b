"""`mrclab bench NAME|all [--json]`: the benchmarks by name, their options (declared by each
bench module) and the handler that runs one or all of them."""
from __future__ import annotations

import contextlib
import json
import sys

from emulation.cli_common import EXIT_USAGE, Parser, is_fabric_error, resolve
from model.argtypes import UsageError

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
    "tunnel": ("emulation.benches.tunnel", "add_tunnel_arguments", "tunnel_main",
               "a link between servers (VXLAN) against one on a server (veth): CPU per frame"),
    "fidelity": ("emulation.benches.fidelity", "add_fidelity_arguments", "fidelity_main",
                 "the demo's short version idle and with busy processes: MRC's median "
                 "iteration, their ratio, both fidelity verdicts"),
}


def run_bench(name: str, args) -> tuple[int, dict | None]:
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
        if not is_fabric_error(e):
            raise
        print(f"mrclab bench {name}: the fabric failed: {e}", file=sys.stderr)
        return 1, None
    return 0, figures


def bench(args, parser) -> int:
    if args.bench != "all":
        rc, figures = run_bench(args.bench, args)
        if rc == 0 and args.json:
            print(json.dumps(figures, default=str))
        return rc
    results, rc = {}, 0
    for name in BENCHES:
        sub = parser.bench_parsers[name]
        bench_args = sub.parse_args([])          # every bench with its defaults
        bench_args.json = args.json
        print(f"== bench {name}", file=sys.stderr if args.json else sys.stdout, flush=True)
        one_rc, figures = run_bench(name, bench_args)
        rc = max(rc, one_rc)
        if one_rc == 0:
            results[name] = figures
    if not results:
        return EXIT_USAGE
    if args.json:
        print(json.dumps(results, default=str))
    return rc


def add_bench_parsers(sub, populate: bool) -> dict:
    b = sub.add_parser("bench", help="benchmarks: " + ", ".join(BENCHES) + ", all",
                       description="Benchmarks: each measures the compared implementations side "
                       "by side in one run and prints its figures (--json: one JSON object).")
    names = b.add_subparsers(dest="bench", metavar="NAME", parser_class=Parser)
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
