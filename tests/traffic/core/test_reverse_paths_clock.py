"""The receiver's reverse paths (traffic/core/reverse_paths.py) driven directly with a fake clock.

Every expected time below is arithmetic on the configuration, with base_rtt_ns = 1000 so one
RTT is 1000 ns: a probe fails after probe_timeout_rtts = 4 RTTs (4000 ns), one in-use reverse EV
is probed per reverse_probe_rtts = 1 RTT, a retired EV every probe_period_rtts = 5 RTTs
(5000 ns), its period doubling with each failure up to probe_backoff_max = 8, and a trimmed or
CE-marked arrival excuses probe timeouts for congestion_grace_rtts = 8 RTTs (8000 ns).
"""
from __future__ import annotations

import random

from model.events import Event
from model.topology import ENTROPY_MAX, ENTROPY_MIN, ev_entropy, ev_plane, ev_spine, make_ev
from traffic.core.evs import PathInfo
from traffic.core.messages import Probe
from traffic.core.qp_config import MRCConfig
from traffic.core.reverse_paths import ReversePaths, _RetiredEV, _ReverseEV

RTT = 1000


def make(planes=(0, 1), spines=4, up=None, **cfg) -> tuple[ReversePaths, list[dict]]:
    events: list[dict] = []
    config = MRCConfig(base_rtt_ns=RTT, **cfg)
    local_up = up if up is not None else {p: True for p in planes}
    rp = ReversePaths(0x33, config, PathInfo(tuple(planes), spines), random.Random(7), local_up,
                      events.append)
    return rp, events


def answer(probe: Probe) -> Probe:
    """The peer's response: it reflects ev, seq and timestamp."""
    return Probe(ev=probe.ev, seq=probe.seq, timestamp=probe.timestamp, response=True,
                 src_qp=probe.src_qp, path_ev=probe.path_ev)


_INFLIGHT: dict[int, list] = {}        # id(ReversePaths) -> answers on their way back


def drive(rp: ReversePaths, t_from: int, t_to: int, delay_of, step: int = 100,
          active: bool = True) -> list[tuple[int, Probe]]:
    """Poll every `step` ns; each probe is answered `delay_of(probe, t)` ns later, or never
    (None). Answers due at a tick are delivered before that tick's poll; answers still on their
    way at t_to arrive in the next drive() of the same rp. Returns what was sent."""
    sent, inflight = [], _INFLIGHT.setdefault(id(rp), [])
    for t in range(t_from, t_to, step):
        for due, probe in [x for x in inflight if x[0] <= t]:
            inflight.remove((due, probe))
            rp.on_probe_response(answer(probe), t)
        for probe, plane in rp.poll(t, active):
            assert plane == ev_plane(probe.ev)
            sent.append((t, probe))
            delay = delay_of(probe, t)
            if delay is not None:
                inflight.append((t + delay, probe))
    return sent


def probe_failures(events, ev=None, **match):
    return [e for e in events if e["event"] == Event.PROBE and not e["ok"]
            and (ev is None or e["ev"] == ev) and all(e.get(k) == v for k, v in match.items())]


def state_changes(events, new):
    return [e for e in events if e["event"] == Event.EV_STATE and e["new"] == new]


def test_the_initial_set_holds_reverse_evs_per_plane_evs_of_each_plane():
    rp, events = make(planes=(0, 1, 2), spines=4, reverse_evs_per_plane=3)
    assert sorted(rp.evs) == [0, 1, 2]
    for plane, revs in rp.evs.items():
        assert len(revs) == 3
        for rev in revs:
            assert ev_plane(rev.ev) == plane and 0 <= ev_spine(rev.ev) < 4
            assert ENTROPY_MIN <= ev_entropy(rev.ev) <= ENTROPY_MAX
            assert rev.fails == 0
    assert events == [] and rp.retired == {} and rp.denied == set()


def test_port_status_is_the_bitmap_of_the_local_ports_that_are_up():
    up = {0: True, 1: True, 2: True}
    rp, _ = make(planes=(0, 1, 2), up=up)
    assert rp.port_status == 0b111
    up[1] = False                                   # the receiver's own dict, shared
    assert rp.port_status == 0b101
    up[0] = up[2] = False
    assert rp.port_status == 0


