"""Host and link configuration as plain argv lists (pure: no Mininet, no subprocess).

Why lists: every command the fabric runs is built here, so unit tests can check exactly what would
be executed without root, and the fabric can run each one checked (raise with the command and its
stderr), instead of Mininet's habit of logging tc failures and carrying on.

Host networking contract: host n has one interface per plane h{n}-p{plane} with MAC
topology.nic_mac and address topology.nic_addr/64 (no DAD), a route for the plane prefix, permanent
neighbours for every other host on the plane (the fabric carries no ND), checksum offload off (the
userspace OVS datapath does not complete partial checksums), and no IPv6 autoconfiguration noise.
"""
from __future__ import annotations

import ipaddress

from model import timescale
from model.dscp import DSCP_CONTROL
from model.topology import DEFAULT_MTU, USID_LOCATOR, Topology, plane_prefix

# Link options Mininet's TCLink accepts that need sch_netem / RED, which this kernel lacks.
NETEM_OPTIONS = ("delay", "jitter", "loss", "enable_ecn", "enable_red", "max_queue_size")

# HTB handle used on every fabric interface (root qdisc 5:, one class 5:1 carrying everything;
# with the control class, leaves 5:10 (control, served first) and 5:20 (the rest) under it).
HTB_HANDLE = "5:"
HTB_CLASS = "5:1"
CONTROL_LEAF_CLASSES = ("5:10", "5:20")
# The priority leaf's assured rate, as a share of the link. HTB serves a leaf that is under its
# assured rate before any leaf that borrows, whatever their prio (prio only orders leaves in the
# same state), so a priority leaf with a small share is served AFTER backlogged data whenever
# its own traffic exceeds that share. With nearly the whole link assured, the priority leaf
# stays under its rate (and is served first) until priority traffic fills 99% of the link; the
# data leaf borrows whatever it leaves unused (both ceil the link), so data still gets the link.
CONTROL_SHARE = 0.99


class LinkOptionError(ValueError):
    """A link option this emulator cannot honour; the message says what to use instead."""


def validate_link_options(options: dict | None) -> None:
    """Reject netem-style options up front: silently ignoring them would fake an experiment."""
    for key in sorted(options or {}):
        if key in NETEM_OPTIONS:
            raise LinkOptionError(
                f"link option {key!r} needs sch_netem/RED, which this kernel does not have "
                f"(userspace OVS, no netem). Inject loss with the fault API instead: "
                f"`mrclab link loss A B PERCENT` / POST /fault {{\"action\": \"gray_loss\"}}; "
                f"ECN marking with `mrclab link ecn`; rates come from --host-mbit/--fabric-mbit.")
        raise LinkOptionError(f"unknown link option {key!r}; link rates are set by the fabric spec "
                              f"(host_link_mbit, fabric_link_mbit)")


def _sysctl(key: str, value: int | str) -> list[str]:
    return ["sysctl", "-q", "-w", f"{key}={value}"]


def namespace_sysctl_argvs() -> list[list[str]]:
    """Namespace-wide IPv6 defaults of a host: no router advertisements, no autoconf, no DAD."""
    out = []
    for scope in ("all", "default"):
        out += [
            _sysctl(f"net.ipv6.conf.{scope}.accept_ra", 0),
            _sysctl(f"net.ipv6.conf.{scope}.autoconf", 0),
            _sysctl(f"net.ipv6.conf.{scope}.accept_dad", 0),
            _sysctl(f"net.ipv6.conf.{scope}.dad_transmits", 0),
            _sysctl(f"net.ipv6.conf.{scope}.router_solicitations", 0),
        ]
    return out


def intf_quiet_sysctl_argvs(intf: str) -> list[list[str]]:
    """Per-interface: no link-local address (addr_gen_mode 1), so no DAD/RS/MLD from it."""
    return [
        _sysctl(f"net.ipv6.conf.{intf}.accept_ra", 0),
        _sysctl(f"net.ipv6.conf.{intf}.autoconf", 0),
        _sysctl(f"net.ipv6.conf.{intf}.accept_dad", 0),
        _sysctl(f"net.ipv6.conf.{intf}.dad_transmits", 0),
        _sysctl(f"net.ipv6.conf.{intf}.router_solicitations", 0),
        _sysctl(f"net.ipv6.conf.{intf}.addr_gen_mode", 1),
    ]


def offload_off_argv(intf: str) -> list[str]:
    return ["ethtool", "-K", intf, "tx", "off", "rx", "off"]


def usid_block() -> str:
    """The SRv6 uSID locator block (fcbb:bb00::/32) as a prefix."""
    return f"{ipaddress.IPv6Address(USID_LOCATOR << 96)}/32"


def usid_blackhole_argv() -> list[str]:
    """Hosts are not SRv6 nodes: drop uSID-addressed packets silently. Without this the kernel
    answers every source-routed packet that reaches it with ICMPv6 "no route" (rate limited),
    stray traffic that shows up in port counters and captures."""
    return ["ip", "-6", "route", "replace", "blackhole", usid_block()]


# Linux's minimum TCP RTO (include/net/tcp.h: TCP_RTO_MIN = HZ / 5).
TCP_RTO_MIN_MS = 200


