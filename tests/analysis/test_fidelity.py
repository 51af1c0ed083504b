"""The fidelity monitor (analysis/fidelity.py): each invariant on synthetic logs, captures and
OVS log lines whose expected values are worked out by hand in the comments."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from analysis import fidelity as F
from analysis import fidelity_captures as FC
from analysis import fidelity_verdict as FV
from emulation.run import run_summary
from model.events import Event
from tests.helpers.synth import BASE_RTT_NS as RTT_NS
from tests.helpers.synth import write_endpoint_log
from model.lateness import lateness_bucket, lateness_bucket_floor_ns


# ---------------------------------------------------------------- histogram arithmetic

def test_lateness_buckets_are_quarter_octaves():
    # 1000 ns: bit length 10, the two bits after the leading one are 11 -> bucket 8*4+3 = 35,
    # which spans [7 << 7, 4 << 8) = [896, 1024).
    assert lateness_bucket(1000) == 35
    assert (lateness_bucket_floor_ns(35), lateness_bucket_floor_ns(36)) == (896, 1024)
    for ns in (0, 1, 3, 4, 7, 8, 1000, 1_048_576, 123_456_789):
        b = lateness_bucket(ns)
        assert lateness_bucket_floor_ns(b) <= ns < lateness_bucket_floor_ns(b + 1)


# ---------------------------------------------------------------- lateness from endpoint logs

def _bucket_of(ns):
    return lateness_bucket(ns)


def lateness_fidelity(tmp_path, late_ns, late_count, before=None, propagation_rtt_ns=0):
    """1000 timer samples in the window: (1000 - late_count) at 0.1 ms, late_count at late_ns."""
    fast = [_bucket_of(100_000), 1000 - late_count]
    slow = [_bucket_of(late_ns), late_count]
    snaps = []
    if before:
        snaps.append((5, before))
    cumulative = {b: c for b, c in (before or [])}
    for b, c in (fast, slow):
        cumulative[b] = cumulative.get(b, 0) + c
    snaps.append((50, sorted([b, c] for b, c in cumulative.items())))
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", snaps)
    facts = F.FabricFacts(100, 100, 9000, True, None, propagation_rtt_ns=propagation_rtt_ns)
    return F.transport_fidelity(tmp_path, facts, 10, 40, packets=pd.DataFrame())


def test_timer_lateness_p99_against_half_a_base_rtt(tmp_path):
    # 15 of 1000 samples at 3 ms: the p99 (rank 990) is among them. 3 ms is bucket 81
    # (bit length 22, next bits 01); its upper edge is 6 << 19 = 3,145,728 ns = 1.573 base RTTs
    # of 2 ms, 3.15x the bound of 0.5: invalid.
    fid = lateness_fidelity(tmp_path, 3_000_000, 15)
    [v] = [v for v in fid["violations"] if v["invariant"] == F.TIMER_LATENESS]
    assert v["measured"] == pytest.approx(3_145_728 / RTT_NS, rel=1e-3)
    assert v["severity"] == FV.INVALID and fid["verdict"] == FV.INVALID
    assert fid["measurements"][F.TIMER_LATENESS]["h0"]["p99_ms"] == 3.146
    assert fid["margins"][F.TIMER_LATENESS] == pytest.approx(0.5 / 1.572864, rel=1e-3)


def test_timer_lateness_degraded_and_ok(tmp_path):
    # 1 ms: bucket 75 (bit length 20, next bits 11), upper edge 4 << 18 = 1,048,576 ns =
    # 0.524 base RTTs, 1.05x the bound: degraded.
    fid = lateness_fidelity(tmp_path, 1_000_000, 15)
    assert fid["verdict"] == F.DEGRADED
    # only 5 late samples: the p99 (rank 990) is a 0.1 ms one -> ok
    fid = lateness_fidelity(tmp_path, 3_000_000, 5)
    assert fid["verdict"] == F.OK and not fid["violations"]


def test_timer_lateness_judged_without_the_propagation_delay(tmp_path):
    # 15 of 1000 samples at 0.3 ms: bucket 68 (bit length 19, next bits 00), upper edge
    # 5 << 16 = 327,680 ns. Against the whole 2 ms base RTT that is 0.164 RTTs: ok. With 1.5 ms
    # of it propagation (held by the endpoints' delay line, no CPU), the packet-scale RTT is
    # 0.5 ms: 0.655 of it, 1.31x the bound of 0.5: degraded.
    assert F.OK == lateness_fidelity(tmp_path, 300_000, 15)["verdict"]
    fid = lateness_fidelity(tmp_path, 300_000, 15, propagation_rtt_ns=1_500_000)
    [v] = [v for v in fid["violations"] if v["invariant"] == F.TIMER_LATENESS]
    assert v["measured"] == pytest.approx(327_680 / 500_000, rel=1e-3)
    assert fid["verdict"] == F.DEGRADED
    assert fid["measurements"]["packet_rtt_ms"] == 0.5
    # a propagation not below the base RTT (a configured RTT without it) is not subtracted
    fid = lateness_fidelity(tmp_path, 300_000, 15, propagation_rtt_ns=2_000_000)
    assert fid["verdict"] == F.OK and "packet_rtt_ms" not in fid["measurements"]


def test_timer_lateness_counts_only_the_timed_window(tmp_path):
    # 500 samples at 3 ms logged before the window starts are subtracted: the window's own
    # samples are all fast.
    fid = lateness_fidelity(tmp_path, 3_000_000, 0, before=[[_bucket_of(3_000_000), 500]])
    assert fid["verdict"] == F.OK
    assert fid["measurements"][F.TIMER_LATENESS]["h0"]["samples"] == 1000


# ---------------------------------------------------------------- captures

FACTS = F.FabricFacts(host_link_mbit=100, fabric_link_mbit=100, mtu=9000, trimmed=True,
                      switch_buffer_bytes=None, host_groups={"h0": 0, "h1": 0, "h2": 1})


def captures(sent_ns, received_ns, sender="h0", receiver="h1", size=9000):
    """tx rows at the sender and rx rows at the receiver for data packets with PSN 0.."""
    n = len(sent_ns)
    base = {"opcode": [0xC6] * n, "src": [f"addr-{sender}"] * n, "dst": [f"addr-{receiver}"] * n,
            "qp": [16] * n, "psn": list(range(n)), "retx": [False] * n, "plane": [0] * n,
            "size": [size] * n}
    tx = pd.DataFrame({**base, "time_ns": sent_ns, "host": [sender] * n, "direction": ["tx"] * n})
    rx = pd.DataFrame({**base, "time_ns": received_ns, "host": [receiver] * n,
                       "direction": ["rx"] * n})
    return pd.concat([tx, rx], ignore_index=True)


def test_queue_bound_arithmetic():
    # default trim threshold at 100 Mbit/s, MTU 9000: max(ECN max 36,000, 4 ms = 50,000,
    # 10 frames = 90,000) = 90,000 bytes = 7.2 ms; a cross-group path has three such queues.
    assert FACTS.path_queue_ns(False) == pytest.approx(7.2e6)
    assert FACTS.path_queue_ns(True) == pytest.approx(21.6e6)
    assert FACTS.upstream_queue_ns(True) == pytest.approx(14.4e6)
    # a 9000-byte frame serialises in 0.72 ms per 100 Mbit/s link: 2 links in a group, 4 across
    assert list(FACTS.path_serialization_ns([9000, 9000], [False, True])) == \
        pytest.approx([1.44e6, 2.88e6])


def test_queue_bound_of_ports_sized_on_a_long_round_trip():
    """With the ports' round trip given (random-loss.toml's 28.6192 ms at 30 Mbit/s, MTU 1500),
    each port holds 1 BDP = 3,750,000 B/s x 0.0286192 s = 107,322 B = 28.6192 ms of drain, not
    the 4 ms the drain-time rule alone gives (model/switchport.py)."""
    facts = F.FabricFacts(host_link_mbit=30, fabric_link_mbit=30, mtu=1500, trimmed=True,
                          switch_buffer_bytes=None, ports_rtt_ns=28_619_200)
    assert facts.path_queue_ns(False) == pytest.approx(28.6192e6, abs=1e3)
    assert facts.path_queue_ns(True) == pytest.approx(3 * 28.6192e6, abs=3e3)
    no_bdp = F.FabricFacts(host_link_mbit=30, fabric_link_mbit=30, mtu=1500, trimmed=True,
                           switch_buffer_bytes=None)
    assert no_bdp.path_queue_ns(False) == pytest.approx(4e6)


def held(delays_ms):
    sent = [i * 10_000_000 for i in range(len(delays_ms))]
    packets = captures(sent, [s + int(d * 1e6) for s, d in zip(sent, delays_ms)])
    return FC.held_check(FC.matched_data(packets, None, None, FACTS), FACTS, {}, {})


def test_held_beyond_queue_bound_p999():
    # Same group: bound = 7.2 ms queue + 1.44 ms serialisation + 0.06 ms unloaded forwarding
    # (the fastest packet: 1.5 ms - 1.44) = 8.7 ms. 1000 packets, nearest-rank p99.9 = the 999th.
    one_late = [1.5] + [2.0] * 998 + [20.0]
    assert held(one_late).verdict == F.OK                      # 999th = 2.0 ms: 0.23
    two_late = [1.5] + [2.0] * 997 + [20.0, 20.0]
    check = held(two_late)
    assert check.measured == pytest.approx(20 / 8.7)           # 2.30x the bound
    assert check.verdict == FV.INVALID
    check = held([1.5] + [2.0] * 997 + [12.0, 12.0])           # 12 / 8.7 = 1.38x
    assert check.verdict == F.DEGRADED and check.measured == pytest.approx(12 / 8.7)


def pacing(stall_at=(), pause_after=None):
    """200 frames sent back to back (0.72 ms apart) h0 -> h1; the last hop serves them 1.5
    serialization times apart (1.08 ms: slower than the line, within the 2x bound), none
    earlier than 1.5 ms after it was sent. Every index in stall_at leaves 5 ms later still.
    pause_after: the sender pauses 50 ms after that frame (the link idles with nothing to send)."""
    ser = 720_000
    sent, t = [], 0
    for i in range(200):
        sent.append(t)
        t += ser + (50_000_000 if i == pause_after else 0)
    received = []
    for i, s in enumerate(sent):
        gap = 3 * ser // 2 + (5_000_000 if i in stall_at else 0)
        received.append(s + 1_500_000 if i == 0 else max(received[-1] + gap, s + 1_500_000))
    packets = captures(sent, received)
    measurements, unmeasured = {}, {}
    check = FC.pacing_check(packets, FC.matched_data(packets, None, None, FACTS), FACTS, None, None,
                           measurements, unmeasured)
    return check, measurements, unmeasured


def test_link_pacing_counts_late_gaps_while_backlogged():
    # every gap is backlogged: frame i is due (sent + the pair's fastest 1.5 ms) no later than
    # frame i-1's departure plus its serialisation. 199 gaps, each 1.5 serialisation times.
    check, m, _ = pacing()
    assert m[F.LINK_PACING]["backlogged_gaps"] == 199 and check.measured == 0
    check, _, _ = pacing(stall_at=(50,))                        # 1/199 = 0.5%: ok
    assert check.verdict == F.OK and check.measured == pytest.approx(1 / 199)
    check, _, _ = pacing(stall_at=(50, 100, 150))               # 3/199 = 1.5%: 1.51x
    assert check.verdict == F.DEGRADED and check.measured == pytest.approx(3 / 199)
    check, _, _ = pacing(stall_at=tuple(range(10, 200, 20)))    # 10/199 = 5%: 5x
    assert check.verdict == FV.INVALID


def test_link_pacing_ignores_an_idle_sender():
    # the 50 ms pause: frame 100 was sent at 122.0 ms, after frame 99 left (1.5 + 99 * 1.08 =
    # 108.4 ms), so that gap is not backlogged and its length is no violation.
    check, m, _ = pacing(pause_after=99)
    assert m[F.LINK_PACING]["backlogged_gaps"] == 198 and check.measured == 0


def test_link_pacing_unmeasured_without_a_busy_port():
    sent = [i * 10_000_000 for i in range(20)]
    packets = captures(sent, [s + 1_500_000 for s in sent])
    unmeasured = {}
    assert FC.pacing_check(packets, FC.matched_data(packets, None, None, FACTS), FACTS, None, None,
                          {}, unmeasured) is None
    assert "fewer than 50" in unmeasured[F.LINK_PACING]


# ---------------------------------------------------------------- ovs-vswitchd

OVS_TEXT = """2026-11-27T14:00:00.100Z|00001|vlog|INFO|opened log file
2026-11-27T14:00:01.500Z|00042|timeval(handler3)|WARN|Unreasonably long 1234ms poll interval (900ms user, 20ms system)
2026-11-27T14:00:09.000Z|00043|timeval|WARN|Unreasonably long 4000ms poll interval (1ms user, 0ms system)
"""
T0 = 1_795_788_000_000_000_000     # 2026-11-27T14:00:00Z in ns since the epoch


def test_ovs_stalls_in_window(tmp_path):
    stalls = F.ovs_stalls_in(OVS_TEXT, T0 + 1_000_000_000, T0 + 5_000_000_000)
    assert [s["ms"] for s in stalls] == [1234]
    assert stalls[0]["t_realtime_ns"] == T0 + 1_500_000_000
    log = tmp_path / "ovs.log"
    log.write_text(OVS_TEXT)
    F.record_ovs_stalls(tmp_path, T0 + 1_000_000_000, T0 + 5_000_000_000, log_path=log)
    m, u = {}, {}
    check = F.ovs_check(tmp_path, RTT_NS, m, u)
    # 1234 ms over a 2 ms base RTT: 617 base RTTs against a bound of 1
    assert check.measured == pytest.approx(617) and check.verdict == FV.INVALID
    F.record_ovs_stalls(tmp_path, T0 + 2_000_000_000, T0 + 5_000_000_000, log_path=log)
    check = F.ovs_check(tmp_path, RTT_NS, m, u)
    assert check.measured == 0 and check.verdict == F.OK


def test_another_servers_stall_counts_and_names_its_server(tmp_path):
    """A run over servers: the other server's stall lines, in the run directory, judged in the
    same window as this machine's (whose log has none in it)."""
    here = tmp_path / "ovs.log"
    here.write_text(OVS_TEXT.splitlines()[0] + "\n")
    (tmp_path / "ovs-vswitchd@b.log").write_text(OVS_TEXT.splitlines()[1] + "\n")
    record = F.record_ovs_stalls(tmp_path, T0 + 1_000_000_000, T0 + 5_000_000_000,
                                 log_path=here)
    assert [(s["ms"], s["server"]) for s in record["stalls"]] == [(1234, "b")]
    assert record["other_logs"] == ["ovs-vswitchd@b.log"]
    check = F.ovs_check(tmp_path, RTT_NS, {}, {})
    assert check.measured == pytest.approx(617) and check.verdict == FV.INVALID


