"""MRC sender/receiver over the simulated multi-plane network (deterministic seeds, fake clock)."""
import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.evs import ASSUMED_BAD, GOOD
from model.topology import make_ev
from traffic.core.messages import PSN_MASK, DataPacket, Nack, NackReason, Opcode
from traffic.core.reliability import MRCConfig, QPError
from traffic.core.roce_rc import RoceReceiverQP, RoceSenderQP

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

SIZES = [60_000, 1, 1024, 33_000, 2048, 50_000]


def deliver(h, sizes=SIZES, imm=True):
    expected = h.transfer(sizes, imm=imm)
    assert h.receiver.counters["placed_bytes"] == sum(sizes)  # ... and placed exactly once
    return expected


def test_clean_network_no_retransmission_and_imm_completions_in_order():
    h = Harness(SimNet(seed=1))
    deliver(h)
    assert h.sender.counters["retransmitted_packets"] == 0
    comps = h.receiver.completions
    assert [c.imm for c in comps] == [0x1000 + i for i in range(len(SIZES))]
    assert [c.bytes for c in comps] == SIZES
    assert [c.msn for c in h.sender.completions] == list(range(len(SIZES)))


def test_ten_percent_random_loss():
    h = Harness(SimNet(seed=2, loss=0.10, jitter_ns=100_000))
    deliver(h)
    assert h.sender.counters["retransmitted_packets"] > 0
    assert h.events_of(Event.RETRANSMIT)
    for e in h.events_of(Event.RETRANSMIT):
        assert e["new_ev"] != e["old_ev"]                     # always a fresh EV
    assert [c.imm for c in h.receiver.completions] == [0x1000 + i for i in range(len(SIZES))]


def test_reordering_and_duplication():
    h = Harness(SimNet(seed=3, jitter_ns=900_000, dup=0.2, fifo_paths=False))
    deliver(h)
    assert h.receiver.counters["duplicates"] > 0
    assert h.receiver.counters["ooo"] > 0
    assert [c.imm for c in h.receiver.completions] == [0x1000 + i for i in range(len(SIZES))]


def test_black_holed_path_retired_at_once_with_same_plane_replacement():
    net = SimNet(seed=4, planes=2, spines=4)
    net.path(1, 2).blackhole = True
    h = Harness(net)
    deliver(h)
    bad = [e for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)]
    assert bad, "the black-holed path must be retired"
    assert all(ev_plane(e["ev"]) == 1 and ev_spine(e["ev"]) == 2 for e in bad)
    for e in bad:
        assert e["reason"] in ("sack_gap", "timeout")
        reps = h.events_of(Event.EV_STATE, replaces=e["ev"])
        assert reps and ev_plane(reps[0]["ev"]) == 1       # backup from the SAME plane
    # every EV on the bad path that carried a packet is now out of the rotation
    rotation = h.sender.evs.rotation
    assert not [ev for ev in rotation if (ev_plane(ev), ev_spine(ev)) == (1, 2)
                and h.sender.evs.state(ev) == GOOD and ev in {e["ev"] for e in bad}]


def test_probes_bring_a_path_back_after_k_successes():
    net = SimNet(seed=5, planes=2, spines=2)
    net.path(0, 1).blackhole = True
    cfg = MRCConfig(probe_k=3)
    h = Harness(net, cfg=cfg)
    deliver(h, sizes=[40_000])
    # forward EVs only: the receiver's reverse (SACK) EVs have their own probes
    bad = {e["ev"] for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
           if e.get("direction") != "reverse"}
    assert bad
    net.path(0, 1).blackhole = False
    h.sender.post_write(b"x" * 10, h.registry.register(bytearray(10)).va, 0x101)
    h.run(100_000_000)                       # 100 ms of probing
    back = [e for e in h.events_of(Event.EV_STATE, new=GOOD, reason="probe_ok")
            if e.get("direction") != "reverse"]
    assert {e["ev"] for e in back} == bad
    for ev in bad:
        oks = [p["ok"] for p in h.events_of(Event.PROBE, ev=ev)]
        assert oks[-3:] == [True, True, True]


def test_failed_plane_silent():
    net = SimNet(seed=6, planes=2, spines=2)
    net.failed_planes.add(1)
    h = Harness(net)
    deliver(h)
    assert all(ev_plane(e["ev"]) == 1 for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD))


