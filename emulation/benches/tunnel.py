"""`mrclab bench tunnel`: what a fabric link that crosses servers costs per frame against one on a
single server. The same full-size frames are flooded for the same time from one network
namespace to another, over a veth pair (a link on one server) and over a VXLAN tunnel carried by
a veth pair (a link between servers, made as emulation/cluster/vxlan.py makes it, over a
management link of the MTU it needs), in alternating rounds. Per round: frames delivered per
second, and the machine's CPU per delivered frame (/proc/stat busy time over the round on every
core: the sender's loop and the kernel's work at both ends). The difference per frame is the
tunnel's cost, what docs/cluster.md's estimate of the k a fabric needs on N servers adds per
crossing.

On one machine both ends' kernels share the same cores, which on two servers they would not:
the tunnel's figure is the sum of both ends' costs, an upper bound on either server's share.
The namespaces are the bench's own (NETNS_PREFIX) and removed when it ends, also on a failure.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from analysis.cpu_usage import parse_proc_stat
from emulation.cluster import vxlan
from model.argtypes import UsageError, positive_float, positive_int
from model.proc import run_checked

REPO = Path(__file__).resolve().parents[2]
NETNS_PREFIX = "mrcbt-"
SENDER, RECEIVER = NETNS_PREFIX + "a", NETNS_PREFIX + "b"
UNDERLAY = ("10.215.0.1", "10.215.0.2")       # the management link's ends, a /30
VNI = 4242
ETHERTYPE_LOCAL = b"\x88\xb5"                  # IEEE 802 local experimental
LINKS = ("veth", "vxlan")


def add_tunnel_arguments(parser) -> None:
    """The options of `mrclab bench tunnel`."""
    parser.add_argument("--seconds", type=positive_float, default=1.0,
                        help="seconds per round (default 1)")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="rounds per link, alternating; the median is reported (default 3)")
    parser.add_argument("--mtu", type=positive_int, default=9000,
                        help="the fabric link's MTU, so each frame's size (default 9000)")


def plan_up(mtu: int) -> list[list[str]]:
    """The commands that make both links between the two namespaces: veth `pa`-`pb`, and the
    tunnel `va`-`vb` over the management veth `ua`-`ub`."""
    a, b = UNDERLAY
    underlay = vxlan.underlay_mtu_needed(mtu)
    # no IPv6 on the bench's links: its neighbour and router solicitations would be counted
    # among the frames delivered
    quiet = ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"]
    cmds = [["ip", "netns", "add", SENDER], ["ip", "netns", "add", RECEIVER],
            ["ip", "netns", "exec", SENDER, *quiet], ["ip", "netns", "exec", RECEIVER, *quiet],
            ["ip", "link", "add", "pa", "netns", SENDER, "mtu", str(mtu), "type", "veth",
             "peer", "name", "pb", "netns", RECEIVER, "mtu", str(mtu)],
            ["ip", "link", "add", "ua", "netns", SENDER, "mtu", str(underlay), "type", "veth",
             "peer", "name", "ub", "netns", RECEIVER, "mtu", str(underlay)]]
    for ns, under, addr in ((SENDER, "ua", a), (RECEIVER, "ub", b)):
        cmds += [["ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", under],
                 ["ip", "-n", ns, "link", "set", "dev", under, "up"],
                 ["ip", "-n", ns, "link", "set", "dev", "pa" if ns == SENDER else "pb", "up"]]
    for ns, dev, local, remote in ((SENDER, "va", a, b), (RECEIVER, "vb", b, a)):
        cmds += [["ip", "-n", ns, *argv[1:]] for argv in vxlan.add_argv(dev, VNI, local, remote,
                                                                         mtu)]
    return cmds


def plan_down() -> list[list[str]]:
    return [["ip", "netns", "delete", SENDER], ["ip", "netns", "delete", RECEIVER]]


def frame(mtu: int) -> bytes:
    """A broadcast Ethernet frame of the link's full size (payload `mtu` bytes)."""
    return b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + ETHERTYPE_LOCAL + bytes(mtu)


def _busy_s() -> float:
    total, idle, _, _ = parse_proc_stat(Path("/proc/stat").read_text())
    return (total - idle) / os.sysconf("SC_CLK_TCK")


def _rx_packets(ns: str, dev: str) -> int:
    out = json.loads(run_checked(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev],
                                 what="reading the receiver's counters", error=UsageError))
    return int(out[0]["stats64"]["rx"]["packets"])


def one_round(link: str, mtu: int, seconds: float) -> dict:
    """Flood `link` for `seconds`; frames delivered per second and busy CPU us per frame."""
    send, recv = ("pa", "pb") if link == "veth" else ("va", "vb")
    before_rx, before_busy, started = _rx_packets(RECEIVER, recv), _busy_s(), time.monotonic()
    done = subprocess.run(["ip", "netns", "exec", SENDER, sys.executable, "-m",
                           "emulation.benches.flood", send, frame(mtu).hex(), str(seconds)],
                          capture_output=True, text=True, timeout=seconds + 60, cwd=REPO)
    busy, wall = _busy_s() - before_busy, time.monotonic() - started
    if done.returncode != 0:
        raise UsageError(f"the flood over {link} failed: {done.stderr.strip()[-300:]}")
    delivered = _rx_packets(RECEIVER, recv) - before_rx
    if delivered <= 0:
        raise UsageError(f"no frame arrived over {link} (sent {done.stdout.strip()})")
    return {"frames_per_s": delivered / wall, "cpu_us_per_frame": busy / delivered * 1e6,
            "sent": int(done.stdout.strip() or 0), "delivered": delivered}


def summarize(rounds: dict[str, list[dict]]) -> dict:
    """Each link's medians over its rounds, and the tunnel's extra CPU per frame."""
    out = {link: {key: round(statistics.median(r[key] for r in rows), 3)
                  for key in ("frames_per_s", "cpu_us_per_frame")}
           for link, rows in rounds.items()}
    out["tunnel_cpu_us_per_frame"] = round(out["vxlan"]["cpu_us_per_frame"]
                                           - out["veth"]["cpu_us_per_frame"], 3)
    out["cpu_ratio"] = round(out["vxlan"]["cpu_us_per_frame"]
                             / out["veth"]["cpu_us_per_frame"], 3)
    out["rounds"] = rounds
    return out


def tunnel_main(args) -> dict:
    """`mrclab bench tunnel`: the figures (UsageError naming what failed)."""
    for argv in plan_down():                      # left by a bench that was killed
        subprocess.run(argv, capture_output=True, timeout=30)
    try:
        for argv in plan_up(args.mtu):
            run_checked(argv, what="making the bench's links", error=UsageError)
        rounds: dict[str, list[dict]] = {link: [] for link in LINKS}
        for _ in range(args.rounds):
            for link in LINKS:
                rounds[link].append(one_round(link, args.mtu, args.seconds))
        figures = summarize(rounds)
    finally:
        for argv in plan_down():
            subprocess.run(argv, capture_output=True, timeout=30)
    print(f"veth: {figures['veth']['frames_per_s']:.0f} frames/s, "
          f"{figures['veth']['cpu_us_per_frame']:.1f} us of CPU per frame; vxlan: "
          f"{figures['vxlan']['frames_per_s']:.0f} frames/s, "
          f"{figures['vxlan']['cpu_us_per_frame']:.1f} us; the tunnel adds "
          f"{figures['tunnel_cpu_us_per_frame']:.1f} us per {args.mtu}-byte frame "
          f"(x{figures['cpu_ratio']:.2f})", file=sys.stderr)
    return figures
