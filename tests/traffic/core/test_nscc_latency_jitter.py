"""NSCC over paths whose latency jitters without any queue behind it.

In the emulated fabric the userspace switches and the Python endpoints share two cores, so a
packet's RTT varies by several ms with CPU scheduling while no switch queue holds it: idle
probes see ~1 ms, loaded SACKs 6-15 ms (demo at 100 Mbit/s). NSCC reads RTT - base RTT as
queueing; with the base RTT at the minimum sample, a window of 1.5 BDP of that minimum cannot
cover the jittered RTT. The NSCC base-RTT floor
(MRCConfig.nscc_min_base_rtt_ns) is how a scenario tells NSCC the fabric's unloaded RTT.
Simulated network (tests/helpers/simnet.py), fake clock: 2 planes paced at 12 MB/s each, no loss,
no ECN, one-way delay 0.5 ms + uniform jitter."""
from tests.helpers.simnet import Harness, SimNet
from traffic.core.reliability import MRCConfig

MESSAGE = 4 << 20
PLANE_RATE = 12e6                                  # bytes/s per plane (the pacer's rate)
LINE_RATE_S = MESSAGE / (2 * PLANE_RATE)           # 0.175 s with both planes full


def transfer(jitter_ns: int, nscc_floor_ns: int, nscc: bool = True):
    net = SimNet(planes=2, spines=2, seed=1, one_way_ns=500_000, jitter_ns=jitter_ns)
    cfg = MRCConfig(max_payload=8832, port_rate_Bps=PLANE_RATE, ev_count=32, ev_backup_count=16,
                    nscc_enabled=nscc, nscc_min_base_rtt_ns=nscc_floor_ns, ack_every=1,
                    rto_rtts=16, base_rtt_ns=2_000_000, trimming=True)
    h = Harness(net, cfg)
    start = h.clock.now_ns
    expected, region = h.post([MESSAGE])
    h.run_until_idle()
    assert bytes(region.buf) == expected
    fraction = LINE_RATE_S / ((h.clock.now_ns - start) / 1e9)
    return fraction, h.sender.nscc.counts


def test_without_jitter_nscc_runs_at_the_pacing_rate():
    fraction, counts = transfer(0, 0)
    assert fraction > 0.95
    assert counts["quick_adapt"] == 0


def test_jitter_below_the_floor_is_not_taken_for_queueing():
    # 4 ms of jitter: RTT samples 1-9 ms. Base RTT 6 ms: target 4.5 ms, quick adapt above
    # 18 ms of delay, never reached; the window (1.5 x 24 MB/s x 6 ms = 216 kB) covers the RTT.
    fraction, counts = transfer(4_000_000, 6_000_000)
    assert counts["quick_adapt_on_delay"] == 0
    assert fraction > 0.9
    off, _ = transfer(4_000_000, 0, nscc=False)
    assert fraction > 0.95 * off


def test_jitter_above_four_targets_is_window_limited_but_does_not_quick_adapt():
    # Base RTT 2 ms: target 1.5 ms, delay above the 6 ms quick-adapt threshold, which the
    # jitter reaches; but every 3.5 ms window acks far more than the gate (1.5 x 24 MB/s x 2 ms
    # = 72 kB >> 3 = 9 kB), so quick adapt never cuts the window (UEC's qa_gate). The window
    # itself, 72 kB against RTTs of 1-9 ms, still holds the rate well below the line rate:
    # why the floor is there.
    fraction, counts = transfer(4_000_000, 2_000_000)
    assert counts["quick_adapt_on_delay"] == 0
    assert fraction < 0.8