def test_replies_go_round_robin_over_the_reverse_evs_of_the_arrival_plane():
    rp, _ = make(planes=(0, 1), reverse_evs_per_plane=2)
    a, b = (r.ev for r in rp.evs[0])
    c, _ = (r.ev for r in rp.evs[1])
    assert [rp.reply_path(0) for _ in range(5)] == [(0, a), (0, b), (0, a), (0, b), (0, a)]
    assert rp.reply_path(1) == (1, c)               # each plane keeps its own turn


def test_a_plane_without_reverse_evs_borrows_the_next_plane_that_has_one():
    up = {0: True, 1: True, 2: True, 3: True}
    rp, _ = make(planes=(0, 1, 2, 3), up=up, reverse_evs_per_plane=1)
    first = {p: rp.evs[p][0].ev for p in range(4)}
    rp.evs[1].clear()
    assert rp.reply_path(1) == (2, first[2])        # the next plane after 1, not plane 0
    rp.evs[2].clear()
    assert rp.reply_path(1) == (3, first[3])
    up[3] = False                                   # the order wraps around: 2, then 0
    assert rp.reply_path(1) == (0, first[0])
    up[1] = False                                   # arrival plane's port down: first plane up
    assert rp.reply_path(1) == (0, first[0])
    up[0] = up[2] = False
    assert rp.reply_path(1) is None                 # no local port up: no reply path at all


def test_with_no_reverse_ev_in_use_anywhere_a_retired_one_of_the_plane_answers():
    rp, _ = make(planes=(0, 1), reverse_evs_per_plane=1)
    for revs in rp.evs.values():
        revs.clear()
    assert rp.reply_path(1) is None
    retired = make_ev(1, 2, 0xC123)
    rp.retired[retired] = _RetiredEV(retired, next_probe_ns=0)
    assert rp.reply_path(1) == (1, retired)
    assert rp.reply_path(0) is None                 # plane 0 has no retired EV either


def test_one_in_use_ev_is_probed_per_reverse_probe_period_in_turn():
    rp, _ = make(planes=(0, 1), reverse_evs_per_plane=2, reverse_probe_rtts=2.0)
    order = [r.ev for p in (0, 1) for r in rp.evs[p]]
    sent = drive(rp, 0, 10 * RTT, lambda probe, t: 100)
    # one probe per 2 RTTs, from t = 0, round robin over plane 0's then plane 1's EVs
    assert [t for t, _ in sent] == [0, 2000, 4000, 6000, 8000]
    assert [p.ev for _, p in sent] == order + order[:1]
    assert [p.seq for _, p in sent] == [1, 2, 3, 4, 5]
    for t, p in sent:
        assert (p.timestamp, p.src_qp, p.port_status, p.path_ev, p.response) == \
            (t, 0x33, 0b11, p.ev, False)


def test_no_probe_is_sent_while_no_data_flows():
    rp, _ = make()
    assert rp.poll(0, active=False) == []
    assert rp.deadlines(0, active=False) == []
    assert len(rp.poll(0, active=True)) == 1        # the first period starts at once


def test_a_down_port_is_not_probed():
    up = {0: False, 1: True}
    rp, _ = make(up=up, reverse_evs_per_plane=1)
    sent = drive(rp, 0, 3 * RTT, lambda probe, t: 100)
    assert {ev_plane(p.ev) for _, p in sent} == {1}


def test_probe_timeout_follows_the_configuration_and_the_answered_probes():
    rp, _ = make()
    assert rp.probe_timeout_ns() == 4 * RTT
    rp2, _ = make(fabric_delay_bound_ns=5000)
    assert rp2.probe_timeout_ns() == RTT + 5000       # one bound: the answer is control class
    # answered probes: srtt/rttvar as RFC 6298 (first sample: srtt = R, rttvar = R/2;
    # then rttvar = 3/4 rttvar + 1/4 |srtt - R|, srtt = 7/8 srtt + 1/8 R)
    (probe, _), = rp.poll(0, True)
    rp.on_probe_response(answer(probe), 10_000)     # R = 10000: 10000 + 4 * 5000
    assert rp.probe_timeout_ns() == 30_000
    (probe, _), = rp.poll(10_000, True)
    rp.on_probe_response(answer(probe), 12_000)     # R = 2000: rttvar 5750, srtt 9000
    assert rp.probe_timeout_ns() == 9000 + 4 * 5750


