"""analysis/flows.py on synthetic logs: per-flow goodput, the window all flows share, and ECN
moves (an ECN skip of an EV not already skipped), with expected values worked out by hand."""
import json

import pytest

from analysis import flows as F
from model.events import Event, Phase
from model.topology import make_ev

MS = 1_000_000
EV_S0 = make_ev(0, 0, 0x11)          # plane 0, spine 0
EV_S0B = make_ev(0, 0, 0x12)
EV_S1 = make_ev(0, 1, 0x13)          # plane 0, spine 1


def skip(t_ms, ev, until_ms, qp=5, once=False):
    e = {"t_ns": t_ms * MS, "event": Event.EV_SKIP, "qp": qp, "ev": ev, "plane": 0,
         "until_ns": until_ms * MS}
    if once:
        e["once"] = True
    return e


def test_mean_goodput_is_bytes_over_time_between_first_and_last_sample_in_window():
    # 1 MB in 0.4 s between 100 ms and 500 ms = 20 Mbit/s; samples outside are ignored
    samples = [(0, 0), (100 * MS, 500_000), (300 * MS, 1_000_000), (500 * MS, 1_500_000),
               (900 * MS, 9_999_999)]
    assert F.mean_goodput_mbit(samples, 100 * MS, 500 * MS) == pytest.approx(20.0)
    assert F.mean_goodput_mbit(samples, 100 * MS, 200 * MS) is None       # one sample


def test_moves_count_skips_that_start_not_the_echoes_that_extend_them():
    events = [
        skip(0, EV_S0, 4),      # move 1 (EV_S0 free)
        skip(1, EV_S0, 5),      # still skipped until 4: extends, not a move
        skip(3, EV_S0B, 7),     # move 2 (another EV)
        skip(6, EV_S0, 10),     # EV_S0's skip ended at 5: move 3
        skip(7, EV_S1, 9),      # move 4, on spine 1
        skip(8, EV_S1, 8, once=True),   # trimmed NACK: not an ECN skip
        skip(2, EV_S0, 9, qp=6),        # another QP
    ]
    got = F.ecn_moves(events, qps={5})
    assert got == {"ecn_skips": 5, "moves": 4, "moves_by_path": {"p0s0": 3, "p0s1": 1},
                   "trim_skips": 1}
    assert F.ecn_moves(events)["moves"] == 5


def test_qps_to_a_peer_come_from_the_endpoints_qp_events():
    events = [{"event": Event.QP, "qp": 3, "peer": "h2"},
              {"event": Event.QP, "qp": 4, "peer": "h3"},
              {"event": Event.QP, "qp": 7, "peer": "h2"}]
    assert F.qps_to(events, "h2") == {3, 7}


def test_flows_of_bisection_and_incast_victim():
    assert F.flows_of({"collective": "bisection", "hosts": ["h0", "h1", "h2", "h3"]}) == \
        [("h0", "h2"), ("h1", "h3")]
    assert F.flows_of({"collective": "incast", "world_size": 8, "victim": [4, 1]}) == [("h4", "h1")]
    assert F.flows_of({"collective": "allreduce", "world_size": 4}) == []


def worker_log(start_ms, end_ms, rate_mbit, host):
    """Timed phase [start, end], goodput samples every 10 ms at a steady rate from 0."""
    bytes_per_ms = rate_mbit * 1e6 / 8 / 1000
    log = [{"t_ns": start_ms * MS, "event": Event.PHASE, "phase": Phase.WARMUP_DONE, "host": host}]
    log += [{"t_ns": t * MS, "event": Event.GOODPUT, "rx_bytes": int(t * bytes_per_ms),
             "host": host}
            for t in range(0, end_ms + 1, 10)]
    log.append({"t_ns": end_ms * MS, "event": Event.ITERATION, "iter": 0, "start_ns": start_ms * MS,
                "end_ns": end_ms * MS, "collective": "bisection", "host": host})
    return log


