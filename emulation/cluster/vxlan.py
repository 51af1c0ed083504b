"""The commands of one end of a VXLAN tunnel (RFC 7348) that carries a fabric link between two
servers over the management network, as argv lists (emulation/cluster/vxlan_link.py runs them
on each server). VXLAN rather than Mininet's GRE: the kernels this runs on have the vxlan
module and not always ip_gre, and VXLAN is plain UDP, which any management network routes.

Each end is a vxlan device named as the link's interface (h0-p1, t0p1g0-e3), so the switch and
the host see the same names as on one machine; the VNI is the placement's
(emulation/cluster/placement.py), the same at both ends. Learning is off: each device has
exactly one remote, given on creation.

The management network must carry a whole tunnelled packet: the fabric's MTU plus the inner
Ethernet header (14 bytes), the VXLAN header (8), UDP (8) and the outer IPv4 header (20), so
an underlay IP MTU of at least the fabric's MTU + VXLAN_OVERHEAD; a smaller one would fragment
or drop every full frame (the preflight checks it).

Pure: argv lists and the parsing of `ip route get`.
"""
from __future__ import annotations

import ipaddress
import re

from emulation.cluster.placement import MAX_VNI

VXLAN_PORT = 4789                    # IANA's VXLAN port
VXLAN_OVERHEAD = 14 + 8 + 8 + 20     # inner Ethernet + VXLAN + UDP + outer IPv4, bytes
_SRC = re.compile(r"\bsrc\s+(\S+)")
_DEV = re.compile(r"\bdev\s+(\S+)")


class TunnelError(RuntimeError):
    """A tunnel end that cannot be made; the message names the server, command and output."""


def underlay_mtu_needed(fabric_mtu: int) -> int:
    return fabric_mtu + VXLAN_OVERHEAD


def _ipv4(name: str, value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except (ipaddress.AddressValueError, ValueError):
        raise TunnelError(f"{name} must be an IPv4 address, got {value!r}") from None


def add_argv(name: str, vni: int, local: str, remote: str, mtu: int,
             mac: str | None = None) -> list[list[str]]:
    """The commands that make and raise one tunnel end in the server's root namespace."""
    if isinstance(vni, bool) or not isinstance(vni, int) or not 1 <= vni <= MAX_VNI:
        raise TunnelError(f"a VNI is 1..{MAX_VNI}, got {vni!r}")
    local, remote = _ipv4("local", local), _ipv4("remote", remote)
    link = ["ip", "link", "set", "dev", name, "mtu", str(mtu)]
    if mac:
        link += ["address", mac]
    return [["ip", "link", "add", name, "type", "vxlan", "id", str(vni), "local", local,
             "remote", remote, "dstport", str(VXLAN_PORT), "nolearning"],
            link,
            ["ip", "link", "set", "dev", name, "up"]]


def delete_argv(name: str) -> list[str]:
    return ["ip", "link", "delete", "dev", name]


def route_get_argv(address: str) -> list[str]:
    return ["ip", "route", "get", _ipv4("address", address)]


def route_source(output: str, address: str = "") -> str:
    """The source address of `ip route get` output: the address a tunnel end on this machine
    sends from toward `address`."""
    hit = _SRC.search(output)
    if not hit:
        raise TunnelError(f"no route to {address or 'the peer'} with a source address: "
                          f"{output.strip()[:200]!r}")
    return hit.group(1)


def route_device(output: str) -> str | None:
    """The interface of `ip route get` output, None without one."""
    hit = _DEV.search(output)
    return hit.group(1) if hit else None
