"""The run's path monitor (emulation/network/path_monitor.py) localising from the probes and the
EV events together, with its endpoints and the controller faked: what it counts from EV events,
what it denies, and what its record says each kind of evidence alone would have named. Fabric:
the default one (h0 h1 in group 0, h2 h3 in group 1, 2 planes, 2 spines)."""
import json

from emulation.network import path_monitor
from emulation.network.path_monitor import PathMonitor
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.path_prober import hop_paths, path_key, path_links, probed_paths

TOPO = Topology(FabricSpec())
LINK = "t0p0g0~t1p0s0"


class FakeController:
    denies: list = []

    def __init__(self, port):
        pass

    def deny(self, body):
        FakeController.denies.append(body)
        return {"t_ns": 1}


def event(peer, plane, spine, new="ASSUMED_BAD"):
    return {"qp": 1, "peer": peer, "ev": make_ev(plane, spine, 0xC001), "plane": plane,
            "old": "GOOD", "new": new}


def test_ev_events_count_on_their_path_inside_a_group_as_the_probers_spine_0():
    m = PathMonitor(TOPO, {}, 0, "unused")
    m.count_ev_losses("h0", [event(2, 0, 1), event(2, 0, 1), event(1, 1, 1),
                             event(2, 0, 0, new="GOOD"), {"ev": 5, "new": "ASSUMED_BAD"},
                             event(9, 0, 0)])
    assert m.ev_losses == {"h0>h2/p0/s1": 2, "h0>h1/p1/s0": 1}


def test_the_monitor_denies_what_needs_both_and_records_what_each_alone_names(tmp_path,
                                                                             monkeypatch):
    """As tests/controller/test_localize_hops_and_ev_events.py: each probe path over the lossy
    link lost 1 probe of 60, and the 8 cross-group data paths over it have 2 ASSUMED_BAD events
    each; neither alone names a link, both together name t0p0g0~t1p0s0."""
    keys = [path_key(h.index, *t) for h in TOPO.hosts for t in
            probed_paths(TOPO, h.index, [p.index for p in TOPO.hosts if p != h])
            + hop_paths(TOPO, h.index)]
    over = {k for k in keys if LINK in path_links(TOPO, k)}
    stats = {k: {"sent": 60, "lost": 1 if k in over else 0} for k in keys}
    FakeController.denies = []
    monkeypatch.setattr(path_monitor, "ControllerClient", FakeController)
    m = PathMonitor(TOPO, {}, 0, tmp_path / "pm.jsonl")
    monkeypatch.setattr(m, "gather", lambda: stats)
    m.ev_losses = {k: 2 for k in over if k.split(">")[0] != k.split(">")[1].split("/")[0]}
    m.step()
    assert [d["link"] for d in FakeController.denies] == [LINK]
    (record,) = [json.loads(x) for x in (tmp_path / "pm.jsonl").read_text().splitlines()]
    assert record["probes_alone"] == [] and record["ev_events_alone"] == []
    assert record["evidence"]["h0>h2/p0/s0"] == {"sent": 60, "lost": 1, "ev_events": 2}
    m.step()                                        # named once
    assert len(FakeController.denies) == 1


def test_without_the_probers_on_the_monitor_only_forwards(tmp_path, monkeypatch):
    FakeController.denies = []
    monkeypatch.setattr(path_monitor, "ControllerClient", FakeController)
    m = PathMonitor(TOPO, {}, 0, tmp_path / "pm.jsonl", localise=False)
    monkeypatch.setattr(m, "gather", lambda: {"h0>h2/p0/s0": {"sent": 60, "lost": 9}})
    m.ev_losses = {"h0>h2/p0/s0": 9}
    m.step()
    assert FakeController.denies == [] and not (tmp_path / "pm.jsonl").exists()
