"""Trim counter reading of the controller, without BPF: which ports it asks about, how it finds
the program in tc's output, and that ports without the program are left out (the real map
reads run in tests/integration/test_trim_bpf.py)."""
import pytest

from controller import bpf_maps, counters
from controller.api import CommandError
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1))
# another program at pref 2 comes first: only ours (pref 1) counts
TC_WITH_PROGRAM = ("filter protocol all pref 2 bpf chain 0 handle 0x1 other.o:[tc] direct-action "
                   "not_in_hw id 99 name other tag fedcba9876543210 jited \n"
                   "filter protocol all pref 1 bpf chain 0 \n"
                   "filter protocol all pref 1 bpf chain 0 handle 0x1 trim.o:[tc] direct-action "
                   "not_in_hw id 57 name mrc_trim tag 0123456789abcdef jited \n")


def test_switch_egress_ports_are_the_switch_ends_only():
    # h0-t0p0g0, h1-t0p0g1, t0p0g0-t1p0s0, t0p0g1-t1p0s0: 2 host links (1 switch end each)
    # and 2 fabric links (2 switch ends each)
    assert sorted(counters.switch_egress_ports(TOPO)) == [
        "t0p0g0-e1", "t0p0g0-e2", "t0p0g1-e1", "t0p0g1-e2", "t1p0s0-e1", "t1p0s0-e2"]


def test_program_id_from_tc_output():
    assert bpf_maps.prog_id_from_filters(TC_WITH_PROGRAM, "t0p0g0-e2") == 57
    with pytest.raises(bpf_maps.TrimmingError, match="no trimming program attached on x-e1"):
        bpf_maps.prog_id_from_filters("", "x-e1")


def test_marker_active_and_ports_without_program_left_out():
    asked = []

    def run(argv):
        asked.append(argv)
        if argv[4] == "t1p0s0-e1":
            raise CommandError("Cannot find device")
        return TC_WITH_PROGRAM if argv[4] == "t0p0g0-e2" else ""

    assert counters.marker_active("t0p0g0-e2", run)
    assert not counters.marker_active("t0p0g1-e2", run)
    assert not counters.marker_active("t1p0s0-e1", run)
    asked.clear()

    def no_program(argv):
        asked.append(argv)
        return ""
    assert counters.trim_counters(TOPO, no_program) == {}
    assert [a[:4] + a[5:] for a in asked] == [["tc", "filter", "show", "dev", "egress"]] * 6
