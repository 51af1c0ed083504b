"""The receiver's reverse EVs (traffic/core/reverse_paths.py) as the MRC paper describes them: probe a
randomly chosen EV and adopt it as a reverse EV once the probe is answered; retired reverse EVs
are probed back (with backoff) and return to GOOD after probe_k answers. Simulated network:
the path of one of the receiver's reverse EVs is black-holed during a transfer, then repaired."""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from tests.helpers.simnet import Harness, SimNet, blackhole_step
from traffic.core.qp_config import MRCConfig

pytestmark = pytest.mark.core

MS = 1_000_000


def reverse_events(h: Harness, **match) -> list[dict]:
    return [e for e in h.events_of(Event.EV_STATE, qp=h.receiver.qp_num, **match)
            if e.get("direction") == "reverse"]


def run_reverse_blackhole(seed: int, repair_after_ns: int | None, size: int = 8_000_000):
    net = SimNet(seed=seed, planes=2, spines=2)
    h = Harness(net, cfg=MRCConfig(ev_count=32, ev_backup_count=32), seed=seed)
    first = h.receiver.reverse[0][0].ev
    dead = (ev_plane(first), ev_spine(first))
    answered: list[tuple[int, int]] = []          # (time, ev) of probe answers the receiver got
    on_answer = h.receiver.on_probe_response

    def tapped(probe, now_ns):
        answered.append((now_ns, probe.ev))
        on_answer(probe, now_ns)
    h.receiver.on_probe_response = tapped
    fault_ns = h.clock.now_ns + 10 * MS
    h.transfer([size], until_ns=30_000 * MS,
               on_step=blackhole_step(net, dead, fault_ns, repair_after_ns))
    return h, dead, answered, fault_ns


def test_the_receiver_adopts_only_reverse_evs_whose_probe_was_answered():
    for seed in (1, 2, 3):
        h, dead, answered, fault_ns = run_reverse_blackhole(seed, repair_after_ns=None)
        retired = reverse_events(h, new="ASSUMED_BAD")
        assert retired and all((ev_plane(e["ev"]), ev_spine(e["ev"])) == dead
                               for e in retired), seed
        adopted = reverse_events(h, new="GOOD")
        assert adopted, seed                        # the retired slots were refilled
        for e in adopted:
            assert e.get("verified") is True
            assert any(t <= e["t_ns"] and ev == e["ev"] for t, ev in answered), (seed, e)
        # a black hole answers nothing, so no EV on it was adopted while it lasted
        assert not [e for e in adopted if (ev_plane(e["ev"]), ev_spine(e["ev"])) == dead]
        # and every reverse EV in use at the end is either an initial one or an answered one
        in_use = {r.ev for revs in h.receiver.reverse.values() for r in revs}
        assert in_use - {e["ev"] for e in adopted} <= initial_reverse_evs(h, seed)


def initial_reverse_evs(h: Harness, seed: int) -> set[int]:
    """The reverse EVs a fresh receiver with the same seed starts with."""
    fresh = Harness(SimNet(seed=seed, planes=2, spines=2), cfg=h.cfg, seed=seed)
    return {r.ev for revs in fresh.receiver.reverse.values() for r in revs}


def test_retired_reverse_evs_come_back_good_after_the_repair():
    h, dead, answered, fault_ns = run_reverse_blackhole(4, repair_after_ns=60 * MS,
                                                        size=12_000_000)
    repaired_ns = fault_ns + 60 * MS
    retired = {e["ev"]: e["t_ns"] for e in reverse_events(h, new="ASSUMED_BAD")}
    assert retired and all((ev_plane(ev), ev_spine(ev)) == dead for ev in retired)
    back = {e["ev"]: e["t_ns"] for e in reverse_events(h, old="ASSUMED_BAD", new="GOOD",
                                                       reason="probe_ok")}
    assert set(back) == set(retired)                # none stays ASSUMED_BAD to the end
    assert all(t > repaired_ns for t in back.values())
    assert not h.receiver.reverse_paths.retired
    k = h.cfg.probe_k
    for ev, t_back in back.items():
        # probe_k answers in a row, after the repair, brought it back
        answers = [t for t, a in answered if a == ev and t <= t_back]
        assert len(answers) >= k and all(t > repaired_ns for t in answers[-k:])


def test_retired_reverse_evs_are_probed_with_backoff_while_the_path_stays_dead():
    h, dead, answered, fault_ns = run_reverse_blackhole(5, repair_after_ns=None,
                                                        size=12_000_000)
    period = int(h.cfg.probe_period_rtts * h.cfg.base_rtt_ns)
    retired = reverse_events(h, new="ASSUMED_BAD")
    assert retired
    ev = retired[0]["ev"]
    fails = [e["t_ns"] for e in h.events_of(Event.PROBE, qp=h.receiver.qp_num, ev=ev, ok=False)
             if e["t_ns"] > retired[0]["t_ns"] and not e.get("candidate")]
    assert len(fails) >= 4
    gaps = [b - a for a, b in zip(fails, fails[1:])]
    # As the sender's probes: the n-th failed probe puts the next one (min(2^n, backoff max) - 1)
    # periods after the failure (5 ms period, max 8: 1, 3, 7, 7, ... periods), and that one
    # fails a probe timeout (4 base RTTs = 4 ms) after it is sent: 9, 19, 39, 39, ... ms.
    timeout = int(h.cfg.probe_timeout_rtts * h.cfg.base_rtt_ns)
    expected = [(min(2 ** n, h.cfg.probe_backoff_max) - 1) * period + timeout
                for n in range(1, len(gaps) + 1)]
    assert gaps == expected
    assert not [a for t, a in answered if a == ev and t > retired[0]["t_ns"]]


def test_a_sacked_data_ev_counts_as_an_answered_probe():
    """`confirm(ev)`: this host's own data on `ev` was SACKed by the peer. A plane short of
    reverse EVs adopts it; a retired EV counts it as one answer of the probe_k it needs."""
    import random
    from traffic.core.evs import PathInfo
    from traffic.core.reverse_paths import ReversePaths, _RetiredEV
    events: list[dict] = []
    cfg = MRCConfig(reverse_evs_per_plane=1, probe_k=2)
    rp = ReversePaths(0x22, cfg, PathInfo((0, 1), 2), random.Random(1), {0: True, 1: True},
                      events.append)
    old = rp.evs[0][0].ev
    del rp.evs[0][0]                                  # plane 0 retired its only reverse EV
    rp.retired[old] = _RetiredEV(old, next_probe_ns=0)
    sacked = old ^ 0x1                                # another EV of plane 0
    rp.confirm(sacked, 5)
    assert [r.ev for r in rp.evs[0]] == [sacked]
    assert events[-1]["new"] == "GOOD" and events[-1]["ev"] == sacked
    rp.confirm(old, 6)                                # 1 of probe_k = 2: still retired
    assert old in rp.retired
    rp.confirm(old, 7)
    assert old not in rp.retired
    assert (events[-1]["ev"], events[-1]["old"], events[-1]["new"]) == (old, "ASSUMED_BAD", "GOOD")
    assert [r.ev for r in rp.evs[0]] == [sacked]      # the plane is full: GOOD, not in use
