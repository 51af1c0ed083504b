"""Endpoints over the real Mininet/OVS fabric (root): the issue-3 DONE test.

Two endpoint processes (h0 in group 0, h2 in group 1, srv6 mode) move a 16 MiB WRITE byte-exact
while a T0-T1 link on its paths goes down mid-transfer; the sender's event log must show the
EVs on that link turning ASSUMED_BAD and same-plane replacements.
"""
import json
import os
import sys
import time

import pytest

from model.topology import FabricSpec, ev_plane, ev_spine

pytestmark = pytest.mark.integration

PY = sys.executable
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_endpoint(fab, host, tmp_path, routing="srv6", extra=None):
    """Start an endpoint process in host `host` and return (process, connected ControlClient).
    `extra`: more EndpointConfig keys."""
    from traffic.control import ControlClient
    sock = str(tmp_path / f"ep-h{host}.sock")
    cfg = {"host": host, "fabric": fab.topo.spec.to_dict(), "routing": routing,
           "event_log": str(tmp_path / f"ep-h{host}.jsonl"), "control_socket": sock,
           "seed": 100 + host, **(extra or {})}
    path = tmp_path / f"ep-h{host}.json"
    path.write_text(json.dumps(cfg))
    err = open(tmp_path / f"ep-h{host}.stderr", "w")
    proc = fab.popen_in_host(host, [PY, "-m", "traffic.endpoint", "--config", str(path)],
                             cwd=REPO, stdout=err, stderr=err)
    # Poll the connection itself: the socket file exists from bind(), a moment before listen(),
    # and a starved endpoint may take seconds to get from one to the other.
    deadline = time.monotonic() + 20
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"endpoint h{host} exited: "
                                 f"{(tmp_path / f'ep-h{host}.stderr').read_text()}")
        try:
            return proc, ControlClient(sock, timeout_s=120)
        except (FileNotFoundError, ConnectionRefusedError):
            assert time.monotonic() < deadline, "endpoint control socket did not accept"
            time.sleep(0.05)


def stop_endpoint(proc, client):
    try:
        client.call("shutdown")
    except Exception:
        pass
    client.close()
    try:
        proc.wait(timeout=10)
    except Exception:
        proc.kill()
        proc.wait()


def read_events(path):
    return [json.loads(x) for x in open(path) if x.strip()]


def test_16mib_write_survives_t0_t1_link_down(tmp_path):
    from emulation.fabric import Fabric
    size = 16 << 20
    with Fabric(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2),
                routing="srv6") as fab:
        src, dst = 0, 2
        p_src, c_src = start_endpoint(fab, src, tmp_path)
        p_dst, c_dst = start_endpoint(fab, dst, tmp_path)
        try:
            c_dst.call("reg_mr", size=size, rkey=0x77, va=0)
            qa = c_src.call("create_qp", qpn=0x100, peer=dst, peer_qpn=0x200)
            c_dst.call("create_qp", qpn=0x200, peer=src, peer_qpn=0x100,
                       base_rtt_ns=qa["base_rtt_ns"])
            assert 0 < qa["base_rtt_ns"] < 50_000_000
            posted = c_src.call("post_write", qpn=0x100, size=size, seed=7, remote_va=0,
                                rkey=0x77, imm=0xABC)
            # let roughly a quarter of the transfer go, then cut plane 0's t0 g0 - t1 s0 link
            deadline = time.monotonic() + 60
            while True:
                rx = c_dst.call("status")["counters"]["rx_bytes"]
                if rx >= size // 4:
                    break
                assert time.monotonic() < deadline, f"transfer stalled at {rx} bytes"
                time.sleep(0.02)
            fault = fab.controller.fault({"action": "link_down", "a": "t0p0g0", "b": "t1p0s0"})
            assert fault["ok"]
            done = c_dst.call("wait", qpn=0x200, side="recv", count=1, timeout_s=90)
            assert done["completions"][0]["bytes"] == size
            assert done["completions"][0]["imm"] == 0xABC
            c_src.call("wait", qpn=0x100, side="send", count=1, timeout_s=30)
            digest = c_dst.call("digest", rkey=0x77, offset=0, size=size)["sha256"]
            assert digest == posted["sha256"]
        finally:
            stop_endpoint(p_src, c_src)
            stop_endpoint(p_dst, c_dst)
    events = read_events(tmp_path / "ep-h0.jsonl")
    t_fault = fault["t_ns"]
    bad = [e for e in events if e["event"] == "ev_state" and e["new"] == "ASSUMED_BAD"
           and e.get("direction") != "reverse" and e["t_ns"] >= t_fault]
    assert bad, "no EV turned ASSUMED_BAD after the link went down"
    on_link = [e for e in bad if ev_plane(e["ev"]) == 0 and ev_spine(e["ev"]) == 0]
    assert on_link, "the EVs on the downed link were not retired"
    replacements = [e for e in events if e["event"] == "ev_state" and e["old"] == "UNKNOWN"
                    and e["new"] == "GOOD" and e["t_ns"] >= t_fault
                    and e.get("direction") != "reverse"]
    assert replacements
    replaced = {r["replaces"] for r in replacements if "replaces" in r}
    same_plane = [e for e in on_link if e["ev"] in replaced]
    assert same_plane, "no retired EV of the downed link got a replacement"
    for e in same_plane:
        # the backup took the slot at the EV's first unexplained loss (ev_suspect), not when
        # the loss verdict retired it (ASSUMED_BAD, a verdict window later)
        r = next(r for r in replacements if r.get("replaces") == e["ev"])
        suspected = [x["t_ns"] for x in events if x["event"] == "ev_suspect"
                     and x["ev"] == e["ev"] and x["qp"] == e["qp"] and x["t_ns"] <= e["t_ns"]]
        assert suspected, f"EV {e['ev']:#x} was retired without being suspended first"
        assert r["plane"] == 0 and r["t_ns"] <= e["t_ns"], (r, e)
        assert any(t <= r["t_ns"] for t in suspected), (suspected, r, e)
    final = [e for e in events if e["event"] == "counters"][-1]
    assert final["retransmitted"] > 0