def test_flow_figures_compare_flows_over_the_window_they_share():
    # flow to h2: timed 100..1000 ms, 20 Mbit/s (2500 B/ms) until 600 ms, then 10 Mbit/s
    # (1250 B/ms): bytes 250 000 at 100 ms, 1 500 000 at 600, 2 000 000 at 1000, so over its
    # own window 1 750 000 B x 8 / 0.9 s = 15.56 Mbit/s. Flow to h3: 12 Mbit/s over 300..600 ms.
    # Common window 300..600 ms: h2 20 Mbit/s, h3 12 Mbit/s.
    h2 = worker_log(100, 1000, 20.0, "h2")
    for e in h2:
        if e["event"] == Event.GOODPUT and e["t_ns"] > 600 * MS:
            e["rx_bytes"] = 1_500_000 + (e["t_ns"] // MS - 600) * 1250
    logs = {"h2": h2, "h3": worker_log(300, 600, 12.0, "h3")}
    endpoint = {"h0": [{"event": Event.QP, "qp": 5, "peer": "h2"}, skip(400, EV_S0, 402)],
                "h1": [{"event": Event.QP, "qp": 9, "peer": "h3"}]}
    got = F.flow_figures([("h0", "h2"), ("h1", "h3")], logs, endpoint, link_mbit=25.0)
    assert [g["goodput_mbit"] for g in got] == [pytest.approx(1_750_000 * 8 / 0.9 / 1e6),
                                                 pytest.approx(12.0)]
    assert [g["goodput_all_flows_mbit"] for g in got] == [pytest.approx(20.0), pytest.approx(12.0)]
    assert got[0]["link_fraction"] == pytest.approx(0.8)
    assert [g["ecn_moves"] for g in got] == [1, 0]
    assert got[0]["ecn_moves_by_path"] == {"p0s0": 1}


def test_flow_summary_reads_a_run_directory_and_skips_corrupt_lines(tmp_path):
    (tmp_path / "worker.json").write_text(json.dumps(
        {"collective": "bisection", "hosts": ["h0", "h1"],
         "fabric": {"host_link_mbit": 10, "planes": 2}}))
    lines = [json.dumps(e) for e in worker_log(0, 1000, 16.0, "h1")]
    lines.insert(3, '{"t_ns": 15, "event": "goodput", "rx_bytes": "lots"')   # cut by a crash
    lines.insert(4, json.dumps({"t_ns": 25 * MS, "event": Event.GOODPUT, "rx_bytes": "lots"}))
    (tmp_path / "worker-h1.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "endpoint-h0.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"t_ns": 1, "event": Event.QP, "qp": 2, "peer": "h1"}, skip(10, EV_S0, 12, qp=2),
        {"t_ns": 11, "event": Event.EV_SKIP, "qp": 2, "ev": "x", "until_ns": 3}]) + "\n")
    (flow,) = F.flow_summary(tmp_path)["flows"]
    assert flow["src"] == "h0" and flow["dst"] == "h1"
    assert flow["goodput_mbit"] == pytest.approx(16.0)
    assert flow["link_fraction"] == pytest.approx(0.8)      # 16 of 2 planes x 10 Mbit/s
    assert flow["ecn_moves"] == 1


def test_flow_summary_of_a_run_without_flows_or_config(tmp_path):
    assert F.flow_summary(tmp_path) == {"flows": []}
    (tmp_path / "worker.json").write_text(json.dumps({"collective": "allreduce", "world_size": 4}))
    assert F.flow_summary(tmp_path) == {"flows": []}


def test_describe_names_rate_share_and_moves():
    line = F.describe({"src": "h0", "dst": "h2", "goodput_mbit": 10.0,
                       "goodput_all_flows_mbit": 15.0, "link_fraction": 0.75, "ecn_moves": 4,
                       "ecn_moves_by_path": {"p0s1": 1, "p0s0": 3}})
    assert line == "flow h0->h2: 15.0 Mbit/s (75% of the host's NIC rate), ECN moves 4 (p0s0 3, p0s1 1)"


def counters(qps: dict) -> dict:
    """An endpoint's final counters event, JSON-shaped (QP numbers become strings)."""
    return json.loads(json.dumps({"t_ns": 9, "event": Event.COUNTERS, "qps": qps}))