def test_a_timeout_counts_against_its_ev_only_once_a_later_probe_is_answered():
    """Plane 0's path is dead, plane 1's answers in 100 ns. Probes alternate A (plane 0) and B
    (plane 1) every RTT. A's probe of t=0 times out at 4000 and is judged when B's probe of
    5000 is answered (5100); A's probe of 2000 times out at 6000, judged at 7100: the second
    failure retires A (reverse_probe_fail_limit = 2)."""
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_fail_limit=2)
    a, b = rp.evs[0][0].ev, rp.evs[1][0].ev
    drive(rp, 0, 5100, lambda probe, t: None if ev_plane(probe.ev) == 0 else 100)
    assert probe_failures(events) == []             # timed out, but nothing answered since
    assert rp.evs[0][0].fails == 0
    drive(rp, 5100, 7100, lambda probe, t: None if ev_plane(probe.ev) == 0 else 100)
    fails = probe_failures(events, a)
    assert [e["t_ns"] for e in fails] == [5100]
    assert rp.evs[0][0].fails == 1 and rp.retired == {}
    drive(rp, 7100, 7200, lambda probe, t: None)
    assert [e["t_ns"] for e in probe_failures(events, a)] == [5100, 7100]
    retired = state_changes(events, "ASSUMED_BAD")
    assert [(e["t_ns"], e["ev"], e["old"], e["reason"], e["plane"], e["qp"], e["direction"])
            for e in retired] == [(7100, a, "GOOD", "reverse_probe_timeout", 0, 0x33, "reverse")]
    assert rp.evs[0] == [] and list(rp.retired) == [a]
    assert rp.retired[a].next_probe_ns == 7100 + 5 * RTT
    assert probe_failures(events, b) == []
    assert rp.reply_path(0) == (1, b)               # plane 0 now borrows plane 1


def test_one_failed_probe_under_the_limit_does_not_retire():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_fail_limit=3)
    drive(rp, 0, 7200, lambda probe, t: None if ev_plane(probe.ev) == 0 else 100)
    assert rp.evs[0][0].fails == 2 and rp.retired == {}
    assert state_changes(events, "ASSUMED_BAD") == []


def test_an_answer_clears_the_failures_of_an_in_use_ev():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, reverse_probe_fail_limit=2)
    rp.evs[0][0].fails = 1
    drive(rp, 0, 500, lambda probe, t: 100)
    assert rp.evs[0][0].fails == 0


def test_congested_arrivals_excuse_probe_timeouts_for_the_grace_period():
    """The same dead plane 0, but data arrived trimmed at 3500: timeouts before 3500 + 8000 =
    11500 are excused (A's probes of 0, 2000, 4000 and 6000 time out at 4000 ... 10000). A's
    probes of 8000 and 10000 time out at 12000 and 14000, judged at 13100 and 15100."""
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_fail_limit=2)
    a = rp.evs[0][0].ev
    drop_plane0 = lambda probe, t: None if ev_plane(probe.ev) == 0 else 100  # noqa: E731
    drive(rp, 0, 3500, drop_plane0)
    rp.note_congestion(3500)
    drive(rp, 3500, 16000, drop_plane0)
    excused = probe_failures(events, a, congested=True)
    assert [e["t_ns"] for e in excused] == [4000, 6000, 8000, 10000]
    counted = [e for e in probe_failures(events, a) if "congested" not in e]
    assert [e["t_ns"] for e in counted] == [13100, 15100]
    assert [e["t_ns"] for e in state_changes(events, "ASSUMED_BAD")] == [15100]


def test_a_congestion_excuse_also_holds_when_a_timed_out_probe_is_judged():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_fail_limit=1)
    a = rp.evs[0][0].ev
    drop_plane0 = lambda probe, t: None if ev_plane(probe.ev) == 0 else 100  # noqa: E731
    drive(rp, 0, 4100, drop_plane0)                 # A's probe of 0 timed out at 4000
    rp.note_congestion(4100)                        # excused until 12100
    drive(rp, 4100, 5200, drop_plane0)              # judged at 5100, inside the grace period
    assert [e["t_ns"] for e in probe_failures(events, a, congested=True)] == [5100]
    assert rp.retired == {} and rp.evs[0][0].fails == 0


