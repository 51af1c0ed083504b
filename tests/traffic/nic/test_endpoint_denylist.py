"""The endpoint applies the control plane's denylist (Endpoint.set_denylist, the control socket's
"denylist" op) to its QPs: over in-memory wires with the real codec and loop, a denied path
carries no data and no probe until it is allowed, then is probed back and carries data again."""
import json
import random
import time

from model.events import Event
from model.topology import FabricSpec, Topology, ev_plane, ev_spine
from tests.helpers.endpoint_fakes import wire_pair
from traffic.core.codec import Codec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
from traffic.core.messages import DataPacket, Probe

SPEC = FabricSpec()
DENIED_LINK = "t0p0g0~t1p0s0"       # h0 -> h2 on plane 0 spine 0 crosses it


def endpoints(tmp_path):
    a_ports, b_ports = wire_pair(SPEC.planes)
    eps = []
    for host, ports in ((0, a_ports), (2, b_ports)):
        cfg = EndpointConfig.from_dict({
            "host": host, "fabric": SPEC.to_dict(), "event_log": str(tmp_path / f"h{host}.jsonl"),
            "port_rate_mbit": 400.0, "seed": host + 1,
            "qp": {"loss_verdict_ns": 0}})
        eps.append(Endpoint(cfg, ports=ports))
    return eps[0], eps[1], a_ports


def run_both(a, b, pred, timeout_s=20):
    end = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < end, "timed out"
        a.run_once(0.0005)
        b.run_once(0.0005)


def run_for(a, b, seconds):
    end = time.monotonic() + seconds
    run_both(a, b, lambda: time.monotonic() > end)


def test_a_denied_path_carries_no_data_and_no_probe_until_allowed(tmp_path):
    a, b, a_ports = endpoints(tmp_path)
    codec = Codec(Topology(SPEC))
    seen = []                       # (phase, kind, on the denied path) of every frame a sends
    phase = {"now": "lossy"}

    def record(frame):
        msg, meta = codec.decode(frame)
        on_path = ev_plane(meta.ev) == 0 and ev_spine(meta.ev) == 0
        kind = ("data" if isinstance(msg, DataPacket) else "answer" if isinstance(msg, Probe)
                and msg.response else "probe" if isinstance(msg, Probe) else "other")
        seen.append((phase["now"], kind, on_path))
        return phase["now"] == "lossy" and on_path        # the path loses everything at first

    for port in a_ports.values():
        port.drop = record
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
    b.create_qp(0x200, 0, 0x100, base_rtt_ns=1_000_000)
    dst = bytearray(200_000)
    b.register_mr(dst, rkey=0x42, va=0)

    def write(seed):
        data = random.Random(seed).randbytes(200_000)
        done = len(qa.send_completions) + 1
        a.post_write(0x100, data, 0, 0x42)
        run_both(a, b, lambda: len(qa.send_completions) >= done)
        assert bytes(dst) == data

    write(1)
    evs = qa.sender.evs
    on_path = [ev for ev in evs.evs if ev_plane(ev) == 0 and ev_spine(ev) == 0]
    assert any(evs.state(ev) == "ASSUMED_BAD" for ev in on_path)
    run_for(a, b, 0.2)
    assert ("lossy", "probe", True) in seen          # bad EVs of the path are being probed

    phase["now"] = "denied"
    reply = a.set_denylist([{"link": DENIED_LINK}])
    assert reply["rules"] == [{"link": DENIED_LINK}]
    assert reply["evs_denied"] == len(on_path)       # every EV of that QP on the path
    assert all(evs.state(ev) == "DENIED" for ev in on_path)
    write(2)
    run_for(a, b, 0.5)                               # > 10 probe periods of a bad EV
    denied_phase = [s for s in seen if s[0] == "denied"]
    assert any(k == "data" for _, k, _ in denied_phase)
    # a's own choices (data, its probes) avoid the path; answers to b's probes go back on the
    # path b chose (b's reverse EVs), which is b's denylist's business
    mine = [s for s in denied_phase if s[1] in ("data", "probe")]
    assert not any(p for _, _, p in mine), [s for s in mine if s[2]][:5]

    phase["now"] = "allowed"
    reply = a.set_denylist([])
    assert reply["newly_allowed"] == len(on_path) and reply["evs_denied"] == 0
    run_both(a, b, lambda: any(evs.state(ev) == "GOOD" and evs.evs[ev].in_rotation
                               for ev in on_path), timeout_s=10)
    write(3)
    allowed = [s for s in seen if s[0] == "allowed" and s[2]]
    assert {"probe", "data"} <= {k for _, k, _ in allowed}
    a.close()
    b.close()
    log = [json.loads(x) for x in (tmp_path / "h0.jsonl").read_text().splitlines()]
    lists = [e for e in log if e["event"] == Event.DENYLIST]
    assert [e["rules"] for e in lists] == [[{"link": DENIED_LINK}], []]
    assert {e["ev"] for e in log if e["event"] == Event.EV_STATE and e["new"] == "DENIED"
            and e.get("direction") != "reverse"} == set(on_path)


def test_a_bad_rule_changes_nothing(tmp_path):
    a, b, _ = endpoints(tmp_path)
    a.set_denylist([{"plane": 1}])
    import pytest
    from traffic.core.denylist import DenyRuleError
    with pytest.raises(DenyRuleError, match="no link between"):
        a.set_denylist([{"plane": 0}, {"link": "h0~t0p0g1"}])
    assert a.denylist.to_list() == [{"plane": 1}]
    a.close()
    b.close()


def test_a_qp_created_after_the_denial_starts_with_those_evs_denied(tmp_path):
    a, b, _ = endpoints(tmp_path)
    a.set_denylist([{"plane": 1}])
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
    evs = qa.sender.evs
    assert set(evs.denied()) == {ev for ev in evs.evs if ev_plane(ev) == 1}
    assert evs.denied() and all(ev_plane(ev) == 0 for ev in evs.rotation)
    a.close()
    b.close()
