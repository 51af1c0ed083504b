"""Pure parts of trimming on the fabric (emulation/network/trimming.py): the fabric's trimming option,
counter totals, and the per-transport policy of a scenario. The analysis of a trimming run's logs:
tests/analysis/test_trimming.py."""
import pytest

from emulation.network import trimming
from emulation.config import scenario as S
from model.topology import FabricSpec, Topology


def test_trimming_options_normalise_and_reject():
    assert trimming.trimming_options(None) is None and trimming.trimming_options(False) is None
    assert trimming.trimming_options(True) == trimming.TrimmingOptions(True, True)
    assert trimming.trimming_options({"mark": True, "trim": False}) == trimming.TrimmingOptions(True, False)
    assert trimming.trimming_options({"mark": False, "trim": False}) is None
    with pytest.raises(ValueError, match="unknown key"):
        trimming.trimming_options({"mark": True, "drop": True})
    with pytest.raises(ValueError, match="trim must be true or false"):
        trimming.trimming_options({"trim": "yes"})
    with pytest.raises(ValueError, match="trimming must be"):
        trimming.trimming_options("on")


def test_counter_totals_split_last_hops():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=2))
    last = trimming.last_hop_ports(topo)
    assert last == {"t0p0g0-e1", "t0p0g0-e2", "t0p0g1-e1", "t0p0g1-e2"}
    per_port = {"t0p0g0-e1": {"offered_packets": 10, "marked": 0, "trimmed": 4, "vq_peak_bytes": 9},
                "t0p0g0-e3": {"offered_packets": 20, "marked": 7, "trimmed": 9, "dropped": 1,
                              "vq_peak_bytes": 30}}
    t = trimming.counter_totals(per_port, last)
    assert (t["offered_packets"], t["marked"], t["trimmed"], t["dropped"]) == (30, 7, 13, 1)
    assert t["last_hop"]["trimmed"] == 4 and t["fabric"]["trimmed"] == 9
    assert t["last_hop"]["marked"] == 0 and t["vq_peak_bytes"] == 30
    assert t["most_trimmed_port"] == "t0p0g0-e3"
    assert trimming.counter_totals({})["most_trimmed_port"] is None


def test_scenario_trimming_policy_per_transport():
    base = "[fabric]\nhosts_per_group = 2\n[collective]\nkind = 'allreduce'\n"
    on = S.parse(base)
    assert on.trimming_for("mrc") == {"mark": True, "trim": True}
    assert on.trimming_for("roce") == {"mark": True, "trim": False}
    assert on.trimming_for("tcp") == {"mark": True, "trim": False}
    off = S.parse(base + "[options]\ntrimming = false\n")
    assert all(off.trimming_for(t) is None for t in S.TRANSPORTS)
    with pytest.raises(S.ScenarioError, match="unknown transport"):
        on.trimming_for("udp")
