"""Healthy EVs retired: hand-built endpoint logs and fault logs, with the expected verdict of each
retirement worked out from the fabric's wiring (model/topology.py: h0, h1 under t0p<P>g0 and h2,
h3 under t0p<P>g1; every T0 links to t1p<P>s0 and t1p<P>s1) and the fault times."""
import json

import pytest

from analysis import retirements as R
from model.events import ControllerLog, Event
from model.topology import FabricSpec, Topology, make_ev

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
S = 1_000_000_000
LOOKBACK = 1 * S
DOWN = {"t_ns": 10 * S, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"}
UP = {"t_ns": 20 * S, "action": "link_up", "a": "t0p0g0", "b": "t1p0s0"}
P0S0, P0S1, P1S0 = make_ev(0, 0, 0xC001), make_ev(0, 1, 0xC002), make_ev(1, 0, 0xC003)


def qp(t, host, num, peer):
    return {"t_ns": t, "host": host, "event": Event.QP, "qp": num, "peer": peer}


def retire(t, host, num, ev, reason="timeout", **extra):
    return {"t_ns": t, "host": host, "event": Event.EV_STATE, "qp": num, "ev": ev,
            "plane": ev >> 28, "old": "GOOD", "new": "ASSUMED_BAD", "reason": reason, **extra}


def suspect(t, host, num, ev):
    return {"t_ns": t, "host": host, "event": Event.EV_SUSPECT, "qp": num, "ev": ev,
            "plane": ev >> 28, "reason": "timeout"}


def logs():
    """Eleven ASSUMED_BAD transitions; the comment on each says how it must be judged."""
    return {
        "h0": [qp(0, "h0", 1, "h2"),
               # h0 -> h2 on plane 0 via t1p0s0: crosses the dead t0p0g0~t1p0s0 -> justified
               retire(12 * S, "h0", 1, P0S0),
               # via t1p0s1: that path is whole, but this is an ACK timeout and h2's ACKs to h0
               # may come back over t1p0s0 into the dead link -> justified (ACK path)
               retire(12 * S, "h0", 1, make_ev(0, 1, 0xC004)),
               # the same path by a SACK gap: a later packet's SACK came back -> healthy
               retire(12 * S, "h0", 1, make_ev(0, 1, 0xC009), reason="sack_gap"),
               # plane 1: whole -> healthy
               retire(12 * S, "h0", 1, P1S0, reason="sack_gap"),
               # plane 1 on a timeout: the SACK that covers a plane-1 packet leaves on the plane
               # of the packet that triggered it, so it may come back on plane 0 over t1p0s0
               # into the dead link -> justified (ACK path)
               retire(12 * S, "h0", 1, make_ev(1, 1, 0xC00A)),
               # 0.5 s before the link went down, and the lookback only looks back -> healthy
               retire(int(9.5 * S), "h0", 1, make_ev(0, 0, 0xC005)),
               # detected 0.8 s after the repair, retired 1.5 s after it: the lookback from the
               # detection (0.2 s before the repair) still meets the fault -> justified
               suspect(int(20.8 * S), "h0", 1, make_ev(0, 0, 0xC006)),
               retire(int(21.5 * S), "h0", 1, make_ev(0, 0, 0xC006)),
               # no suspicion, retired 2.5 s after the repair: [21.5 s, 22.5 s] misses the fault
               retire(int(22.5 * S), "h0", 1, make_ev(0, 0, 0xC007)),
               # the control plane lifting a deny judges no path: not a retirement
               {**retire(12 * S, "h0", 1, make_ev(0, 0, 0xC008), reason="allowed"),
                "old": "DENIED"}],
        # h2's ACK path to h0 via t1p0s0 comes down t1p0s0 -> t0p0g0: the dead link -> justified
        "h2": [qp(0, "h2", 7, "h0"),
               retire(15 * S, "h2", 7, P0S0, reason="reverse_probe_timeout",
                      direction="reverse")],
        # h1 -> h0 stay under t0p0g0: the spine bits name no T1 they cross -> healthy
        "h1": [qp(0, "h1", 2, "h0"), retire(12 * S, "h1", 2, P0S0)],
        # no qp event: the peer, hence the path, is unknown -> unjudged
        "h3": [retire(12 * S, "h3", 9, P0S0)],
    }


def judged(events=None, faults=(DOWN, UP), **kw):
    imp = R.impairments(list(faults), TOPO)
    return R.judge_retirements(events or logs(), imp, TOPO, lookback_ns=LOOKBACK, **kw)


def test_each_retirement_is_judged_from_its_path_and_the_fault_times():
    verdicts = {(r.host, r.ev, r.t_ns): r.healthy for r in judged()}
    assert verdicts == {
        ("h0", P0S0, 12 * S): False,
        ("h0", make_ev(0, 1, 0xC004), 12 * S): False,
        ("h0", make_ev(0, 1, 0xC009), 12 * S): True,
        ("h0", P1S0, 12 * S): True,
        ("h0", make_ev(1, 1, 0xC00A), 12 * S): False,
        ("h0", make_ev(0, 0, 0xC005), int(9.5 * S)): True,
        ("h0", make_ev(0, 0, 0xC006), int(21.5 * S)): False,
        ("h0", make_ev(0, 0, 0xC007), int(22.5 * S)): True,
        ("h2", P0S0, 15 * S): False,
        ("h1", P0S0, 12 * S): True,
        ("h3", P0S0, 12 * S): None,
    }


def test_summary_counts():
    # data EVs: 10 retirements (h0's eight, h1's, h3's); healthy: h0's sack_gap via s1, on
    # plane 1 (sack_gap), at 9.5 s and at 22.5 s, and h1's: 5, three of them timeouts; h0's
    # timeouts via s1 and on plane 1 are put down to their ACK paths; reverse: 1, justified;
    # h3's unjudged
    out = R.summarize(judged(), LOOKBACK)
    assert out == {"evs_retired": 10, "healthy_evs_retired": 5, "evs_retired_for_lost_acks": 2,
                   "reverse_evs_retired": 1, "healthy_reverse_evs_retired": 0,
                   "healthy_evs_retired_by_reason": {"timeout": 3, "sack_gap": 2},
                   "retirements_unjudged": 1, "retirement_lookback_ms": 1000.0}


def test_the_justifying_fault_is_named():
    first = next(r for r in judged() if r.host == "h0" and r.ev == P0S0)
    assert first.fault == "link_down t0p0g0~t1p0s0"
    by_ack = next(r for r in judged() if r.host == "h0" and r.ev == make_ev(0, 1, 0xC004))
    assert by_ack.fault == "ACK path: link_down t0p0g0~t1p0s0"
    other_plane = next(r for r in judged() if r.ev == make_ev(1, 1, 0xC00A))
    assert other_plane.fault == "ACK path: link_down t0p0g0~t1p0s0"
    assert first.peer == "h2" and first.detected_ns == 12 * S


def test_over_ecmp_every_t1_of_the_plane_counts():
    # the switches hash the EV onto a T1, so h0's plane-0 EV "via s1" may cross the dead link
    verdicts = {(r.host, r.ev): r.healthy for r in judged(ecmp=True) if r.t_ns == 12 * S}
    assert verdicts[("h0", make_ev(0, 1, 0xC004))] is False
    assert verdicts[("h0", P1S0)] is True           # plane 1 is still another network


def test_without_faults_every_judged_retirement_is_healthy():
    out = R.summarize(judged(faults=()), LOOKBACK)
    assert out["healthy_evs_retired"] == 9 and out["healthy_reverse_evs_retired"] == 1
    assert out["evs_retired_for_lost_acks"] == 0


def test_without_a_topology_nothing_is_judged():
    rs = R.judge_retirements(logs(), [], None)
    assert [r.healthy for r in rs] == [None] * 11


def test_a_cleared_suspicion_does_not_move_the_detection_time():
    # suspected at 19.5 s (the link still down), cleared, retired at 22.5 s with no new
    # suspicion: the earlier suspicion was explained, so the window is [21.5 s, 22.5 s]
    ev = make_ev(0, 0, 0xC009)
    events = {"h0": [qp(0, "h0", 1, "h2"), suspect(int(19.5 * S), "h0", 1, ev),
                     {"t_ns": int(19.6 * S), "host": "h0", "event": Event.EV_CLEARED, "qp": 1,
                      "ev": ev, "plane": 0, "evidence": "late_delivery"},
                     retire(int(22.5 * S), "h0", 1, ev)]}
    (r,) = judged(events)
    assert r.healthy is True and r.detected_ns == int(22.5 * S)


@pytest.mark.parametrize("faults,link,start,end", [
    # flap: down half a period, up, 4 times from 0: the last up step is at 3 x 2 s + 1 s = 7 s
    ([{"t_ns": 0, "action": "flap", "a": "t0p0g0", "b": "t1p0s0", "period_s": 2.0, "count": 4}],
     {"t0p0g0", "t1p0s0"}, 0, 7 * S),
    ([{"t_ns": S, "action": "gray_loss", "a": "h0", "b": "t0p1g0", "percent": 5.0},
      {"t_ns": 3 * S, "action": "gray_loss_clear", "a": "h0", "b": "t0p1g0"}],
     {"h0", "t0p1g0"}, S, 3 * S),
    # never cleared: to the end of the run
    ([{"t_ns": S, "action": "degrade", "a": "t0p1g1", "b": "t1p1s1", "fraction": 0.5}],
     {"t0p1g1", "t1p1s1"}, S, None),
])
def test_impairments_of_each_fault_kind(faults, link, start, end):
    assert R.impairments(faults, TOPO) == [
        R.Impairment(frozenset(link), start, end, faults[0]["action"])]


def test_a_blackholed_switch_impairs_each_of_its_links():
    imp = R.impairments([{"t_ns": S, "action": "blackhole", "a": "t1p0s1"},
                         {"t_ns": 4 * S, "action": "blackhole_clear", "a": "t1p0s1"}], TOPO)
    assert {i.link for i in imp} == {frozenset({"t1p0s1", "t0p0g0"}),
                                     frozenset({"t1p0s1", "t0p0g1"})}
    assert {(i.start_ns, i.end_ns) for i in imp} == {(S, 4 * S)}


def test_entries_that_are_not_impairments_are_ignored():
    faults = [{"t_ns": S, "action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 0.0},
              {"t_ns": S, "action": "ecn_mark", "a": "t0p0g0", "b": "t1p0s0", "rate_mbit": 5},
              {"t_ns": S, "action": ControllerLog.PORT_STATUS, "a": "t0p0g0", "b": "t1p0s0"},
              {"t_ns": S, "action": "link_down", "a": "t0p0g0", "b": "nowhere"}]
    assert R.impairments(faults, TOPO) == []


def test_a_transport_directory_is_read_from_its_files(tmp_path):
    for host, events in logs().items():
        (tmp_path / f"endpoint-{host}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events) + '{"t_ns": 1, "cut mid-li')
    (tmp_path / "faults.jsonl").write_text(json.dumps(DOWN) + "\n" + json.dumps(UP) + "\n")
    out = R.transport_retirements(tmp_path, TOPO, lookback_ns=LOOKBACK)
    assert (out["evs_retired"], out["healthy_evs_retired"]) == (10, 5)


def test_the_runner_summarises_mrc_retirements_and_shows_them_per_transport(tmp_path):
    from emulation.run import run_summary
    from emulation.config import scenario
    scn = scenario.parse('name = "t"\n[fabric]\ntime_scale = 1\nplanes = 2\ngroups = 2\nspines = 2\n'
                         'hosts_per_group = 2\n[collective]\nkind = "allreduce"\n'
                         'message_bytes = 1048576\niterations = 3\n'
                         '[mrc.qp]\nloss_policy = "ocp"\nrto_max_ns = 3000000000\n')
    test_a_transport_directory_is_read_from_its_files(tmp_path)   # writes the logs
    mrc = run_summary.retirement_fields(scn, "mrc", tmp_path)
    # a 3 s lookback from h0's 22.5 s retirement reaches back past the repair at 20 s: justified
    assert (mrc["evs_retired"], mrc["healthy_evs_retired"]) == (10, 4)
    assert mrc["retirement_lookback_ms"] == 3000.0
    assert set(run_summary.retirement_fields(scn, "tcp", tmp_path).values()) == {None}
    top = run_summary.top_summary(scn, tmp_path, [
        {"transport": "mrc", "verified": True, "loss_policy": "ocp", **mrc}], False)
    assert {k: top["transports"]["mrc"][k] for k in
            ("loss_policy", "evs_retired", "healthy_evs_retired")} == {
        "loss_policy": "ocp", "evs_retired": 10, "healthy_evs_retired": 4}
