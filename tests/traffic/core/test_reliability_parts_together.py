"""The transport's parts run together over the simulated network with a fake clock
(tests/helpers/simnet.py): sender, receiver, the receiver's reverse paths and a path prober at the
sender's host, while one path dies in the reverse direction only (what reaches the receiver
gets through; what it sends back on that path is lost).

What each part must conclude, and no more:
* the transfer completes, every byte in place (the SACKs lost on the dead path cost resends);
* the receiver retires its reverse EVs on the dead path, and none on a healthy path;
* the prober counts losses on the dead path only, and the localiser, given those counts, names
  no link that a healthy path crosses;
* the sender keeps using every healthy forward path it started with.
"""

import pytest

from controller.localize import locate
from model.events import Event
from model.topology import FabricSpec, Topology, ev_plane, ev_spine
from traffic.core.messages import Probe
from traffic.core.path_prober import PathProber, parse_path_key, path_key
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000
PATH_PROBE_QP = 3           # src_qp of prober probes (the endpoint's numbering)
TOPO = Topology(FabricSpec())   # 2 planes, 2 spines; h0 (the sender) and h2 in other groups
SRC, DST = 0, 2


def test_a_path_dead_in_the_reverse_direction_is_found_by_each_part_and_no_healthy_one_is():
    net = SimNet(planes=2, spines=2, seed=21, one_way_ns=250_000, jitter_ns=30_000)
    cfg = MRCConfig(ev_count=8, ev_backup_count=8, max_payload=1000, base_rtt_ns=MS,
                    reverse_probe_rtts=4.0, probe_timeout_rtts=8.0, loss_verdict_ns=40 * MS,
                    first_packet_grace=True)
    h = Harness(net, cfg)
    reverse = h.receiver.reverse_paths
    dead_ev = reverse.evs[0][0].ev
    dead = (ev_plane(dead_ev), ev_spine(dead_ev))
    prober = PathProber(TOPO, SRC, interval_ns=2 * MS, timeout_ns=8 * MS)
    prober.set_peers([DST], h.clock.now_ns)

    # prober probes travel A -> B on their path and are answered back on it (simnet.run
    # answers any probe request); the answers are told from the sender's by their src_qp
    sender_answer = h.sender.on_probe_response

    def on_probe_response(probe, now):
        if probe.src_qp == PATH_PROBE_QP:
            prober.on_response(probe.seq, now)
        else:
            sender_answer(probe, now)
    h.sender.on_probe_response = on_probe_response

    start = h.clock.now_ns
    forward_at_start = {(ev_plane(ev), ev_spine(ev)) for ev in h.sender.evs.active()}

    def on_step(now):
        net.path(*dead).blackhole_to = "A" if now >= start + 20 * MS else None
        prober.expire(now)
        for _, plane, ev, seq in prober.due(now):
            net.send(now, Probe(ev=ev, seq=seq, timestamp=now, src_qp=PATH_PROBE_QP,
                                path_ev=ev), plane, "B")

    for _ in range(40):
        h.transfer([6000], on_step=on_step)
    # then 2.5 s of probing alone: a path that answers nothing is judged by the peer's other
    # paths only against answers to probes sent OTHER_PATH_MARGIN_NS (2 s) later
    end = h.clock.now_ns + 2500 * MS
    while h.clock.now_ns < end:
        step_end = h.clock.now_ns + MS
        h.run(MS, on_step=on_step)
        if h.clock.now_ns < step_end:
            h.clock.advance_to(step_end)

    # the receiver: its reverse EVs on the dead path retired, no other
    retired = [e for e in h.events_of(Event.EV_STATE, new="ASSUMED_BAD")
               if e.get("direction") == "reverse"]
    assert dead_ev in {e["ev"] for e in retired}
    # round robin over 4 reverse EVs, one probe per 4 ms: the dead EV's first probe leaves
    # within 16 ms of the failure, fails after the 8 ms timeout and is judged by the answer to
    # the probe sent 4 ms after it (<= 12 ms); the second failure (fail limit 2) one cycle
    # later: 16 + 16 + 12 = 44 ms, plus the jitter of the answers
    t_retired = min(e["t_ns"] for e in retired if e["ev"] == dead_ev)
    assert t_retired - (start + 20 * MS) <= 45 * MS
    assert all((ev_plane(e["ev"]), ev_spine(e["ev"])) == dead for e in retired), retired
    assert all((ev_plane(r.ev), ev_spine(r.ev)) != dead for p in reverse.evs for r in reverse.evs[p])

    # the prober: losses on the dead path only
    stats = prober.stats()
    dead_key = path_key(SRC, DST, *dead)
    assert stats[dead_key]["lost"] > 0
    assert all(c["lost"] == 0 for k, c in stats.items() if k != dead_key), stats
    links = {k: frozenset(link.name for link in TOPO.path_links(*parse_path_key(k)))
             for k in stats}
    got = locate(stats, links, min_lost=1, clean_min_sent=1)
    assert got.lossy_paths == [dead_key]
    healthy_links = set().union(*(links[k] for k in stats if k != dead_key))
    assert not set(got.links) & healthy_links

    # the sender: every healthy path its EV set started with is still in use
    retired_forward = [e for e in h.events_of(Event.EV_STATE, new="ASSUMED_BAD")
                       if e.get("direction") != "reverse"]
    used = {(ev_plane(ev), ev_spine(ev)) for ev in h.sender.evs.active()
            if h.sender.evs.state(ev) == "GOOD"}
    assert forward_at_start - {dead} <= used, (used, retired_forward)
