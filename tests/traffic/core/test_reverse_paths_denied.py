"""The control plane's denylist binds the receiver's reverse EVs (traffic/core/reverse_paths.py) as it
binds the sender's forward EVs: a DENIED path carries no SACK, NACK or probe of the receiver
(no candidate drawn on it, no retired EV probed on it) until it is allowed; then its EVs are
probed back before use. Simulated network, then the endpoint's wiring over in-memory wires."""
from model.topology import FabricSpec, ev_plane, ev_spine
from tests.helpers.simnet import Harness, SimNet
from traffic.core.messages import Probe
from traffic.core.qp_config import MRCConfig
from model.events import Event

MS = 1_000_000


def on_path(ev: int, path: tuple[int, int]) -> bool:
    return (ev_plane(ev), ev_spine(ev)) == path


def run_denied_reverse_path(seed: int, dead: bool, size: int = 12_000_000):
    """h.sender at A writes to h.receiver at B; the control plane denies the path of B's
    first reverse EV on both hosts 40 ms in and allows it at 120 ms. `dead`: that path also
    goes dead (both directions) from 10 ms to 80 ms, so before the denial B retires reverse
    EVs on it, probes them back and tries candidates on it; else the path stays healthy and
    carries B's SACKs until the denial. Returns the harness, the path, the time each phase
    took effect (the first simulation step at or after its schedule) and every message sent
    as (t_ns, dst, msg)."""
    net = SimNet(seed=seed, planes=2, spines=2)
    h = Harness(net, cfg=MRCConfig(ev_count=32, ev_backup_count=32), seed=seed)
    path = (ev_plane(h.receiver.reverse[0][0].ev), ev_spine(h.receiver.reverse[0][0].ev))
    sent: list[tuple[int, str, object]] = []
    net_send = net.send

    def tapped(now_ns, msg, plane, dst):
        sent.append((now_ns, dst, msg))
        net_send(now_ns, msg, plane, dst)
    net.send = tapped
    start = h.clock.now_ns
    schedule = {"deny": start + 40 * MS, "allow": start + 120 * MS}
    if dead:
        schedule.update(fault=start + 10 * MS, repair=start + 80 * MS)
    times: dict[str, int] = {}

    def denies(ev: int) -> bool:
        return on_path(ev, path)

    def on_step(now_ns):
        for phase, at in sorted(schedule.items(), key=lambda kv: kv[1]):
            if phase in times or now_ns < at:
                continue
            times[phase] = now_ns
            if phase in ("fault", "repair"):
                net.path(*path).blackhole = phase == "fault"
            else:
                rule = denies if phase == "deny" else (lambda ev: False)
                h.sender.evs.apply_denylist(rule, now_ns)
                h.receiver.reverse_paths.apply_denylist(rule, now_ns)
    expected, region = h.post([size])
    h.run_until_idle(until_ns=30_000 * MS, on_step=on_step)
    assert set(times) == set(schedule)
    assert h.sender.error is None and h.sender.idle
    assert bytes(region.buf) == expected
    return h, path, times, sent


def reverse_events(h: Harness, **match) -> list[dict]:
    return [e for e in h.events_of(Event.EV_STATE, qp=h.receiver.qp_num, **match)
            if e.get("direction") == "reverse"]


def test_a_denied_path_carries_nothing_from_the_receiver_until_it_is_allowed():
    for seed, dead in ((1, False), (2, False), (1, True), (3, True)):
        h, path, times, sent = run_denied_reverse_path(seed, dead)
        from_b = [(t, m) for t, dst, m in sent if dst == "A"]
        before = [m for t, m in from_b if times.get("fault", 0) <= t < times["deny"]
                  and on_path(h.net.path_ev_of(m), path)]
        # before the denial the receiver used the path: SACKs over a healthy one; probes of
        # retired EVs and candidates over a dead one. The denial has something to stop.
        if dead:
            assert any(isinstance(m, Probe) and not m.response for m in before), seed
        else:
            assert sum(not isinstance(m, Probe) for m in before) > 10, seed
        denied_phase = [m for t, m in from_b if times["deny"] <= t < times["allow"]]
        assert len(denied_phase) > 100, seed          # SACKs kept flowing on the other paths
        on_denied = [m for m in denied_phase if on_path(h.net.path_ev_of(m), path)]
        assert on_denied == [], (seed, dead, on_denied[:3])
        # the reverse EVs of the path, in use or retired, turned DENIED at the denial, and
        # no other EV did
        denied = reverse_events(h, new="DENIED")
        assert denied and all(on_path(e["ev"], path) and e["t_ns"] == times["deny"]
                              for e in denied), seed
        assert len({e["ev"] for e in denied}) == len(denied)
        # the plane kept its reverse EVs: candidates answered over its other spine
        adopted = [e for e in reverse_events(h, new="GOOD", verified=True)
                   if times["deny"] <= e["t_ns"] < times["allow"]]
        assert all(not on_path(e["ev"], path) for e in adopted), seed
        if not dead:
            in_use = [e for e in denied if e["old"] == "GOOD"]
            assert in_use and len(adopted) >= len(in_use), (seed, denied, adopted)