def test_a_late_answer_judges_only_the_timeouts_of_probes_sent_before_it():
    """Plane 0 is dead and plane 1's answers take 4700 ns, longer than the 4000 ns timeout;
    probes every 500 ns: A (plane 0) at 0, B (plane 1) at 500, A at 1000, ... B's probe of 500
    is answered late at 5200, when A's probes of 0 and 1000 have timed out (4000, 5000): only
    the one sent before 500 counts as a failure."""
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_rtts=0.5,
                      reverse_probe_fail_limit=2)
    a = rp.evs[0][0].ev
    drive(rp, 0, 5300, lambda probe, t: None if ev_plane(probe.ev) == 0 else 4700)
    assert [e["t_ns"] for e in probe_failures(events, a)] == [5200]
    assert rp.evs[0][0].fails == 1 and rp.retired == {}


def test_a_late_answer_shows_the_path_working():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, reverse_probe_fail_limit=2)
    a = rp.evs[0][0].ev
    rp.evs[0][0].fails = 1
    (probe, _), = rp.poll(0, True)
    assert probe.ev == a
    rp.poll(4000, False)                            # timed out (not judged yet)
    rp.on_probe_response(answer(probe), 4500)       # ... then answered: the path works
    assert rp.evs[0][0].fails == 0
    assert probe_failures(events) == []
    rp.on_probe_response(answer(probe), 4600)       # a duplicate answer changes nothing
    assert rp.evs[0][0].fails == 0 and rp.retired == {}


def test_an_answer_with_the_wrong_ev_is_ignored():
    rp, _ = make(planes=(0,), reverse_evs_per_plane=1)
    (probe, _), = rp.poll(0, True)
    wrong = Probe(ev=probe.ev ^ 1, seq=probe.seq, timestamp=0, response=True)
    rp.evs[0][0].fails = 1
    rp.on_probe_response(wrong, 100)
    assert rp.probe_timeout_ns() == 4 * RTT         # no RTT sample taken
    assert rp.evs[0][0].fails == 1                  # and the path is not shown working


def test_a_short_plane_adopts_a_candidate_once_its_probe_is_answered():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1)
    old = rp.evs[0][0].ev
    rp.evs[0].clear()
    rp._replaces[0].append(old)                     # as after a retirement
    probes = rp.poll(0, True)
    # the in-use probe (plane 1, the only EV in use) first, then plane 0's candidate
    assert [ev_plane(p.ev) for p, _ in probes] == [1, 0]
    candidate = probes[1][0]
    assert candidate.ev != old
    assert rp.evs[0] == []                          # not used before it is answered
    assert [ev_plane(p.ev) for p, _ in rp.poll(RTT, True)] == [1]   # one candidate at a time
    rp.on_probe_response(answer(candidate), RTT + 50)
    assert [r.ev for r in rp.evs[0]] == [candidate.ev]
    adopted = state_changes(events, "GOOD")
    assert [(e["t_ns"], e["ev"], e["old"], e["reason"], e["verified"], e["replaces"],
             e["plane"], e["direction"]) for e in adopted] == \
        [(RTT + 50, candidate.ev, "UNKNOWN", "replacement", True, old, 0, "reverse")]
    assert rp._replaces[0] == []
    assert [ev_plane(p.ev) for p, _ in rp.poll(2 * RTT, True)] == [0]  # full: no candidate


def test_an_unanswered_candidate_is_dropped_and_another_drawn():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1)
    rp.evs[0].clear()
    sent = drive(rp, 0, 4 * RTT, lambda probe, t: None)
    assert [t for t, _ in sent] == [0]              # the candidate holds the plane's turn
    assert probe_failures(events) == []
    more = drive(rp, 4 * RTT, 5 * RTT, lambda probe, t: None)
    dropped = probe_failures(events, candidate=True)
    assert [(e["t_ns"], e["ev"], e["direction"]) for e in dropped] == [(4000, sent[0][1].ev,
                                                                        "reverse")]
    assert rp.evs[0] == []
    assert [t for t, _ in more] == [4000]           # dropped at 4000, a fresh one drawn then
    assert more[0][1].seq == sent[0][1].seq + 1


def test_retired_evs_are_probed_with_a_doubling_period():
    """A retired EV probed at 0 fails at 4000 (the timeout); after its n-th failure it waits
    5000 * (2^n - 1) more (probe_backoff_max = 8 caps the factor): probes at 0, 9000, 28000,
    67000, 106000."""
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, probe_backoff_max=8)
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    sent = drive(rp, 0, 107_000, lambda probe, t: None if probe.ev == dead else 100)
    times = [t for t, p in sent if p.ev == dead]
    assert times == [0, 9000, 28000, 67000, 106000]
    fails = probe_failures(events, dead)
    assert [e["t_ns"] for e in fails] == [4000, 13000, 32000, 71000]
    assert all("candidate" not in e and "congested" not in e for e in fails)
    assert rp.retired[dead].failures == 4


