"""The receiver's timers count in a full data frame's base RTT (MRCConfig.frame_base_rtt_ns:
the probes' RTT plus the frame's store-and-forward serialization), as the sender's do.

Why it matters: under a time scale k the probes' RTT is mostly the switches' forwarding work,
which k does not stretch, so a timer counted in probe RTTs shrinks in emulated time as k
grows (the receiver would probe its reverse paths and send delayed SACKs k times as often).
Expected times below are arithmetic on the configuration: base_rtt_ns = 100 us (probes),
nscc_frame_rtt_ns = 900 us, so one frame RTT is 1 ms.
"""
from __future__ import annotations

import random

from traffic.core.evs import PathInfo
from traffic.core.messages import DataPacket, Opcode, Probe, Sack
from traffic.core.qp_config import MRCConfig
from traffic.core.reverse_paths import ReversePaths

from tests.helpers.simnet import Harness, SimNet

PROBE_RTT, FRAME_SER = 100_000, 900_000
FRAME_RTT = PROBE_RTT + FRAME_SER


def test_frame_base_rtt_is_the_probe_rtt_plus_the_frame_serialization():
    cfg = MRCConfig(base_rtt_ns=PROBE_RTT, nscc_frame_rtt_ns=FRAME_SER)
    assert cfg.frame_base_rtt_ns == 1_000_000


def test_reverse_probe_period_counts_frame_rtts():
    cfg = MRCConfig(base_rtt_ns=PROBE_RTT, nscc_frame_rtt_ns=FRAME_SER, reverse_probe_rtts=8.0)
    rp = ReversePaths(0x33, cfg, PathInfo((0, 1), 4), random.Random(7), {0: True, 1: True},
                      lambda event: None)
    sent = []
    for t in range(0, 20_000_000, 50_000):
        for probe, _plane in rp.poll(t, True):
            sent.append(t)
            rp.on_probe_response(Probe(ev=probe.ev, seq=probe.seq, timestamp=probe.timestamp,
                                       response=True, src_qp=probe.src_qp,
                                       path_ev=probe.path_ev), t)
    # one in-use reverse EV probed every 8 frame RTTs = 8 ms: at 0, 8 and 16 ms
    assert sent == [0, 8 * FRAME_RTT, 16 * FRAME_RTT]


def test_delayed_sack_waits_a_quarter_of_a_frame_rtt():
    cfg = MRCConfig(base_rtt_ns=PROBE_RTT, nscc_frame_rtt_ns=FRAME_SER, ack_every=4,
                    ack_delay_rtts=0.25)
    h = Harness(SimNet(seed=13), cfg)
    h.registry.register(bytearray(1 << 20))
    rx, t = h.receiver, 1_000_000_000
    pkt = DataPacket(dest_qp=0x22, psn=0, opcode=Opcode.WRITE_MIDDLE, msn=0, va=0x1000_0000,
                     rkey=0x100, dma_len=1 << 20, payload=b"x" * 8, timestamp=1000, ev=0xC0DE)
    assert rx.on_data(pkt, t, 0) == []
    due = t + FRAME_RTT // 4                        # 250 us
    assert not [m for m, _ in rx.poll(due - 1) if isinstance(m, Sack)]
    assert [m for m, _ in rx.poll(due) if isinstance(m, Sack)]
