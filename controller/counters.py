"""Trim counters of the in-fabric BPF program on every switch egress port, and whether a port
carries the program (its queue-based ECN marker). Switch ports live in the root namespace,
where the controller runs; `run` is the controller's checked command runner."""
from __future__ import annotations

from typing import Callable

from controller import bpf_maps
from controller.api import CommandError


def switch_egress_ports(topo) -> list[str]:
    """Interface of every switch end of every link of `topo` (a Topology)."""
    return [intf for link in topo.links
            for node, intf in ((link.a, link.a_intf), (link.b, link.b_intf))
            if node in topo.switches]


def _prog_id(intf: str, run: Callable[[list[str]], str]) -> int:
    try:
        out = run(["tc", "filter", "show", "dev", intf, "egress"])
    except CommandError as err:
        raise bpf_maps.TrimmingError(str(err)) from None
    return bpf_maps.prog_id_from_filters(out, intf)


def marker_active(intf: str, run: Callable[[list[str]], str]) -> bool:
    """True if the trimming program (with its virtual-queue ECN marker) is on intf's egress."""
    try:
        _prog_id(intf, run)
        return True
    except bpf_maps.TrimmingError:
        return False


def trim_counters(topo, run: Callable[[list[str]], str]) -> dict:
    """{switch egress interface: counters} for every port that has the program; ports without
    it (trimming off, or a port that went away) are left out."""
    out = {}
    for intf in switch_egress_ports(topo):
        try:
            out[intf] = bpf_maps.read_counters(_prog_id(intf, run), intf)
        except bpf_maps.TrimmingError:
            continue
    return out
