"""A dead reverse path: the receiver's SACKs on one of its reverse EVs are lost, its data still
arrives. The sender times out and resends data the receiver already has; that duplicate tells
the receiver an ACK went missing, and it probes every reverse EV at once instead of waiting for
the EV's turn in the probe round robin. Simulated network, fake clock (tests/helpers/simnet.py)."""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.messages import DataPacket
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000

def _run(check_all: bool):
    """Transfer one-packet messages one after another with one reverse EV's path dead in the
    reverse direction only (tail SACKs not copied, so each SACK lost there costs a resend); returns (time of the first duplicate's arrival, time that reverse
    EV was retired or None, healthy reverse EVs retired)."""
    net = SimNet(planes=4, spines=2, seed=11)
    cfg = MRCConfig(ev_count=32, ev_backup_count=16, max_payload=1000, base_rtt_ns=MS,
                    reverse_probe_rtts=8.0, probe_timeout_rtts=16.0, loss_verdict_ns=60 * MS,
                    first_packet_grace=True, tail_sack_copy=False)
    h = Harness(net, cfg)
    if not check_all:
        h.receiver.reverse_paths.ack_went_missing = lambda now_ns: None
    dead_ev = h.receiver.reverse_paths.evs[0][0].ev
    dead = (ev_plane(dead_ev), ev_spine(dead_ev))
    send = net.send
    dup_times = []

    def reverse_dead(now_ns, msg, plane, dst):
        path_ev = getattr(msg, "path_ev", None) if not isinstance(msg, DataPacket) else None
        if dst == "A" and path_ev is not None and (ev_plane(path_ev), ev_spine(path_ev)) == dead:
            return                                   # the receiver's SACK/probe dies
        if dst == "B" and isinstance(msg, DataPacket) and msg.retransmit:
            dup_times.append(now_ns)
        send(now_ns, msg, plane, dst)

    net.send = reverse_dead
    for _ in range(60):
        h.transfer([800])
    retired = [e for e in h.events_of(Event.EV_STATE, new="ASSUMED_BAD")
               if e.get("direction") == "reverse"]
    t_dead = next((e["t_ns"] for e in retired if e["ev"] == dead_ev), None)
    healthy = [e for e in retired if (ev_plane(e["ev"]), ev_spine(e["ev"])) != dead]
    return (dup_times[0] if dup_times else None), t_dead, healthy

def test_a_missing_ack_has_every_reverse_ev_probed_at_once():
    first_resend, t_dead, healthy = _run(check_all=True)
    assert first_resend is not None and t_dead is not None
    assert healthy == []
    # probes of all reverse EVs leave with the next poll after the duplicate; the dead one's
    # fail after a probe timeout (16 base RTTs) and are judged when another EV's probe is
    # answered; reverse_probe_fail_limit (2) such rounds retire it: under ~3 probe timeouts
    assert t_dead - first_resend <= 3 * 16 * MS + 10 * MS, (t_dead - first_resend) / MS

def test_without_the_check_the_round_robin_finds_it_later():
    """The same run with the duplicate ignored: the dead EV waits for its turn among the 8
    reverse EVs (one probe per 8 base RTTs), so it is retired later than with the check."""
    first_resend, t_dead_rr, _ = _run(check_all=False)
    _, t_dead_now, _ = _run(check_all=True)
    assert t_dead_rr is not None and t_dead_now < t_dead_rr
    assert t_dead_rr - first_resend > 3 * 16 * MS + 10 * MS
