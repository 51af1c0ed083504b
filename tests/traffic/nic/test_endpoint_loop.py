"""Two endpoints joined by in-memory wires (no sockets): a WRITE-with-IMM crosses byte-exact
through the real codec, reliability and loop, also with loss on one path."""
import json
import random

import pytest

from model.events import Event
from model.topology import FabricSpec, ev_plane, ev_spine
from tests.helpers.endpoint_fakes import endpoints
from traffic.core.codec import Codec
from model.topology import Topology

pytestmark = pytest.mark.core

SPEC = FabricSpec()


def run_both(a, b, pred, timeout_s=20):
    import time
    end = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < end, "transfer did not finish"
        a.run_once(0.0005)
        b.run_once(0.0005)


def test_write_with_imm_crosses_byte_exact(tmp_path):
    a, b, _, _ = endpoints(tmp_path)
    import threading
    rtt = {}
    t = threading.Thread(target=lambda: rtt.setdefault("b", b.run_until(lambda: "a" in rtt, 3)))
    t.start()
    rtt["a"] = a.measure_base_rtt(2)
    t.join()
    assert 0 < rtt["a"] < 100_000_000
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=rtt["a"])
    qb = b.create_qp(0x200, 0, 0x100, base_rtt_ns=rtt["a"])
    dst = bytearray(300_000)
    mr = b.register_mr(dst, rkey=0x42, va=0x1000)
    data = random.Random(5).randbytes(250_000)
    a.post_write(0x100, data, 0x1000 + 1000, 0x42, imm=77)
    run_both(a, b, lambda: qb.recv_completions and qa.send_completions)
    assert bytes(dst[1000:251_000]) == data
    assert qb.recv_completions[0].imm == 77 and qb.recv_completions[0].bytes == 250_000
    a.close()
    b.close()
    lines = [json.loads(x) for x in (tmp_path / "h0.jsonl").read_text().splitlines()]
    names = {x["event"] for x in lines}
    assert {Event.GOODPUT, Event.COMPLETION, Event.COUNTERS, Event.QP} <= names
    final = [x for x in lines if x["event"] == Event.COUNTERS][0]
    assert final["sent"] > 250_000 // 1400 and final["dropped_malformed"] == 0


def test_write_survives_a_black_holed_path(tmp_path):
    """Every frame on plane 1 spine 0 is lost: those EVs turn ASSUMED_BAD with same-plane
    replacements and the data still arrives exactly."""
    a, b, a_ports, _ = endpoints(tmp_path)
    codec = Codec(Topology(SPEC))

    def dead_path(frame):
        _, meta = codec.decode(frame)
        return ev_plane(meta.ev) == 1 and ev_spine(meta.ev) == 0

    a_ports[1].drop = dead_path
    # A 10 ms base RTT: the endpoints run on the wall clock, and on a loaded machine a 1 ms RTT's
    # timers fire late enough to time out healthy paths too (this test is about the dead one).
    # The tolerant loss rule, the one for a machine that cannot keep up: a shared test machine
    # can delay a healthy path's packet past its SACK gap, which OCP's rule would judge.
    tolerant = {"loss_policy": "tolerant"}
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=10_000_000, qp_overrides=tolerant)
    qb = b.create_qp(0x200, 0, 0x100, base_rtt_ns=10_000_000, qp_overrides=tolerant)
    dst = bytearray(200_000)
    b.register_mr(dst, rkey=0x42, va=0)
    data = random.Random(6).randbytes(200_000)
    a.post_write(0x100, data, 0, 0x42, imm=1)
    run_both(a, b, lambda: qb.recv_completions and qa.send_completions)
    assert bytes(dst) == data
    # The dead path's EVs left the rotation at their first loss; they are retired once the
    # loss verdict window (MRCConfig.loss_verdict_ns) passes with nothing explaining it.
    import time
    verdict_end = time.monotonic() + qa.sender.cfg.loss_verdict_ns / 1e9 + 0.1
    run_both(a, b, lambda: time.monotonic() > verdict_end)
    a.close()
    b.close()
    lines = [json.loads(x) for x in (tmp_path / "h0.jsonl").read_text().splitlines()]
    suspects = [x for x in lines if x["event"] == Event.EV_SUSPECT]
    assert suspects and all(x["plane"] == 1 and ev_spine(x["ev"]) == 0 for x in suspects)
    bad = [x for x in lines if x["event"] == Event.EV_STATE and x["new"] == "ASSUMED_BAD"]
    assert bad and all(x["plane"] == 1 and ev_spine(x["ev"]) == 0 for x in bad)
    repl = [x for x in lines if x["event"] == Event.EV_STATE and x["old"] == "UNKNOWN"
            and x["new"] == "GOOD"]
    assert repl and all(x["plane"] == 1 for x in repl)
    assert any(x["event"] == Event.RETRANSMIT for x in lines)


def test_the_loop_logs_how_late_it_served_its_qps(tmp_path):
    """The endpoint's fidelity evidence: every QP deadline it serves is a timer lateness sample,
    and the cumulative histogram reaches the log (at close at the latest)."""
    a, b, _, _ = endpoints(tmp_path)
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
    qb = b.create_qp(0x200, 0, 0x100, base_rtt_ns=1_000_000)
    mr = b.register_mr(bytearray(100_000), rkey=0x42, va=0x1000)
    a.post_write(0x100, bytes(90_000), 0x1000, 0x42, imm=1)
    run_both(a, b, lambda: qb.recv_completions and qa.send_completions)
    served = a.timer_lateness.samples
    assert served > 0
    a.close()
    b.close()
    lines = [json.loads(x) for x in (tmp_path / "h0.jsonl").read_text().splitlines()]
    last = [x for x in lines if x["event"] == Event.LATENESS][-1]
    assert sum(c for _, c in last["timer"]) == served
    assert last["rx"] == []         # fake ports have no receive ring to time
