"""The analysis of a trimming run (analysis/trimming.py): endpoint statistics from the endpoint
logs, rate series and victim goodput from the worker logs, and a transport's trimming summary
from its counter snapshot."""
import json

import pytest

from analysis import trimming as tr
from model.events import Event, Phase


def _ev(event, **kw):
    return {"t_ns": kw.pop("t_ns", 1), "host": "h0", "event": event, **kw}


def test_endpoint_stats_counts_nacks_and_forward_assumed_bad():
    logs = {"h0": [_ev(Event.RETRANSMIT, reason="nack_trimmed"),
                   _ev(Event.RETRANSMIT, reason="timeout"),
                   _ev(Event.RETRANSMIT, reason="nack_trimmed"),
                   _ev(Event.EV_STATE, new="ASSUMED_BAD", reason="timeout"),
                   _ev(Event.EV_STATE, new="ASSUMED_BAD", reason="reverse_probe_timeout",
                       direction="reverse"),
                   _ev(Event.EV_STATE, new="GOOD", reason="probe_ok"),
                   _ev("counters", qps={"1": {"sender": {"nacks": 2, "timeouts": 1},
                                              "receiver": {"nacks": 0, "trimmed": 0,
                                                           "sack_copies": 4}}})],
            "h1": [_ev("counters", qps={"2": {"sender": {}, "receiver": {"nacks": 3, "trimmed": 2,
                                                                          "sack_copies": 5}}})]}
    s = tr.endpoint_stats(logs)
    assert s["retransmits_by_reason"] == {"nack_trimmed": 2, "timeout": 1}
    assert s["ev_assumed_bad"] == 1 and s["ev_assumed_bad_reverse"] == 1
    assert s["ev_assumed_bad_by_reason"] == {"timeout": 1, "reverse:reverse_probe_timeout": 1}
    assert (s["nacks_sent"], s["nacks_received"], s["trimmed_received"], s["timeouts"]) == (3, 2, 2, 1)
    assert s["tail_sack_copies"] == 9


def test_rate_series_and_victim_goodput(tmp_path):
    ms = 1_000_000
    samples = [(0, 0), (100 * ms, 1_250_000), (200 * ms, 2_500_000), (300 * ms, 2_500_000)]
    r = tr.rate_series(samples, bin_ms=100.0)
    assert list(r.round(3)) == [0.0, 100.0, 100.0, 0.0]
    cfg = {"collective": "incast", "hosts": ["h0", "h1", "h2"], "victim": [2, 1]}
    (tmp_path / "worker.json").write_text(json.dumps(cfg))
    lines = [_ev(Event.PHASE, phase=Phase.WARMUP_DONE, t_ns=0)]
    lines += [_ev(Event.GOODPUT, t_ns=t, rx_bytes=b) for t, b in samples]
    lines += [_ev(Event.ITERATION, t_ns=200 * ms, end_ns=200 * ms)]
    (tmp_path / "worker-h1.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    v = tr.victim_goodput(tmp_path)
    assert (v["src"], v["dst"]) == ("h2", "h1") and v["mean_mbit"] == pytest.approx(100.0)
    assert tr.victim_info({"collective": "allreduce", "victim": [1, 2]}) is None


def test_transport_summary_reads_snapshot(tmp_path):
    snap = {"mark": True, "trim": True, "ports": {},
            "totals": {"marked": 5, "trimmed": 3, "dropped": 0, "last_hop": {"marked": 0, "trimmed": 1}}}
    (tmp_path / "trim_counters.json").write_text(json.dumps(snap))
    s = tr.transport_summary(tmp_path, {"mark": True, "trim": True})
    assert (s["marked"], s["trimmed"], s["marked_last_hop"], s["trimmed_last_hop"]) == (5, 3, 0, 1)
    assert s["nacks_sent"] is None and s["victim"] is None
    off = tr.transport_summary(tmp_path / "none", None)
    assert off["trimming"] == {"mark": False, "trim": False} and off["trimmed"] is None