def test_local_port_down_moves_traffic_and_peer_learns_from_port_status():
    net = SimNet(seed=7, planes=2, spines=2)
    h = Harness(net)
    expected, region = h.post([30_000])
    h.receiver.set_local_port(1, False, h.clock.now_ns)
    net.failed_planes.add(1)
    h.run_until_idle()
    assert bytes(region.buf) == expected
    assert h.events_of(Event.PORT, side="peer", plane=1, up=False)
    assert h.sender.evs.usable_planes() == [0]
    before = net.path_counts.copy()
    h.sender.post_write(b"y" * 8000, region.va, region.rkey)
    h.run_until_idle()
    sent_plane1 = sum(v - before.get(k, 0) for k, v in net.path_counts.items() if k[0] == 1)
    assert sent_plane1 == 0
    net.failed_planes.clear()
    h.receiver.set_local_port(1, True, h.clock.now_ns)
    h.sender.post_write(b"z" * 8000, region.va, region.rkey)
    h.run_until_idle()
    assert h.events_of(Event.PORT, side="peer", plane=1, up=True)
    assert h.sender.evs.usable_planes() == [0, 1]


def test_ecn_echo_skips_but_never_retires():
    net = SimNet(seed=8, planes=2, spines=2)
    net.path(0, 0).ecn = 1.0
    h = Harness(net)
    deliver(h)
    skips = h.events_of(Event.EV_SKIP)
    assert skips and all((ev_plane(e["ev"]), ev_spine(e["ev"])) == (0, 0) for e in skips)
    assert all(e["until_ns"] > e["t_ns"] for e in skips)
    assert not h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
    assert h.sender.counters["retransmitted_packets"] == 0


@pytest.mark.parametrize("lasthop", [False, True])
def test_trimmed_nack_fast_retransmit_without_retiring(lasthop):
    net = SimNet(seed=9, planes=2, spines=2)
    net.path(1, 1).trim = 0.5
    net.path(1, 1).trim_lasthop = lasthop
    h = Harness(net, cfg=MRCConfig(trimming=True))
    deliver(h)
    assert net.stats["trimmed"] > 0
    retx = h.events_of(Event.RETRANSMIT, reason="nack_trimmed")
    assert len(retx) >= net.stats["trimmed"] - 1
    assert not h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
    assert h.sender.counters["timeouts"] == 0
    once = [e for e in h.events_of(Event.EV_SKIP) if e.get("once")]
    assert (len(once) > 0) != lasthop          # TRIMMED: skip once; LASTHOP: no EV penalty


MS = 1_000_000


def test_rto_backoff_fixed_for_seven_retries_then_doubling():
    """OCP mrc.h: 7 linear retries at a fixed interval, then exponential. With a fixed 1 ms
    base: 1 ms for timeouts 0..7 (the first send and the 7 linear retries), then 2, 4, ...,
    64 ms; capped at rto_max (100 ms)."""
    h = Harness(SimNet(seed=10), cfg=MRCConfig(rto_ns=MS, rto_max_ns=100 * MS))
    got = [h.sender.rto_ns(t) // MS for t in range(16)]
    assert got == [1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 16, 32, 64, 100, 100]


def _dead_fabric_one_packet(linear: int, exponential: int):
    net = SimNet(seed=10, planes=2, spines=2)
    net.failed_planes.update({0, 1})
    cfg = MRCConfig(rto_ns=MS, rto_max_ns=10_000 * MS, retry_linear_count=linear,
                    retry_exp_count=exponential, retry_fixed_interval=True)
    h = Harness(net, cfg=cfg)
    start = h.clock.now_ns
    h.post([100])
    h.run_until_idle(until_ns=60_000_000_000)
    return h, start


def test_all_paths_dead_gives_qp_error_after_the_retry_budget():
    """7 linear + 3 exponential retries: the packet is sent 11 times and the 11th timeout is
    fatal. By hand the ACK timeouts add up to 8 x 1 + 2 + 4 + 8 = 22 ms after the first send."""
    h, start = _dead_fabric_one_packet(linear=7, exponential=3)
    assert h.sender.error and "retries" in h.sender.error
    assert h.events_of(Event.QP_ERROR)
    assert h.sender.counters["sent_packets"] == 11
    assert 22 * MS <= h.clock.now_ns - start <= 23 * MS
    assert h.sender.poll(h.clock.now_ns) == []
    with pytest.raises(QPError, match="error"):
        h.sender.post_write(b"x", 0, 0)


def test_retry_counts_count_retries_not_sends():
    """3 linear + 0 exponential retries: more than 3 timeouts of one PSN is fatal, so the QP
    fails at the 4th timeout after 1 + 3 sends (not at the 3rd). The timeouts are 1 ms each
    (the first send and three linear retries): 4 ms after the first send."""
    h, start = _dead_fabric_one_packet(linear=3, exponential=0)
    assert h.sender.error and "retries" in h.sender.error
    assert h.sender.counters["sent_packets"] == 4
    assert h.sender.counters["timeouts"] == 4
    assert 4 * MS <= h.clock.now_ns - start <= 5 * MS


def test_psn_wraparound():
    cfg = MRCConfig(start_psn=PSN_MASK - 40)
    h = Harness(SimNet(seed=11, loss=0.05), cfg=cfg)
    deliver(h, sizes=[90_000, 500])
    assert h.sender.snd_nxt > PSN_MASK + 1                    # crossed the 24-bit boundary
    assert h.receiver.rcv_cum == h.sender.snd_nxt


def test_bad_rkey_is_a_reported_qp_error_not_a_crash():
    h = Harness(SimNet(seed=12))
    h.sender.post_write(b"abc" * 100, 0xDEAD0000, 0x999)
    h.run_until_idle()
    assert h.sender.error and "remote access" in h.sender.error
    assert h.receiver.counters["access_errors"] >= 1


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="max_payload"):
        MRCConfig(max_payload=0)
    with pytest.raises(ValueError, match="start_psn"):
        MRCConfig(start_psn=1 << 24)