def test_probe_k_answers_in_a_row_make_a_retired_ev_good():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, probe_k=3)
    in_use = rp.evs[0][0].ev
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    sent = drive(rp, 0, 10_200, lambda probe, t: 100)
    assert [t for t, p in sent if p.ev == dead] == [0, 5000, 10000]
    assert dead not in rp.retired
    good = [e for e in state_changes(events, "GOOD") if e["ev"] == dead]
    # the plane is full (its in-use EV works): GOOD again, but not put in use
    assert [(e["t_ns"], e["old"], e["reason"], "verified" in e) for e in good] == \
        [(10_100, "ASSUMED_BAD", "probe_ok", False)]
    assert [r.ev for r in rp.evs[0]] == [in_use]


def test_a_failure_restarts_the_count_of_answers():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, probe_k=2)
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0, successes=1)
    drive(rp, 0, 4100, lambda probe, t: None if probe.ev == dead else 100)
    assert rp.retired[dead].successes == 0 and rp.retired[dead].failures == 1


def test_a_retired_ev_back_to_good_refills_its_short_plane_in_its_own_place():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, probe_k=2)
    dead = rp.evs[0][0].ev
    rp.evs[0].clear()
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    rp._replaces[0].append(dead)
    # only the retired EV answers: the candidates drawn meanwhile fail
    drive(rp, 0, 5200, lambda probe, t: 100 if probe.ev == dead else None)
    assert [r.ev for r in rp.evs[0]] == [dead]
    good = [e for e in state_changes(events, "GOOD") if e["ev"] == dead]
    assert [(e["t_ns"], e["old"], e["reason"], e["verified"], "replaces" in e)
            for e in good] == [(5100, "ASSUMED_BAD", "probe_ok", True, False)]
    assert rp._replaces[0] == []


def test_retired_evs_of_a_down_plane_are_not_probed():
    up = {0: False, 1: True}
    rp, _ = make(up=up, reverse_evs_per_plane=1)
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    alive = make_ev(1, 1, 0xC0DF)                   # retired, but its plane's port is up
    rp.retired[alive] = _RetiredEV(alive, next_probe_ns=0)
    sent = drive(rp, 0, 2000, lambda probe, t: None)
    assert dead not in [p.ev for _, p in sent]
    assert [t for t, p in sent if p.ev == alive] == [0]
    assert rp.retired[dead].next_probe_ns == 0
    assert all(d >= 0 for d in rp.deadlines(2000, True))
    assert 0 not in rp.deadlines(2000, True)


def test_deadlines_name_the_next_timeout_probe_and_retired_probe():
    rp, _ = make(planes=(0,), reverse_evs_per_plane=1)
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=30_000)
    rp.poll(0, True)                                # the in-use probe at 0
    assert sorted(rp.deadlines(500, True)) == [RTT, 4 * RTT, 30_000]
    assert rp.deadlines(500, False) == [4 * RTT]
    # a retired EV already being probed has no deadline of its own besides its timeout
    sent = rp.poll(30_000, True)
    assert [p.ev for p, _ in sent] == [rp.evs[0][0].ev, dead]   # the in-use EV's turn first
    assert 30_000 + 5 * RTT not in rp.deadlines(30_000, True)
    assert 30_000 + 4 * RTT in rp.deadlines(30_000, True)


