"""`mrclab link` (inject or clear a fault) and `mrclab deny|allow` (the denylist): the commands
that talk to a running fabric's controller API. Their options and handlers."""
from __future__ import annotations

import argparse
import json
import sys

from emulation.cli_common import EXIT_USAGE, Parser
from model.argtypes import UsageError, bounded_float, bounded_int, nonneg_int, tcp_port
from model.ports import API_PORT

DEFAULT_API_PORT = API_PORT     # model/ports.py


# Shell-safe spellings of the controller's directions ("a->b" would be a redirect to file "b").
WIRE_DIRECTION = {"forward": "a->b", "reverse": "b->a", "both": "both"}


def fault_body(args) -> dict:
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


def link(args) -> int:
    body = fault_body(args)
    return _call_controller(f"mrclab link {args.action}", args.api_port,
                            lambda client: client.fault(body))


def add_link_parser(sub) -> argparse.ArgumentParser:
    # The registry's own bounds (model/faults.py), checked here before anything is sent (the
    # controller checks them again), so an out-of-range value never reaches a running fabric.
    from model import faults as R     # deferred: only when the link parser is built
    link = sub.add_parser("link", help="inject a fault through the running fabric's controller",
                          description="Inject or clear a fault through the controller API of a "
                          "running `mrclab fabric` (or run). Nodes: hosts h0.., switches "
                          "t0p<plane>g<group>, t1p<plane>s<spine>.")
    link.add_argument("--api-port", type=tcp_port, default=DEFAULT_API_PORT,
                      help=f"controller API port on 127.0.0.1 (default {DEFAULT_API_PORT})")
    acts = link.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
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


def deny(args) -> int:
    def request(client):
        if args.show:
            return client.denylist()
        body = _deny_body(args)
        return client.deny(body) if args.cmd == "deny" else client.allow(body)
    return _call_controller(f"mrclab {args.cmd}", args.api_port, request)


def add_deny_parsers(sub) -> None:
    for name, verb in (("deny", "deny paths on every endpoint (they stop using them at once)"),
                       ("allow", "lift a denial (the endpoints probe the paths back before use)")):
        p = sub.add_parser(name, help=f"{verb}, through the controller",
                           description=f"{verb[0].upper()}{verb[1:]}. The controller keeps the "
                           "denylist and pushes it to the control socket of every endpoint "
                           "registered with it (the runner registers them). A rule names paths "
                           "by link, by plane, by T1 switch or by one EV. A deny that would "
                           "leave two hosts with no path between them is refused.")
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