def test_ovs_log_unreadable_is_unmeasured(tmp_path):
    F.record_ovs_stalls(tmp_path, 1, 2, log_path=tmp_path / "missing.log")
    u = {}
    assert F.ovs_check(tmp_path, RTT_NS, {}, u) is None
    assert "cannot read" in u[F.OVS_STALLS]
    (tmp_path / F.OVS_STALLS_FILE).write_text("{not json")
    assert F.ovs_check(tmp_path, RTT_NS, {}, u) is None and "unreadable" in u[F.OVS_STALLS]


# ---------------------------------------------------------------- verdicts

def test_severity_boundaries():
    assert [FV.severity(r) for r in (0.0, 1.0, 1.01, 2.0, 2.01)] == \
        [F.OK, F.OK, F.DEGRADED, F.DEGRADED, FV.INVALID]


def test_empty_run_directory_is_not_vouched_for(tmp_path):
    fid = F.transport_fidelity(tmp_path, FACTS, None, None)
    assert fid["verdict"] == F.DEGRADED
    assert set(fid["unmeasured"]) == set(FV.INVARIANTS)
    assert fid["violations"][0]["invariant"] == "evidence"
    json.dumps(fid)


def test_require_fidelity_exit_code():
    ok = {"transport": "mrc", "verified": True, "fidelity": {"verdict": F.OK}}
    bad = {"transport": "tcp", "verified": True, "fidelity": {"verdict": F.DEGRADED}}
    assert run_summary.run_verdict([ok, bad], False)[0] == run_summary.EXIT_OK
    assert run_summary.run_verdict([ok, bad], False, require_fidelity=True)[0] == \
        run_summary.EXIT_FIDELITY
    assert run_summary.run_verdict([ok], False, require_fidelity=True)[0] == run_summary.EXIT_OK
    unverified = dict(bad, verified=False)
    assert run_summary.run_verdict([unverified], False, require_fidelity=True)[0] == \
        run_summary.EXIT_NOT_VERIFIED


