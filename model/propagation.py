"""Propagation delay and the bandwidth-delay product (BDP) of a fabric, from its spec alone.

`[fabric] host_link_delay_ms` and `fabric_link_delay_ms` (FabricSpec) are each link's one-way
propagation delay. A path's one-way delay is the sum over its links: a host link at each end,
plus a T0-T1 and a T1-T0 fabric link when the two hosts sit under different T0s (same-T0 paths
are shorter). Its unloaded round trip for a full frame adds the frame's store-and-forward
serialization on every link (frame_rtt_ns); the acknowledgement's own serialization is small
and left out.

The BDP in packets per plane is what one NIC port must keep in flight to fill its link: the
port's rate (host_link_mbit) x that round trip on the longest path (across groups), in full
frames on the wire. A window smaller than it leaves the link idle; a loss is found by a SACK gap
only when packets sent after it are in flight, so a BDP of about one frame turns every loss
into a timeout, and the MRC paper's fabrics hold on the order of a hundred packets per BDP.

Where the delay is emulated: the kernel here has no netem, so the fabric itself adds none; each
userspace endpoint (traffic/nic/endpoint.py) holds every frame it receives for the path's
one-way delay, so data, SACKs, NACKs and probes all see it. Kernel TCP runs in the kernel and
gets none (TCP_BYPASSES_DELAY). Every quantity here is in the world of the spec it is given:
the declared spec gives emulated times, the wall spec (emulation/calibration/time_scale.py) the
wall times; a BDP in packets is the same in both (rates / k, times x k).

Pure standard library.
"""
from __future__ import annotations

import textwrap

from model.topology import FabricSpec

# Bytes a frame of an `mtu`-byte IP packet occupies on the wire, as the links' shapers count
# it: the Ethernet header (14) and the frame check sequence (4).
ETHERNET_OVERHEAD = 18

# Kernel TCP's sockets are the kernel's: no userspace receive path to hold its frames in.
TCP_BYPASSES_DELAY = ("kernel TCP runs in the kernel, which has no netem here: it gets no "
                      "propagation delay, so its round trip is the fabric's alone and its BDP "
                      "the no-delay one; its recovery and window growth look faster than on "
                      "the declared fabric")
DELAYED_TRANSPORTS = ("mrc", "roce")


def wire_frame_bytes(spec: FabricSpec) -> int:
    """A full frame of the fabric's MTU on the wire."""
    return spec.mtu + ETHERNET_OVERHEAD


def one_way_delay_ns(spec: FabricSpec, across_groups: bool = True) -> int:
    """The propagation delay of one direction of a path: two host links, plus two fabric links
    when the hosts are under different T0s; whole ns."""
    ms = 2 * spec.host_link_delay_ms + (2 * spec.fabric_link_delay_ms if across_groups else 0)
    return int(round(ms * 1e6))


def frame_rtt_ns(spec: FabricSpec, frame_bytes: int, across_groups: bool) -> int:
    """What one frame of `frame_bytes` (on the wire) adds to an unloaded round trip: its
    serialization on every link of the path, each switch storing it whole before forwarding
    (host link, then T0-T1 and T1-T0 fabric links across groups, then the peer's host link).
    The SACK coming back is small: its share is left out."""
    seconds = 2 * frame_bytes * 8 / (spec.host_link_mbit * 1e6)
    if across_groups:
        seconds += 2 * frame_bytes * 8 / (spec.fabric_link_mbit * 1e6)
    return int(seconds * 1e9)


def propagation_rtt_ns(spec: FabricSpec, across_groups: bool = True, delayed: bool = True) -> int:
    """The propagation both ways of a path (0 for a transport that bypasses the delay line)."""
    return 2 * one_way_delay_ns(spec, across_groups) if delayed else 0


def variable_rtt_ns(base_rtt_ns: int, propagation_rtt_ns: int) -> int:
    """The part of a base RTT that is not propagation: the whole of it when the propagation is
    unknown (0) or not below it (a configured base RTT that does not hold the propagation)."""
    if 0 < propagation_rtt_ns < base_rtt_ns:
        return base_rtt_ns - propagation_rtt_ns
    return base_rtt_ns