def test_packets_by_path_sum_the_flows_qps_from_the_final_counters():
    # QPs 5 and 6 go to the flow's destination, 7 elsewhere: p0s0 30 + 10, p0s1 90 + 0
    events = [counters({5: {"sent_packets_by_path": {"p0s0": 30, "p0s1": 90}},
                        6: {"sent_packets_by_path": {"p0s0": 10}},
                        7: {"sent_packets_by_path": {"p0s0": 500}}})]
    got = F.sent_by_path(events, {5, 6})
    assert got == {"p0s0": 40, "p0s1": 90}
    assert F.shares(got) == {"p0s0": pytest.approx(40 / 130), "p0s1": pytest.approx(90 / 130)}


def test_packets_by_path_absent_without_counters_or_per_path_counts():
    assert F.sent_by_path([], {5}) is None                         # endpoint did not close
    assert F.sent_by_path([counters({5: {"sender": {}}})], {5}) is None     # RoCE-like stats
    assert F.shares(None) is None and F.shares({"p0s0": 0}) is None


def test_flow_summary_gives_each_flows_share_of_packets_per_path(tmp_path):
    (tmp_path / "worker.json").write_text(json.dumps(
        {"collective": "bisection", "hosts": ["h0", "h1"],
         "fabric": {"host_link_mbit": 10, "planes": 1}}))
    (tmp_path / "worker-h1.jsonl").write_text(
        "\n".join(json.dumps(e) for e in worker_log(0, 1000, 8.0, "h1")) + "\n")
    (tmp_path / "endpoint-h0.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"t_ns": 1, "event": Event.QP, "qp": 2, "peer": "h1"},
        {"t_ns": 2, "event": Event.QP, "qp": 3, "peer": "h9"},
        counters({2: {"sent_packets_by_path": {"p0s0": 25, "p0s1": 75}},
                  3: {"sent_packets_by_path": {"p0s0": 1000}}})]) + "\n")
    (flow,) = F.flow_summary(tmp_path)["flows"]
    assert flow["sent_packets_by_path"] == {"p0s0": 25, "p0s1": 75}
    assert flow["sent_share_by_path"] == {"p0s0": 0.25, "p0s1": 0.75}
    assert F.describe(flow).endswith(", packets sent 25% p0s0, 75% p0s1")


def test_collective_demand_follows_each_collectives_pattern():
    """traffic/workload/collectives.py: the ring collectives send to rank r + 1, all-to-all to
    every other rank (a third of a rank's bytes each of 3), a bisection's first half to
    r + W/2, an incast's senders to the target (the victim flow too)."""
    hosts = ["h0", "h1", "h2", "h3"]
    ring = {("h0", "h1"): 1.0, ("h1", "h2"): 1.0, ("h2", "h3"): 1.0, ("h3", "h0"): 1.0}
    for kind in ("allreduce", "reduce_scatter", "allgather", "sendrecv"):
        assert F.collective_demand({"collective": kind, "hosts": hosts}) == ring
    a2a = F.collective_demand({"collective": "alltoall", "world_size": 4})
    assert len(a2a) == 12 and a2a[("h2", "h0")] == pytest.approx(1 / 3)
    assert F.collective_demand({"collective": "bisection", "hosts": hosts}) == \
        {("h0", "h2"): 1.0, ("h1", "h3"): 1.0}
    assert F.collective_demand({"collective": "incast", "hosts": hosts, "incast_target": 0,
                                "victim": [2, 1]}) == \
        {("h1", "h0"): 1.0, ("h2", "h0"): 1.0, ("h3", "h0"): 1.0, ("h2", "h1"): 1.0}
    assert F.collective_demand({"collective": "incast", "hosts": hosts, "incast_target": 0,
                                "victim": [2, 1], "victim_only": True}) == \
        {("h3", "h0"): 1.0, ("h2", "h1"): 1.0}


def test_collective_demand_unknown_is_none():
    assert F.collective_demand({"collective": "allreduce"}) is None          # no ranks
    assert F.collective_demand({"collective": "broadcast", "world_size": 4}) is None
    assert F.collective_demand({"collective": "incast", "world_size": 4,
                                "incast_target": 9}) is None