def test_paragraph_names_what_a_broken_invariant_voids(tmp_path):
    top = {"transports": {
        "mrc": {"fidelity": {"verdict": FV.INVALID, "violations": [
            {"invariant": F.TIMER_LATENESS}]}},
        "tcp": {"fidelity": {"verdict": F.OK, "violations": []}}}}
    (tmp_path / "summary.json").write_text(json.dumps(top))
    html = F.paragraph_html(tmp_path)
    assert "mrc invalid, tcp ok; time_scale 1." in html and "verdict bad" in html
    # the way to a valid run, on the run's own copy of the scenario
    assert f"For a valid run: run `mrclab calibrate {tmp_path}/scenario.toml`" in html
    assert "iteration times and recovery times measure this machine&#x27;s CPU" in html
    md = F.paragraph_markdown(tmp_path)
    assert md.startswith("**Fidelity: mrc invalid, tcp ok; time_scale 1.**")
    top["transports"]["mrc"]["fidelity"] = {"verdict": F.OK, "violations": []}
    (tmp_path / "summary.json").write_text(json.dumps(top))
    assert "measure the emulated fabric" in F.paragraph_html(tmp_path)
    assert "not assessed" in F.paragraph_html(tmp_path / "nothing-here")


def test_report_opens_with_the_fidelity_paragraph(tmp_path):
    from analysis import metrics, report
    from tests.helpers.synth import make_run
    run_dir = make_run(tmp_path / "demo-20260101", packets=120)
    top = json.loads((run_dir / "summary.json").read_text()) \
        if (run_dir / "summary.json").exists() else {}
    top["transports"] = {"mrc": {"fidelity": {"verdict": F.DEGRADED, "violations": [
        {"invariant": F.HELD_BEYOND_QUEUE}]}}}
    (run_dir / "summary.json").write_text(json.dumps(top))
    text = report.write_report(metrics.load_run(run_dir), {}, tmp_path / "r.html").read_text()
    body = text[text.index("<h1>"):]
    assert body.index("Fidelity: mrc degraded; time_scale 1.") < body.index("<h2>Verdict</h2>")
    assert "waited in the switches longer than any queue can hold them" in body


