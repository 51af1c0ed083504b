"""The controller API against hostile or broken clients, on the real HTTP server (localhost):
only the fabric's own host namespaces can be registered, and a body shorter than its
Content-Length (or a bad or huge one) is answered 400 within a bound instead of holding a
handler thread forever."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from controller.api import MAX_BODY
from controller.app import FabricController
from controller.client import ControllerClient, ControllerError
from model.topology import FabricSpec, Topology
from tests.helpers.api_token import TOKEN
from tests.helpers.controller import namespace_with

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=1, hosts_per_group=1))
REQUEST_TIMEOUT_S = 0.5


class Recorder:
    def __init__(self):
        self.argvs = []

    def __call__(self, argv):
        self.argvs.append(argv)
        return ""


@pytest.fixture
def api(tmp_path, api_server):
    run = Recorder()
    ctl = FabricController(TOPO, "ecmp", None, str(tmp_path / "faults.jsonl"), run=run)
    server = api_server(ctl, request_timeout_s=REQUEST_TIMEOUT_S)
    return ControllerClient(port=server.port, timeout_s=5, token=TOKEN), server.port, run


@pytest.fixture
def namespaces():
    procs = []

    def make(*interfaces):
        procs.append(namespace_with(*interfaces))
        return procs[-1].pid
    yield make
    for p in procs:
        p.kill()
        p.wait()


def test_own_namespace_is_refused(api):
    client, _, _ = api
    with pytest.raises(ControllerError, match="shares the controller's network namespace") as err:
        client.register_hosts({"h0": os.getpid()})
    assert err.value.status == 400


def test_namespace_without_the_hosts_ports_is_refused(api, namespaces):
    client, _, run = api
    bare = namespaces()
    with pytest.raises(ControllerError, match="no interface h0-p0, h0-p1") as err:
        client.register_hosts({"h0": bare})
    assert err.value.status == 400
    half = namespaces("h0-p0")                    # plane 1's port is missing
    with pytest.raises(ControllerError, match=r"no interface h0-p1 \("):
        client.register_hosts({"h0": half})
    h0 = namespaces("h0-p0", "h0-p1")
    with pytest.raises(ControllerError, match="not in h1's network namespace"):
        client.register_hosts({"h1": h0})          # right namespace, wrong host
    assert run.argvs == []
    with pytest.raises(ControllerError, match="POST /hosts"):   # nothing was registered
        client.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                      "direction": "a->b"})


def test_host_namespace_is_accepted_and_used(api, namespaces):
    client, _, run = api
    h0 = namespaces("h0-p0", "h0-p1")
    assert client.register_hosts({"h0": h0})["hosts"] == ["h0"]
    client.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                  "direction": "a->b"})
    nsenter, net, nft = run.argvs[-1][:3]
    assert (nsenter, nft) == ("nsenter", "nft") and net.startswith(f"--net=/proc/{os.getpid()}/fd/")
    held, real = os.stat(net.split("=", 1)[1]), os.stat(f"/proc/{h0}/ns/net")
    assert (held.st_dev, held.st_ino) == (real.st_dev, real.st_ino)


def test_faults_enter_the_registered_namespace_not_the_pid(api, namespaces):
    """The namespace is held open at registration: once the pid is gone (and could be reused by
    any process), a fault still enters the namespace that was checked, never the pid's."""
    client, _, run = api
    h0 = namespaces("h0-p0", "h0-p1")
    inode = os.stat(f"/proc/{h0}/ns/net").st_ino
    client.register_hosts({"h0": h0})
    os.kill(h0, 9)
    time.sleep(0.2)
    client.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                  "direction": "a->b"})
    net = run.argvs[-1][1]
    assert str(h0) not in net.split("/fd/")[0].replace(f"/proc/{os.getpid()}", "")
    assert os.stat(net.split("=", 1)[1]).st_ino == inode


def test_process_that_is_gone_is_refused(api):
    client, _, _ = api
    proc = subprocess.Popen(["true"])
    proc.wait()
    with pytest.raises(ControllerError, match=f"pid {proc.pid} of h0 is not a running process"):
        client.register_hosts({"h0": proc.pid})


def raw_request(port: int, head: bytes, body: bytes = b"", wait_s: float = 10.0):
    """Send head+body and keep the connection open; returns (status, JSON reply, seconds)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        t0 = time.monotonic()
        sock.sendall(head + b"\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        elapsed = time.monotonic() - t0
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1]), elapsed


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 1 << 30


def post_head(length: str | None) -> bytes:
    head = (b"POST /fault HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n")
    if length is not None:
        head += b"Content-Length: " + length.encode() + b"\r\n"
    return head


def test_short_body_is_answered_400_within_the_timeout(api):
    client, port, run = api
    status, reply, elapsed = raw_request(port, post_head("100"), b'{"action": "link')
    assert status == 400, reply
    assert "shorter than its Content-Length 100" in reply["error"]
    # answered once the read timed out, long before the client's own 10 s
    assert REQUEST_TIMEOUT_S * 0.9 <= elapsed < REQUEST_TIMEOUT_S + 3
    assert run.argvs == [] and client.health()["ok"]


@pytest.mark.parametrize("length, message", [
    ("abc", "bad Content-Length 'abc': not an integer"),
    ("-5", "bad Content-Length -5: negative"),
    (str(MAX_BODY + 1), f"request body too large ({MAX_BODY + 1} bytes; at most {MAX_BODY})"),
    (None, "no Content-Length header"),
])
def test_bad_content_length_is_400_at_once(api, length, message):
    _, port, run = api
    status, reply, elapsed = raw_request(port, post_head(length))
    assert status == 400 and message in reply["error"]
    assert elapsed < REQUEST_TIMEOUT_S       # refused from the header alone, no body wait
    assert run.argvs == []
