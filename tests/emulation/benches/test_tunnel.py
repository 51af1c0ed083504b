"""`mrclab bench tunnel` (emulation/benches/tunnel.py): the links it makes, its frame, the
arithmetic of its figures, and the bench itself run briefly (root: namespaces and raw sockets),
leaving no namespace behind."""
import argparse
import subprocess

import pytest

from emulation.benches import tunnel as T
from emulation.cluster.vxlan import VXLAN_OVERHEAD


def test_the_tunnel_rides_a_management_link_that_carries_a_whole_frame():
    cmds = T.plan_up(9000)
    text = [" ".join(c) for c in cmds]
    underlay = [t for t in text if "name ub" in t][0]
    assert f"mtu {9000 + VXLAN_OVERHEAD}" in underlay
    assert any("pa netns mrcbt-a mtu 9000 type veth peer name pb netns mrcbt-b mtu 9000" in t
               for t in text)
    # each tunnel end in its own namespace, toward the other end's management address
    assert any(t.startswith("ip -n mrcbt-a link add va type vxlan id 4242 local 10.215.0.1 "
                            "remote 10.215.0.2") for t in text)
    assert any(t.startswith("ip -n mrcbt-b link add vb type vxlan id 4242 local 10.215.0.2 "
                            "remote 10.215.0.1") for t in text)
    assert T.plan_down() == [["ip", "netns", "delete", "mrcbt-a"],
                             ["ip", "netns", "delete", "mrcbt-b"]]


def test_a_frame_is_the_links_full_size():
    assert len(T.frame(9000)) == 14 + 9000 and T.frame(1500)[12:14] == b"\x88\xb5"


def test_the_tunnels_cost_is_the_difference_of_the_medians():
    rounds = {"veth": [{"frames_per_s": 100, "cpu_us_per_frame": 10.0},
                       {"frames_per_s": 120, "cpu_us_per_frame": 12.0},
                       {"frames_per_s": 90, "cpu_us_per_frame": 30.0}],
              "vxlan": [{"frames_per_s": 80, "cpu_us_per_frame": 18.0},
                        {"frames_per_s": 70, "cpu_us_per_frame": 20.0},
                        {"frames_per_s": 60, "cpu_us_per_frame": 25.0}]}
    got = T.summarize(rounds)
    assert got["veth"] == {"frames_per_s": 100, "cpu_us_per_frame": 12.0}
    assert got["vxlan"] == {"frames_per_s": 70, "cpu_us_per_frame": 20.0}
    assert got["tunnel_cpu_us_per_frame"] == 8.0 and got["cpu_ratio"] == round(20 / 12, 3)


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                          timeout=30).stdout


@pytest.mark.integration          # namespaces, veths and a raw packet socket need root
def test_the_bench_delivers_over_both_links_and_leaves_nothing():
    args = argparse.Namespace(seconds=0.2, rounds=1, mtu=1500)
    figures = T.tunnel_main(args)
    for link in ("veth", "vxlan"):
        row = figures["rounds"][link][0]
        assert row["delivered"] > 0 and row["delivered"] <= row["sent"], (link, row)
        assert figures[link]["cpu_us_per_frame"] > 0
    assert T.NETNS_PREFIX not in namespaces()