def test_kernel_tcp_segments_from_captures(tmp_path):
    """TCP over IPv6 in a host port's capture: the port's own segments are tx, data segments
    are data packets, and a retransmission (same sequence number, new TSval) is a packet of its
    own, so it cannot pair with the original's departure."""
    from scapy.all import Ether, IPv6, TCP, wrpcap
    local, peer = "fd00:0:0:0::1", "fd00:0:0:1::1"

    def seg(src, dst, seq, tsval, payload=b""):
        return Ether() / IPv6(src=src, dst=dst) / TCP(
            sport=47000, dport=50000, seq=seq, flags="A",
            options=[("NOP", None), ("NOP", None), ("Timestamp", (tsval, 0))]) / payload

    frames = [seg(local, peer, 1000, 7, b"x" * 1000), seg(local, peer, 1000, 9, b"x" * 1000),
              seg(peer, local, 5, 8)]
    for i, f in enumerate(frames):
        f.time = 100 + i / 1000
    (tmp_path / "pcaps").mkdir()
    wrpcap(str(tmp_path / "pcaps" / "h0-p0.pcap"), frames)
    seg_df = FC.tcp_segments(tmp_path, None, {("h0", 0): local})
    assert list(seg_df["direction"]) == ["tx", "tx", "rx"]
    assert list(seg_df["is_data"]) == [True, True, False]
    assert list(seg_df["psn"]) == [1000, 1000, 5]
    assert seg_df["retx"][0] != seg_df["retx"][1]
    # 14 Ethernet + 40 IPv6 + 32 TCP (20 + 12 option bytes) + 1000 payload
    assert list(seg_df["size"]) == [1086, 1086, 86]
    assert list(seg_df["time_ns"]) == [100_000_000_000, 100_001_000_000, 100_002_000_000]