def test_confirm_resets_an_in_use_ev_counts_a_retired_one_and_ignores_other_planes():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1, probe_k=3)
    rp.evs[0][0].fails = 1
    rp.confirm(rp.evs[0][0].ev, 10)
    assert rp.evs[0][0].fails == 0
    dead = make_ev(1, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    rp.confirm(dead, 20)
    assert rp.retired[dead].successes == 1
    before = (dict(rp.evs), len(events))
    rp.confirm(make_ev(5, 0, 0xC001), 30)           # not a plane of this QP
    assert (dict(rp.evs), len(events)) == before
    rp.confirm(make_ev(1, 2, 0xC002), 40)           # plane 1 is full: not adopted
    assert len(rp.evs[1]) == 1 and len(events) == before[1]


def test_the_denylist_reports_how_many_evs_it_denied_and_allowed():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=2)
    dead = make_ev(1, 3, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=10**9)
    plane0 = [r.ev for r in rp.evs[0]]
    (probe, _), = rp.poll(0, True)                  # a pending probe on plane 0 is forgotten
    assert ev_plane(probe.ev) == 0
    assert rp.apply_denylist(lambda ev: ev_plane(ev) == 0 or ev == dead, 100) == (3, 0)
    assert rp.denied == set(plane0) | {dead} and rp.evs[0] == [] and rp.retired == {}
    assert rp._replaces[0] == plane0
    assert rp.deadlines(100, False) == []
    denied = state_changes(events, "DENIED")
    assert sorted((e["ev"], e["old"]) for e in denied) == sorted(
        [(plane0[0], "GOOD"), (plane0[1], "GOOD"), (dead, "ASSUMED_BAD")])
    assert rp.apply_denylist(lambda ev: False, 200) == (0, 3)
    assert rp.denied == set()
    assert {ev: r.next_probe_ns for ev, r in rp.retired.items()} == {
        ev: 200 for ev in plane0 + [dead]}
    allowed = [e for e in state_changes(events, "ASSUMED_BAD") if e["reason"] == "allowed"]
    assert len(allowed) == 3 and all(e["old"] == "DENIED" for e in allowed)


def test_confirmations_log_their_time():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, probe_k=2)
    in_use = rp.evs[0][0].ev
    rp.evs[0].clear()
    rp.confirm(in_use ^ 1, 50)                      # adopted from a data SACK
    dead = make_ev(0, 1, 0xC0DE)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)
    rp.confirm(dead, 60)
    rp.confirm(dead, 70)                            # probe_k = 2 answers: GOOD again
    assert [(e["ev"], e["t_ns"]) for e in state_changes(events, "GOOD")] == [(in_use ^ 1, 50),
                                                                            (dead, 70)]


def test_a_denied_candidate_is_forgotten_and_another_drawn():
    rp, events = make(planes=(0, 1), reverse_evs_per_plane=1)
    rp.evs[0].clear()
    probes = rp.poll(0, True)
    health, candidate = probes[0][0], probes[1][0]
    assert ev_plane(health.ev) == 1 and ev_plane(candidate.ev) == 0
    assert rp.apply_denylist(lambda ev: ev == candidate.ev, 100) == (0, 0)
    # the candidate's probe is gone (no timeout to wait for); plane 1's health probe stays
    assert rp.deadlines(100, False) == [4 * RTT]
    again = rp.poll(RTT, True)
    fresh = [p for p, _ in again if ev_plane(p.ev) == 0]
    assert len(fresh) == 1 and fresh[0].ev != candidate.ev
    rp.on_probe_response(answer(candidate), RTT + 10)   # a late answer adopts nothing
    assert rp.evs[0] == []


def test_the_events_carry_every_field_the_log_readers_use():
    """Exact event records: analysis reads t_ns, event, qp, ev, plane, old, new, reason."""
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, reverse_probe_fail_limit=1,
                      probe_k=1)
    a = rp.evs[0][0].ev
    rp._result(a, False, 10)                        # the limit of 1: retired at once
    assert events == [
        {"t_ns": 10, "event": Event.PROBE, "qp": 0x33, "ev": a, "ok": False, "rtt_ns": None,
         "direction": "reverse"},
        {"t_ns": 10, "event": Event.EV_STATE, "qp": 0x33, "ev": a, "plane": 0, "old": "GOOD",
         "new": "ASSUMED_BAD", "reason": "reverse_probe_timeout", "direction": "reverse"}]
    events.clear()
    rp._retired_result(a, False, 20)
    assert events == [{"t_ns": 20, "event": Event.PROBE, "qp": 0x33, "ev": a, "ok": False,
                       "rtt_ns": None, "direction": "reverse"}]
    other = make_ev(0, 1, 0xC0DE)
    rp.evs[0].append(_ReverseEV(other))
    events.clear()
    rp._retired_result(a, True, 30)                 # probe_k = 1, the plane is full again
    assert events == [{"t_ns": 30, "event": Event.EV_STATE, "qp": 0x33, "ev": a, "plane": 0,
                       "old": "ASSUMED_BAD", "new": "GOOD", "reason": "probe_ok",
                       "direction": "reverse"}]
    events.clear()
    rp.apply_denylist(lambda ev: ev == other, 40)
    assert events == [{"t_ns": 40, "event": Event.EV_STATE, "qp": 0x33, "ev": other,
                       "plane": 0, "old": "GOOD", "new": "DENIED", "reason": "denied",
                       "direction": "reverse"}]


