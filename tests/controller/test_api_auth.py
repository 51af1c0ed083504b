"""The control plane is the fabric owner's alone: the real API server refuses requests without
the token (401) or not declared as JSON (415) and does nothing for them; the token file is
root-only and never written through a link; POST /endpoints takes only sockets inside the
fabric's endpoint directory; an endpoint that accepts and never answers costs one short timeout,
outside the lock. (As an unprivileged user against a real fabric: tests/integration/
test_control_plane_security.py.)"""
from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
import urllib.error
import urllib.request

import pytest

from controller import api_auth
from controller.client import ControllerClient, ControllerError
from controller.denylist import DenylistService, inside_dir
from controller.service import FabricController
from model.topology import FabricSpec, Topology
from tests.helpers.api_token import TOKEN

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=1, hosts_per_group=2))


@pytest.fixture
def api(tmp_path, api_server):
    argvs = []
    ctl = FabricController(TOPO, "srv6", None, str(tmp_path / "faults.jsonl"),
                           run=lambda argv: argvs.append(argv) or "",
                           endpoint_dir=str(tmp_path / "endpoints"))
    return api_server(ctl).port, ctl, argvs


def _post(port, path, body: bytes, headers: dict):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


DENY_PLANE_0 = json.dumps({"plane": 0}).encode()


@pytest.mark.parametrize("auth", [None, "Bearer ", "Bearer wrong-token-0123456789abcdef",
                                  "Basic " + TOKEN, TOKEN, "Bearer " + TOKEN + "x"])
def test_a_request_without_the_token_is_401_and_does_nothing(api, auth):
    port, ctl, _ = api
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    status, reply = _post(port, "/deny", DENY_PLANE_0, headers)
    assert status == 401 and reply["ok"] is False and "token" in reply["error"]
    assert ctl.denylist_state()["rules"] == []
    with pytest.raises(ControllerError) as err:
        ControllerClient(port=port, token="not-the-token-0123456789").denylist()
    assert err.value.status == 401


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x"])
def test_a_post_not_declared_json_is_415_and_does_nothing(api, ctype):
    """What a web page can send cross-origin without a preflight (text/plain, form types) never
    reaches the backend, even with a body that is valid JSON."""
    port, ctl, _ = api
    headers = {"Authorization": "Bearer " + TOKEN}
    if ctype is not None:
        headers["Content-Type"] = ctype
    status, reply = _post(port, "/deny", DENY_PLANE_0, headers)
    assert status == 415 and "application/json" in reply["error"]
    assert ctl.denylist_state()["rules"] == []


def test_the_token_and_json_together_are_served(api):
    port, ctl, _ = api
    status, reply = _post(port, "/deny", DENY_PLANE_0,
                          {"Authorization": "Bearer " + TOKEN,
                           "Content-Type": "application/json; charset=utf-8"})
    assert status == 200 and ctl.denylist_state()["rules"] == [{"plane": 0}]


def test_the_token_file_is_private_and_never_written_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "api-token-1"
    path.symlink_to(victim)
    token = api_auth.write_new_token(str(path))
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert victim.read_text() == "keep me" and path.read_text() == token and len(token) == 64
    assert api_auth.read_token(str(path)) == token
    assert api_auth.write_new_token(str(path)) != token      # a new fabric, a new secret


def test_a_client_without_the_token_says_what_it_needs(tmp_path, monkeypatch):
    monkeypatch.delenv(api_auth.TOKEN_ENV, raising=False)
    monkeypatch.setattr(api_auth, "RUN_DIR", str(tmp_path))
    monkeypatch.setattr(api_auth, "token_path",
                        lambda port, run_dir=None: str(tmp_path / f"api-token-{port}"))
    with pytest.raises(ControllerError,
                       match=r"no API token at .*\(a fabric writes it when it starts\)"):
        ControllerClient(port=1).health()


@pytest.mark.parametrize("path", ["/etc/passwd", "{d}-other/h0.sock", "{d}/../x.sock",
                                  "{d}/sub/../../x.sock", "{d}", "{d}/lnk/h0.sock",
                                  "relative.sock", 5])
def test_endpoints_outside_the_fabric_directory_are_refused(api, tmp_path, path):
    """A socket the caller chose (a root-only one, or one behind a link out of the fabric's
    directory) would make root connect to it: refused, nothing registered."""
    port, ctl, _ = api
    d = tmp_path / "endpoints"
    d.mkdir()
    (d / "lnk").symlink_to("/tmp")
    if isinstance(path, str):
        path = path.format(d=d)
    with pytest.raises(ControllerError) as err:
        ControllerClient(port=port, token=TOKEN).register_endpoints({"h0": path})
    assert err.value.status == 400
    assert ctl.denylist_state()["endpoints"] == {}


def test_inside_dir_takes_the_fabric_sockets(tmp_path):
    d = tmp_path / "endpoints"
    (d / "run-abc").mkdir(parents=True)
    assert inside_dir(str(d / "run-abc" / "h0.sock"), str(d))
    assert not inside_dir(str(d), str(d))
    assert not inside_dir(str(tmp_path / "endpointsX" / "h0.sock"), str(d))


class SilentEndpoints:
    """Unix sockets that accept every connection and never answer (a hung endpoint)."""

    def __init__(self, d, hosts):
        self.paths, self.socks, self.conns = {}, [], []
        self.stop = threading.Event()
        for host in hosts:
            path = str(d / f"{host}.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.listen(16)
            s.settimeout(0.1)
            self.socks.append(s)
            self.paths[host] = path
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop.is_set():
            for s in self.socks:
                try:
                    self.conns.append(s.accept()[0])
                except (TimeoutError, OSError):
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(2)
        for s in self.socks + self.conns:
            s.close()


def test_hung_endpoints_cost_one_short_timeout_outside_the_lock(tmp_path):
    """Four endpoints that accept and never answer: a deny returns after about one push
    timeout (pushes run at once, not 4 x timeout one after another), and a GET /denylist sent
    meanwhile is answered at once (the push holds no lock it needs)."""
    timeout = 1.0
    d = tmp_path / "endpoints"
    d.mkdir()
    hosts = [h.name for h in TOPO.hosts]
    assert len(hosts) == 4
    silent = SilentEndpoints(d, hosts)
    svc = DenylistService(TOPO, push_timeout_s=timeout, socket_dir=str(d))
    try:
        svc.register(silent.paths)
        result = {}
        t0 = time.monotonic()
        worker = threading.Thread(target=lambda: result.update(svc.deny({"plane": 0})))
        worker.start()
        time.sleep(0.2)
        t_state = time.monotonic()
        state = svc.state()
        state_s = time.monotonic() - t_state
        worker.join(10)
        deny_s = time.monotonic() - t0
    finally:
        silent.close()
    assert state["rules"] == [{"plane": 0}] and state_s < 0.2
    assert timeout * 0.9 <= deny_s < 2 * timeout     # one timeout, not len(hosts) of them
    assert sorted(result["pushed"]) == hosts
    assert all(not r["ok"] and "timed out" in r["error"] for r in result["pushed"].values())