def path_rtt_ns(spec: FabricSpec, across_groups: bool = True, delayed: bool = True) -> int:
    """A full frame's unloaded round trip: propagation both ways (none when not `delayed`: a
    transport that bypasses the delay line) plus its serialization on the path."""
    return (propagation_rtt_ns(spec, across_groups, delayed)
            + frame_rtt_ns(spec, wire_frame_bytes(spec), across_groups))


def _shortest_across_groups(spec: FabricSpec) -> bool:
    """Whether the fabric's shortest host-to-host path crosses groups: only when no group holds
    two hosts (else it stays under one T0)."""
    return spec.hosts_per_group < 2


def shortest_path_rtt_ns(spec: FabricSpec, delayed: bool = True) -> int:
    """path_rtt_ns of the shortest host-to-host path the fabric has (_shortest_across_groups)."""
    return path_rtt_ns(spec, across_groups=_shortest_across_groups(spec), delayed=delayed)


def shortest_path_propagation_rtt_ns(spec: FabricSpec, delayed: bool = True) -> int:
    """propagation_rtt_ns of the path shortest_path_rtt_ns takes."""
    return propagation_rtt_ns(spec, across_groups=_shortest_across_groups(spec), delayed=delayed)


def bdp_packets(spec: FabricSpec, delayed: bool = True) -> float:
    """Full frames one plane's NIC port keeps in flight on the longest path: port rate x
    path_rtt_ns / wire_frame_bytes."""
    rtt_s = path_rtt_ns(spec, True, delayed) / 1e9
    return spec.host_link_mbit * 1e6 / 8 * rtt_s / wire_frame_bytes(spec)


def ports_rtt_ns(spec: FabricSpec) -> int:
    """The round trip the switch ports are sized on: the fabric's longest unloaded one
    (path_rtt_ns across groups, propagation included: the ports are the fabric's, whatever
    transport crosses them)."""
    return path_rtt_ns(spec, True, True)


def port_bdp_bytes(spec: FabricSpec, mbit: float) -> int:
    """A switch port's bandwidth-delay product: its rate x ports_rtt_ns. The unit of the
    reference's switch thresholds (model/switchport.py default_port_config). The same in the
    declared and the wall world."""
    return bdp_bytes(mbit, ports_rtt_ns(spec))


def bdp_bytes(mbit: float, rtt_ns: int) -> int:
    """Bytes a link of `mbit` carries in `rtt_ns`."""
    return int(mbit * 1e6 / 8 * rtt_ns / 1e9)


def summary_fields(spec: FabricSpec, transport: str) -> dict:
    """What a transport's summary.json records of the propagation delay (`spec`: the declared,
    emulated world's)."""
    delayed = transport in DELAYED_TRANSPORTS
    return {"propagation": {
        "host_link_delay_ms": spec.host_link_delay_ms,
        "fabric_link_delay_ms": spec.fabric_link_delay_ms,
        "one_way_delay_ms": one_way_delay_ns(spec) / 1e6 if delayed else 0.0,
        "frame_rtt_ms": path_rtt_ns(spec, True, delayed) / 1e6,
        "bdp_packets_per_plane": round(bdp_packets(spec, delayed), 2),
        "delay_emulated": delayed,
        "note": None if delayed else TCP_BYPASSES_DELAY}}


CONSOLE_WIDTH = 100


def console_line(spec: FabricSpec, transports) -> str:
    """The run console's BDP line: the BDP per plane and what it comes from, wrapped at
    CONSOLE_WIDTH like the console's other lines."""
    bdp = bdp_packets(spec)
    text = (f"BDP {bdp:.1f} packets of {wire_frame_bytes(spec)} B per plane: "
            f"{spec.host_link_mbit:g} Mbit/s x {path_rtt_ns(spec) / 1e6:.3g} ms, a full "
            f"frame's round trip across groups (propagation {one_way_delay_ns(spec) / 1e6:g} ms "
            f"one way: host links {spec.host_link_delay_ms:g} ms, fabric links "
            f"{spec.fabric_link_delay_ms:g} ms)")
    if "tcp" in transports and one_way_delay_ns(spec):
        text += (f"; tcp gets no propagation delay (kernel TCP): BDP "
                 f"{bdp_packets(spec, delayed=False):.1f}")
    return textwrap.fill(text, CONSOLE_WIDTH, subsequent_indent="  ")