def host_argvs(topo: Topology, n: int, time_scale: float = 1.0) -> list[list[str]]:
    """Every command (run inside host n's namespace, in order) that configures host n.
    time_scale k > 1 (model/timescale.py): kernel TCP's minimum RTO on the plane routes is
    TCP_RTO_MIN_MS in the wall world, so a dilated fabric's TCP waits as long in emulated time."""
    host = topo.host(n)
    out = namespace_sysctl_argvs()
    out.append(usid_blackhole_argv())
    for plane in range(topo.spec.planes):
        intf = f"{host.name}-p{plane}"
        out.append(["ip", "link", "set", "dev", intf, "down"])
        out.append(mtu_argv(intf, topo.spec.mtu))
        out += intf_quiet_sysctl_argvs(intf)
        out.append(["ip", "addr", "flush", "dev", intf])
        out.append(["ip", "link", "set", "dev", intf, "address", topo.nic_mac(n, plane)])
        out.append(["ip", "link", "set", "dev", intf, "up"])
        out.append(["ip", "-6", "addr", "add", f"{topo.nic_addr(n, plane)}/64", "dev", intf,
                    "nodad"])
        route = ["ip", "-6", "route", "replace", plane_prefix(plane), "dev", intf]
        if time_scale != 1:
            route += ["rto_min", f"{round(timescale.wall_time(TCP_RTO_MIN_MS, time_scale))}ms"]
        out.append(route)
        for other in topo.hosts:
            if other.index == n:
                continue
            out.append(["ip", "-6", "neigh", "replace", topo.nic_addr(other.index, plane),
                        "lladdr", topo.nic_mac(other.index, plane), "dev", intf,
                        "nud", "permanent"])
        out.append(offload_off_argv(intf))
    return out


def mtu_argv(intf: str, mtu: int) -> list[str]:
    return ["ip", "link", "set", "dev", intf, "mtu", str(mtu)]


def ovs_mtu_argv(intf: str, mtu: int) -> list[str]:
    """OVS's own record of the port MTU: the userspace datapath sizes its receive buffers from
    it, and without mtu_request it may put the device back to the bridge's MTU."""
    return ["ovs-vsctl", "--timeout=20", "set", "Interface", intf, f"mtu_request={mtu}"]


def switch_intf_argvs(intf: str, mtu: int = DEFAULT_MTU) -> list[list[str]]:
    """Switch-side veth ends live in the root namespace: keep the root kernel off them; both
    ends of a veth carry the fabric's MTU."""
    return [
        _sysctl(f"net.ipv6.conf.{intf}.disable_ipv6", 1),
        offload_off_argv(intf),
        mtu_argv(intf, mtu),
        ovs_mtu_argv(intf, mtu),
    ]


def htb_argvs(intf: str, mbit: float, mtu: int = DEFAULT_MTU,
              control_class: bool = False) -> list[list[str]]:
    """HTB shaping of one interface's egress to `mbit` (what TCIntf does for bw=, minus netem).
    control_class: SACKs, NACKs and probes (DSCP_CONTROL) in a leaf served ahead of the rest
    (HTB's prio; this kernel has no prio qdisc), as the trimming ports do."""
    if mbit <= 0:
        raise ValueError(f"rate of {intf} must be positive, got {mbit} Mbit/s")
    rate = f"{mbit:g}mbit"
    # Burst of at least 10 MTU-sized packets, so a 100 Mbit/s link is not limited by timer
    # granularity (and a jumbo-frame link still passes a burst of several frames).
    burst = max(10 * mtu, int(mbit * 1e6 / 8 / 1000))
    shape = ["burst", str(burst), "cburst", str(burst)]
    out = [
        ["tc", "qdisc", "replace", "dev", intf, "root", "handle", HTB_HANDLE, "htb",
         "default", "20" if control_class else "1"],
        ["tc", "class", "replace", "dev", intf, "parent", HTB_HANDLE, "classid", HTB_CLASS,
         "htb", "rate", rate, "ceil", rate, *shape],
    ]
    if not control_class:
        return out
    for leaf, share, prio in zip(CONTROL_LEAF_CLASSES, (CONTROL_SHARE, 1 - CONTROL_SHARE),
                                 ("0", "1")):
        out.append(["tc", "class", "replace", "dev", intf, "parent", HTB_CLASS, "classid", leaf,
                    "htb", "rate", f"{mbit * share:g}mbit", "ceil", rate, "prio", prio, *shape])
    return out + priority_filter_argvs(intf, HTB_HANDLE, CONTROL_LEAF_CLASSES[0],
                                       (DSCP_CONTROL,))


def priority_filter_argvs(intf: str, parent: str, flowid: str, dscps) -> list[list[str]]:
    """u32 filters sending each DSCP of `dscps` (outermost IPv6 header) to the priority class.
    'ip6 priority' matches the 8-bit traffic class; mask 0xfc ignores the ECN bits."""
    return [["tc", "filter", "replace", "dev", intf, "parent", parent, "protocol", "ipv6",
             "pref", str(pref), "u32", "match", "ip6", "priority", f"{dscp << 2:#04x}", "0xfc",
             "flowid", flowid]
            for pref, dscp in enumerate(dscps, start=1)]


def set_controller_argv(bridges: list[str], target: str) -> list[str]:
    """One ovs-vsctl transaction pointing every bridge at the controller."""
    argv = ["ovs-vsctl", "--timeout=20"]
    for br in bridges:
        argv += ["--", "set-controller", br, target]
    for br in bridges:
        # Reconnect fast (default backoff is 8 s) so a restarted controller takes over quickly.
        argv += ["--", "set", "controller", br, "max_backoff=1000"]
    return argv


def ofport_query_argv(intf: str) -> list[str]:
    return ["ovs-vsctl", "--timeout=10", "get", "Interface", intf, "ofport"]