def worker_log(path, late_ms: dict, n=201, interval_ms=10):
    """Goodput samples on the worker's grid (first at 1 s), sample k late by late_ms.get(k, 0.1)
    (the first, the grid's origin, on time), plus the off-grid sample taken at exit."""
    t0 = 1_000_000_000
    times = [t0] + [t0 + k * interval_ms * 1_000_000 + int(late_ms.get(k, 0.1) * 1e6)
                    for k in range(1, n)]
    times.append(times[-1] + 3)
    path.write_text("\n".join(json.dumps({"t_ns": t, "host": "h0", "event": Event.GOODPUT})
                              for t in times) + "\n")


def test_worker_lateness_from_the_goodput_grid(tmp_path):
    # 201 samples: the origin (0), 197 at 0.1 ms, 3 at 3 ms. The p99 (nearest rank
    # ceil(0.99 * 201) = 199) is 3 ms = 1.5 base RTTs: 3x the bound, invalid.
    worker_log(tmp_path / "worker-h0.jsonl", {50: 3, 100: 3, 150: 3})
    m, u = {}, {}
    check = F.worker_lateness_check(tmp_path, RTT_NS, None, None, m, u)
    assert check.measured == pytest.approx(1.5) and check.verdict == FV.INVALID
    assert m[F.WORKER_LATENESS]["h0"]["samples"] == 201
    # two late samples: rank 199 is a 0.1 ms one
    worker_log(tmp_path / "worker-h0.jsonl", {50: 3, 100: 3})
    check = F.worker_lateness_check(tmp_path, RTT_NS, None, None, {}, {})
    assert check.measured == pytest.approx(0.05) and check.verdict == F.OK
    # a window that leaves fewer than 100 samples measures nothing
    u = {}
    assert F.worker_lateness_check(tmp_path, RTT_NS, 1_000_000_000, 1_500_000_000, {}, u) is None
    assert F.WORKER_LATENESS in u


