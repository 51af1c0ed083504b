"""The endpoint's control socket (traffic/nic/control.py) end to end: two endpoints joined by
in-memory wires, each serving its unix socket from its own loop; a client registers memory,
creates QPs, posts a WRITE and waits for it; bad requests get a clear error, not a dead loop."""
import hashlib
import json
import random
import socket
import threading

import pytest

from tests.helpers.endpoint_fakes import endpoints
from traffic.nic.control import MAX_LINE, ControlClient, ControlError, ControlServer


@pytest.fixture
def pair(tmp_path):
    a, b, _, _ = endpoints(tmp_path)
    servers = [ControlServer(a, str(tmp_path / "a.sock")), ControlServer(b, str(tmp_path / "b.sock"))]
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            a.run_once(0.0005)
            b.run_once(0.0005)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    clients = [ControlClient(s.path, timeout_s=30) for s in servers]
    yield clients, servers
    for c in clients:
        c.close()
    stop.set()
    thread.join(5)
    for s in servers:
        s.close()


def test_a_write_posted_over_the_socket_arrives_and_digests_match(pair):
    (ca, cb), _ = pair
    mr = cb.call("reg_mr", size=50_000, rkey=0x42, va=0x10000)
    assert (mr["rkey"], mr["va"], mr["size"]) == (0x42, 0x10000, 50_000)
    ca.call("create_qp", qpn=0x100, peer=2, peer_qpn=0x200, base_rtt_ns=1_000_000)
    cb.call("create_qp", qpn=0x200, peer=0, peer_qpn=0x100, base_rtt_ns=1_000_000)
    payload = random.Random(9).randbytes(30_000)              # what seed 9 promises, per the API
    posted = ca.call("post_write", qpn=0x100, size=30_000, seed=9, remote_va=0x10000 + 100,
                     rkey=0x42, imm=5)
    assert posted["sha256"] == hashlib.sha256(payload).hexdigest()
    done = cb.call("wait", qpn=0x200, side="recv", count=1, timeout_s=20)
    assert done["completions"] == [{"msn": posted["msn"], "bytes": 30_000, "imm": 5,
                                    "status": "success"}]
    ca.call("wait", qpn=0x100, side="send", count=1, timeout_s=20)
    got = cb.call("digest", rkey=0x42, offset=100, size=30_000)
    assert got["sha256"] == hashlib.sha256(payload).hexdigest()
    assert cb.call("digest", rkey=0x42, offset=0, size=100)["sha256"] == \
        hashlib.sha256(bytes(100)).hexdigest()                 # untouched bytes stay zero
    status = cb.call("status")
    assert status["host"] == 2 and "512" in status["qps"]      # 0x200
    # a consumed completion is gone: the next wait for one more times out
    with pytest.raises(ControlError, match=r"wait timed out \(0 of 1 completions\)"):
        cb.call("wait", qpn=0x200, side="recv", count=1, timeout_s=0.2)


@pytest.mark.parametrize("request_, message", [
    ({"op": "fly"}, "unknown op 'fly'"),
    ({"op": "reg_mr"}, "missing key 'size'"),
    ({"op": "reg_mr", "size": 0, "rkey": 1}, r"size must be an integer in 1\.\."),
    ({"op": "reg_mr", "size": True, "rkey": 1}, "size must be an integer"),
    ({"op": "reg_mr", "size": "8", "rkey": 1}, "size must be an integer"),
    ({"op": "wait", "qpn": 7, "side": "recv", "count": 1}, "no QP 0x7"),
    ({"op": "digest", "rkey": 0x99}, "no memory region with rkey 0x99"),
])
def test_bad_requests_get_a_clear_error(pair, request_, message):
    (ca, _), _ = pair
    request_ = dict(request_)              # the parameter is shared by every run in this process
    op = request_.pop("op")
    with pytest.raises(ControlError, match=message):
        ca.call(op, **request_)
    assert ca.call("status")["ok"]                             # the endpoint still answers


def test_wait_and_digest_arguments_are_checked(pair):
    (ca, cb), _ = pair
    cb.call("reg_mr", size=64, rkey=3, va=0x2000)
    with pytest.raises(ControlError, match=r"outside the region \(64 bytes\)"):
        cb.call("digest", rkey=3, offset=60, size=5)
    assert cb.call("digest", rkey=3, offset=60, size=4)["ok"]   # ends exactly at the end
    ca.call("create_qp", qpn=0x10, peer=2, peer_qpn=0x20, base_rtt_ns=1_000_000)
    with pytest.raises(ControlError, match="side must be"):
        ca.call("wait", qpn=0x10, side="both", count=1)
    for timeout in (0, -1, True, "5"):
        with pytest.raises(ControlError, match="timeout_s must be a positive number"):
            ca.call("wait", qpn=0x10, side="send", count=1, timeout_s=timeout)


def test_malformed_lines_are_answered_and_overlong_ones_drop_the_client(pair):
    _, servers = pair
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.settimeout(10)
    raw.connect(servers[0].path)
    reader = raw.makefile("rb")
    raw.sendall(b"not json\n[1, 2]\n")
    first, second = json.loads(reader.readline()), json.loads(reader.readline())
    assert first["ok"] is False and first["error"]
    assert second == {"ok": False, "error": "request must be a JSON object"}
    raw.sendall(b"x" * (MAX_LINE + 10))                        # no newline, longer than allowed
    assert json.loads(reader.readline()) == {"ok": False, "error": "request line too long"}
    assert reader.readline() == b""                            # and the server hung up
    raw.close()