def test_periods_shorter_than_a_nanosecond_round_up_to_one():
    rp, _ = make(planes=(0,), reverse_evs_per_plane=1)
    rp.cfg = MRCConfig(base_rtt_ns=1, reverse_probe_rtts=0.5, reverse_evs_per_plane=1)
    sent = drive(rp, 0, 4, lambda probe, t: 0, step=1)
    assert [t for t, _ in sent] == [0, 1, 2, 3]


def test_a_plane_missing_from_the_port_map_counts_as_down():
    up = {1: True}                                  # nothing known about plane 0's port
    rp, _ = make(planes=(0, 1), up=up, reverse_evs_per_plane=1)
    assert rp.reply_path(0) == (1, rp.evs[1][0].ev)


def test_congestion_excuses_end_exactly_at_the_grace_period():
    rp, events = make(planes=(0,), reverse_evs_per_plane=1)
    rp.note_congestion(-4 * RTT)                    # excused until -4000 + 8000 = 4000
    rp.poll(0, True)                                # a probe at 0, timing out at 4000
    rp.poll(4 * RTT, False)
    assert probe_failures(events, congested=True) == []
    rp2, events2 = make(planes=(0,), reverse_evs_per_plane=1)
    rp2.note_congestion(-4 * RTT + 1)               # until 4001: this timeout is excused
    rp2.poll(0, True)
    rp2.poll(4 * RTT, False)
    assert len(probe_failures(events2, congested=True)) == 1


def test_a_failure_counts_against_the_second_ev_of_a_plane_too():
    rp, events = make(planes=(0,), reverse_evs_per_plane=2, reverse_probe_fail_limit=2)
    second = rp.evs[0][1].ev
    rp._result(second, False, 10)
    assert [r.fails for r in rp.evs[0]] == [0, 1]
    assert [e["ev"] for e in probe_failures(events)] == [second]


def test_a_long_outage_keeps_only_the_last_64_timed_out_probes():
    """Every probe lost, one per RTT, polled until 69000: probes of 0 .. 65000 time out (66
    of them, seq 1..66), the last 64 (seq 3..66) are remembered. A late answer to seq 1 is
    forgotten; one to seq 66 (sent at 65000) shows the path working and judges the 63
    remembered ones sent before it."""
    rp, events = make(planes=(0,), reverse_evs_per_plane=1, reverse_probe_fail_limit=1000)
    a = rp.evs[0][0].ev
    sent = drive(rp, 0, 70 * RTT, lambda probe, t: None, step=RTT)
    by_seq = {p.seq: p for _, p in sent}
    assert len(by_seq) == 70
    rp.on_probe_response(answer(by_seq[1]), 70 * RTT)
    assert probe_failures(events) == [] and rp.evs[0][0].fails == 0
    rp.on_probe_response(answer(by_seq[66]), 70 * RTT)
    assert len(probe_failures(events, a)) == 63 and rp.evs[0][0].fails == 63


def test_a_candidate_answered_with_the_wrong_ev_still_times_out_and_is_replaced():
    """An answer whose EV is not the probe's (a malformed or foreign packet: the peer reflects
    the EV) must not consume the pending probe: the candidate is neither adopted nor left
    holding the plane's turn, but fails at its timeout (4 RTTs) and a fresh one is drawn then,
    as if no answer had come."""
    rp, events = make(planes=(0,), reverse_evs_per_plane=1)
    rp.evs[0].clear()
    (candidate, _), = rp.poll(0, True)
    rp.on_probe_response(Probe(ev=candidate.ev ^ 1, seq=candidate.seq, timestamp=0,
                               response=True), 100)
    assert rp.evs[0] == []                          # not adopted
    more = drive(rp, 100, 5 * RTT, lambda probe, t: None)
    dropped = probe_failures(events, candidate=True)
    assert [(e["t_ns"], e["ev"]) for e in dropped] == [(4000, candidate.ev)]
    assert [t for t, _ in more] == [4000]
    assert more[0][1].seq == candidate.seq + 1