def test_roce_baseline_delivers_under_0_1_percent_loss():
    h = Harness(SimNet(seed=13, loss=0.001), sender_cls=RoceSenderQP, receiver_cls=RoceReceiverQP)
    deliver(h, sizes=[200_000, 100_000])
    assert {e["new_ev"] for e in h.events_of(Event.RETRANSMIT)} <= {h.sender.ev}


def test_roce_go_back_n_retransmits_far_more_than_mrc_at_1_percent():
    sizes = [250_000] * 4
    retx = {}
    for name, kw in (("mrc", {}),
                     ("roce", dict(sender_cls=RoceSenderQP, receiver_cls=RoceReceiverQP))):
        h = Harness(SimNet(seed=14, loss=0.01), **kw)
        deliver(h, sizes=sizes)
        retx[name] = h.sender.counters["retransmitted_bytes"]
    assert retx["roce"] > 4 * retx["mrc"] > 0


def test_sender_never_runs_more_than_mpr_x_128_psns_past_the_cumulative_ack():
    """OCP MRC 1.0: the window never goes beyond cumulative ACK + MPR (units of 128 PSNs). MPR 1 and
    no ACK ever coming back: exactly PSNs 0..127 go out, however long the sender polls."""
    net = SimNet(seed=3, planes=2, spines=2)
    net.failed_planes.update({0, 1})
    cfg = MRCConfig(mpr=1, nscc_enabled=False, max_payload=1000, rto_ns=60_000 * MS)
    h = Harness(net, cfg=cfg)
    h.post([300 * 1000])
    psns = set()
    t = h.clock.now_ns
    for _ in range(3000):
        psns.update(pkt.psn for pkt, _plane in h.sender.poll(t) if isinstance(pkt, DataPacket))
        t += 100_000
    assert psns == set(range(128))


def _oor_nack(h, psn):
    region = h.registry.register(bytearray(64))
    pkt = DataPacket(dest_qp=0x22, psn=psn, opcode=Opcode.WRITE_ONLY, msn=0, va=region.va,
                     rkey=region.rkey, dma_len=8, payload=b"8 bytes!", ev=make_ev(0, 0, 5))
    return [m for m, _plane in h.receiver.on_data(pkt, h.clock.now_ns, 0)
            if isinstance(m, Nack) and m.reason == NackReason.PSN_OOR_WINDOW]


def test_receiver_accepts_up_to_cumulative_ack_plus_mpr_x_128_psns():
    """Default MPR 8 -> 1024 PSNs: with nothing received yet, PSN 1023 is inside the window and
    PSN 1024 is out of it (NACK PSN_OOR_WINDOW, 0x0B)."""
    h = Harness(SimNet(seed=3))
    assert _oor_nack(h, 1023) == []
    assert len(_oor_nack(h, 1024)) == 1
    assert h.receiver.counters["out_of_window"] == 1