def test_an_allowed_reverse_ev_is_probed_back_before_use():
    h, path, times, sent = run_denied_reverse_path(4, dead=True)
    denied = {e["ev"] for e in reverse_events(h, new="DENIED")}
    allowed = reverse_events(h, old="DENIED")
    assert denied and {e["ev"] for e in allowed} == denied
    assert all(e["new"] == "ASSUMED_BAD" and e["t_ns"] == times["allow"] for e in allowed)
    back = {e["ev"]: e["t_ns"] for e in reverse_events(h, old="ASSUMED_BAD", new="GOOD")
            if e["ev"] in denied}
    assert set(back) == denied                        # the path was repaired: all came back
    for ev, t_back in back.items():
        # probe_k probes of B on that EV, sent after the allow and before it turned GOOD
        probes = [t for t, dst, m in sent if dst == "A" and isinstance(m, Probe)
                  and not m.response and m.ev == ev and times["allow"] <= t < t_back]
        assert len(probes) >= h.cfg.probe_k, (ev, probes)
    # none of them carried a SACK before its probes brought it back
    sacks = [(t, h.net.path_ev_of(m)) for t, dst, m in sent if dst == "A"
             and not isinstance(m, Probe) and t >= times["allow"]]
    assert not [(t, ev) for t, ev in sacks if ev in back and t < back[ev]]


def test_a_sacked_data_ev_that_is_denied_is_not_adopted():
    import random
    from traffic.core.evs import PathInfo
    from traffic.core.reverse_paths import ReversePaths
    events: list[dict] = []
    rp = ReversePaths(0x22, MRCConfig(reverse_evs_per_plane=1), PathInfo((0, 1), 2),
                      random.Random(1), {0: True, 1: True}, events.append)
    old = rp.evs[0][0].ev
    rp.apply_denylist(lambda ev: ev_plane(ev) == 0, 5)
    assert rp.evs[0] == [] and rp.denied == {old}
    rp.confirm(old ^ 0x1, 6)                          # another plane-0 EV, SACKed
    assert rp.evs[0] == []
    assert rp.reply_path(0)[0] == 1                   # plane 0's replies borrow plane 1
    # and no candidate can be drawn on plane 0: the plane-1 health probe and nothing else
    probes = rp.poll(7, active=True)
    assert [plane for _, plane in probes] == [1]


def test_the_endpoint_denies_its_receivers_reverse_evs(tmp_path):
    from tests.helpers.endpoint_fakes import wire_pair
    from traffic.nic.endpoint import Endpoint
    from traffic.nic.endpoint_support import EndpointConfig
    spec = FabricSpec()
    a_ports, _ = wire_pair(spec.planes)
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    a = Endpoint(cfg, ports=a_ports)
    try:
        early = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
        first = [r.ev for r in early.receiver.reverse_paths.evs[0]]
        a.set_denylist([{"plane": 0}])
        late = a.create_qp(0x101, 3, 0x201, base_rtt_ns=1_000_000)
        for qp in (early, late):
            rp = qp.receiver.reverse_paths
            assert rp.evs[0] == [] and len(rp.denied) == 2 and rp.evs[1]
        assert early.receiver.reverse_paths.denied == set(first)
        a.set_denylist([])
        rp = early.receiver.reverse_paths
        assert rp.denied == set() and set(rp.retired) == set(first)
    finally:
        a.close()