# ---------------------------------------------------------------- clocks of a run over servers

def _clocks(tmp_path, start_error_ns, end_error_ns, drift_ns):
    entry = {"start": {"offset_ns": 5_000.0, "error_ns": start_error_ns, "at_ns": 0.0},
             "end": {"offset_ns": 5_000.0 + drift_ns, "error_ns": end_error_ns,
                     "at_ns": 60e9}}
    steady = {"start": {"offset_ns": 0.0, "error_ns": 1_000.0, "at_ns": 0.0},
              "end": {"offset_ns": 0.0, "error_ns": 1_000.0, "at_ns": 60e9}}
    (tmp_path / "clocks.json").write_text(json.dumps({"b": entry, "c": steady}))


def test_a_server_clock_known_to_a_fifth_of_a_base_rtt_is_ok(tmp_path):
    # k = 1 and a 400 us base RTT: b's bound is the larger error (30 us) plus its drift (50 us)
    # = 80 us = 0.2 base RTT, within the quarter the merged timeline needs (ratio 0.8)
    _clocks(tmp_path, 20_000.0, 30_000.0, 50_000.0)
    measured = {}
    check = F.clock_check(tmp_path, 400_000, measured, {}, 1.0)
    assert check.measured == pytest.approx(0.2) and check.verdict == F.OK
    assert measured[FV.CLOCK_ALIGNMENT]["worst_server"] == "b"
    assert measured[FV.CLOCK_ALIGNMENT]["servers"]["b"]["bound_ms"] == 0.08


def test_the_clock_bound_is_judged_against_the_base_rtt_in_wall_time(tmp_path):
    # b's bound 150 us (wall). At k = 1 against a 400 us RTT: 0.375 base RTT, ratio 1.5
    # (degraded); at k = 2 the RTT lasts 800 us of wall time: 0.1875, ok
    _clocks(tmp_path, 50_000.0, 50_000.0, -100_000.0)
    assert F.clock_check(tmp_path, 400_000, {}, {}, 1.0).verdict == F.DEGRADED
    assert F.clock_check(tmp_path, 400_000, {}, {}, 2.0).measured == pytest.approx(0.1875)
    # and it votes in the transport's verdict
    fid = F.transport_fidelity(tmp_path, dataclasses.replace(FACTS, frame_rtt_ns=400_000), None,
                               None)
    assert [v["invariant"] for v in fid["violations"]] == [FV.CLOCK_ALIGNMENT]
    assert fid["verdict"] == F.DEGRADED


def test_a_run_on_one_machine_has_no_clocks_to_judge_and_a_bad_file_names_the_server(tmp_path):
    unmeasured = {}
    assert F.clock_check(tmp_path, 400_000, {}, unmeasured) is None
    assert "one machine" in unmeasured[FV.CLOCK_ALIGNMENT]
    (tmp_path / "clocks.json").write_text(json.dumps({"b": {"start": {}, "end": {}}}))
    assert F.clock_check(tmp_path, 400_000, {}, unmeasured) is None
    assert "server b" in unmeasured[FV.CLOCK_ALIGNMENT]
    (tmp_path / "clocks.json").write_text("[1, 2")
    assert F.clock_check(tmp_path, 400_000, {}, unmeasured) is None
    assert "unreadable" in unmeasured[FV.CLOCK_ALIGNMENT]
