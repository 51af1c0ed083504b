"""Only the fabric's owner drives the fabric (docs/security.md), tried on a real fabric by an
unprivileged user that this test creates (useradd) and removes: every attack listed below is
refused and leaves the fabric as it was.

As the user: the API token cannot be read; POST /deny, /hosts, /endpoints and GET /denylist
without it are 401; a fake switch that says a real dpid, in plain TCP or in TLS with its own
certificate, is refused at the handshake. As root with the token: a namespace the user made
(holding h0-p0/h0-p1) and a socket outside the fabric's endpoint directory are refused.
Afterwards every switch is still connected, no link is down and no rule or port event exists.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import sys
import time

import pytest

from controller import api_auth
from controller.client import ControllerClient, ControllerError
from emulation.network import control_secrets, fabric_lock
from emulation.network.fabric import Fabric
from model.topology import FabricSpec

pytestmark = pytest.mark.integration

SPEC = FabricSpec(planes=2, groups=2, spines=1, hosts_per_group=1,
                  host_link_mbit=50, fabric_link_mbit=50)
USER_PYTHON = "/usr/bin/python3"      # the user cannot be assumed to read the project's venv

ATTACKS = r'''
import json, os, socket, ssl, struct, subprocess, sys, tempfile, urllib.request, urllib.error
api_port, of_port, dpid, token_path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out = {}
try:
    open(token_path).read()
    out["token"] = "read"
except OSError as e:
    out["token"] = type(e).__name__

def post(path, body, ctype="application/json", method="POST"):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{api_port}{path}", data=data,
                                 method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code

out["deny_plane0"] = post("/deny", {"plane": 0})
out["deny_plane1_form"] = post("/deny", {"plane": 1}, "application/x-www-form-urlencoded")
out["hosts"] = post("/hosts", {"h0": os.getpid()})
out["endpoints"] = post("/endpoints", {"h1": "/root/root-only.sock"})
out["denylist"] = post("/denylist", None, method="GET")

def header(type_, length, xid=7):
    return struct.pack("!BBHI", 4, type_, length, xid)

hello = header(0, 8)
features = header(6, 32) + struct.pack("!QIBB2xII", dpid, 0, 254, 0, 0, 0)
port = struct.pack("!I4x6s2x16sIIIIIIII", 1, b"\0" * 6, b"fake", 0, 1, 0, 0, 0, 0, 0, 0)
port_down = header(12, 80) + struct.pack("!B7x", 2) + port

def plain_switch():
    s = socket.create_connection(("127.0.0.1", of_port), timeout=5)
    try:
        s.sendall(hello + features + port_down)
        try:
            got = s.recv(64)
        except (ConnectionResetError, socket.timeout) as e:
            return "refused: " + type(e).__name__
        return "openflow hello" if got[:2] == b"\x04\x00" else f"refused: {got[:8].hex() or 'closed'}"
    finally:
        s.close()

def tls_switch():
    d = tempfile.mkdtemp()
    key, cert = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=mrclab switch"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert, key)
    raw = socket.create_connection(("127.0.0.1", of_port), timeout=5)
    try:
        s = ctx.wrap_socket(raw)
        s.sendall(hello + features + port_down)
        got = s.recv(64)
        return "openflow hello" if got[:2] == b"\x04\x00" else f"refused: {got[:8].hex() or 'closed'}"
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError, socket.timeout) as e:
        return "refused: " + type(e).__name__
    finally:
        raw.close()

out["fake_switch_plain"] = plain_switch()
out["fake_switch_tls"] = tls_switch()
print(json.dumps(out))
'''

NAMESPACE = ("ip link add h0-p0 type veth peer name x0 && ip link add h0-p1 type veth peer name "
             "x1 && echo ready && exec sleep 60")


@pytest.fixture(scope="module")
def user():
    """An unprivileged user made for this test (and removed after it)."""
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.fail("useradd and setpriv are needed (passwd, util-linux)")
    name = f"mrclab{os.getpid() % 1_000_000}"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell",
                    "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(user, argv, **kw):
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
            "--reset-env", *argv]


@pytest.fixture(scope="module")
def fab():
    with Fabric(SPEC, routing="srv6") as f:
        yield f


def test_every_attack_of_an_unprivileged_user_is_refused(fab, user):
    dpid = fab.topo.switches["t0p0g0"].dpid
    done = subprocess.run(as_user(user, [USER_PYTHON, "-c", ATTACKS, str(fab.api_port),
                                         str(fab.of_port), str(dpid),
                                         api_auth.token_path(fab.api_port)]),
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["token"] == "PermissionError"
    assert {k: seen[k] for k in ("deny_plane0", "deny_plane1_form", "hosts", "endpoints",
                                 "denylist")} == {"deny_plane0": 401, "deny_plane1_form": 401,
                                                  "hosts": 401, "endpoints": 401,
                                                  "denylist": 401}
    assert seen["fake_switch_plain"].startswith("refused"), seen
    assert seen["fake_switch_tls"].startswith("refused"), seen
    time.sleep(0.5)
    client = fab.controller
    health = client.health()
    assert health["ready"] and health["switches_connected"] == len(fab.topo.switches)
    assert all(link["state"] == "up" for link in client.links())
    assert client.faults() == [] and client.denylist()["rules"] == []


def test_the_owner_cannot_be_made_to_use_a_foreign_namespace_or_socket(fab, user):
    proc = subprocess.Popen(as_user(user, ["unshare", "-rn", "sh", "-c", NAMESPACE]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        with pytest.raises(ControllerError, match=f"runs as uid {user.pw_uid}") as err:
            fab.controller.register_hosts({"h0": proc.pid})
        assert err.value.status == 400
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(ControllerError, match="inside the fabric's endpoint directory") as err:
        fab.controller.register_endpoints({"h1": "/root/root-only.sock"})
    assert err.value.status == 400
    # the fabric's own registration still holds: a host fault enters h0's real namespace
    reply = fab.controller.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0",
                                  "percent": 5, "direction": "a->b"})
    assert reply["ok"]
    fab.controller.fault({"action": "gray_loss_clear", "a": "h0", "b": "t0p0g0"})


def test_a_client_without_the_token_is_told_what_it_needs(fab, monkeypatch):
    monkeypatch.setenv(api_auth.TOKEN_ENV, "x" * 64)
    with pytest.raises(ControllerError) as err:
        ControllerClient(port=fab.api_port).health()
    assert err.value.status == 401 and "token" in err.value.detail


def test_the_cli_as_root_drives_the_fabric_with_the_token_file(fab, monkeypatch):
    """`mrclab link` and `mrclab deny` read the token of their --api-port's fabric (root)."""
    monkeypatch.delenv(api_auth.TOKEN_ENV, raising=False)
    port = str(fab.api_port)
    mrclab = [shutil.which("mrclab") or os.path.join(os.path.dirname(sys.executable), "mrclab")]
    down = subprocess.run(mrclab + ["link", "down", "t0p0g0", "t1p0s0", "--api-port", port],
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr
    assert [l["state"] for l in fab.controller.links()
            if {l["a"], l["b"]} == {"t0p0g0", "t1p0s0"}] == ["down"]
    up = subprocess.run(mrclab + ["link", "up", "t0p0g0", "t1p0s0", "--api-port", port],
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    shown = subprocess.run(mrclab + ["deny", "--show", "--api-port", port],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and json.loads(shown.stdout)["rules"] == []


def test_the_controllers_own_certificate_does_not_pass_as_a_switch(fab):
    """Both leaf certificates come from the fabric's CA; the controller takes only the switch
    role's. Accepted, the controller would greet the peer with an OpenFlow HELLO."""
    pki = control_secrets.OpenFlowPki.in_dir(control_secrets.PKI_DIR)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(pki.ca_cert)
    ctx.load_cert_chain(pki.controller_cert, pki.controller_key)
    greeted = b""
    with socket.create_connection(("127.0.0.1", fab.of_port), timeout=10) as raw:
        try:
            with ctx.wrap_socket(raw) as c:
                greeted = c.recv(8)
        except OSError:
            pass
    assert greeted == b"", greeted
    health = fab.controller.health()
    assert health["ready"] and health["switches_connected"] == len(fab.topo.switches)


def test_an_unprivileged_user_cannot_hold_the_fabric_lock(fab, user):
    """flock works on a read-only descriptor: the lock must not even be openable by others."""
    code = ("import fcntl, os\n"
            f"fd = os.open({fabric_lock.LOCK_FILE!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n")
    done = subprocess.run(as_user(user, [USER_PYTHON, "-c", code]), capture_output=True,
                          text=True, timeout=60, cwd="/")
    assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr
