"""The live view's state (emulation/run/live_state.py) from log records built by hand, the screen of
`mrclab top --once` on a transport directory, and the metrics endpoint scraped over loopback."""
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from emulation.run import live_state as L
from emulation.run import metrics_server, top
from model.events import Event
from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.api_token import TOKEN

EV_P1S0 = make_ev(1, 0, 0xC001)
EV_P0S1 = make_ev(0, 1, 0xC002)


def records():
    return [
        {"t_ns": 0, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0, "retransmits": 0},
        # 1,250,000 B in 1 s = 10 Mbit/s
        {"t_ns": 10**9, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 1_250_000,
         "retransmits": 7},
        {"t_ns": 1, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": EV_P1S0, "new": "GOOD"},
        {"t_ns": 2, "host": "h1", "event": Event.EV_STATE, "qp": 1, "ev": EV_P1S0, "new": "GOOD"},
        {"t_ns": 3, "host": "h0", "event": Event.EV_STATE, "qp": 2, "ev": EV_P0S1, "new": "GOOD"},
        {"t_ns": 4, "host": "h0", "event": Event.EV_SUSPECT, "qp": 1, "ev": EV_P1S0},
        {"t_ns": 5, "host": "h1", "event": Event.EV_STATE, "qp": 1, "ev": EV_P1S0,
         "new": "ASSUMED_BAD"},
        {"t_ns": 6, "host": "h0", "event": Event.EV_STATE, "qp": 2, "ev": EV_P0S1, "new": "DENIED"},
        {"t_ns": 7, "host": "h0", "event": Event.ITERATION, "iter": 4},
        {"t_ns": 7, "host": "h1", "event": Event.ITERATION, "iter": 2},
    ]


def fed() -> L.LiveState:
    s = L.LiveState("mrc")
    for r in records():
        s.feed(r)
    s.feed({"entry": 0, "t_ns": 5, "ok": True, "command": {"action": "link_down", "a": "h0",
                                                           "b": "t0p0g0"}}, "faults")
    s.feed({"verdict": "cpu_bound"}, "fidelity")
    return s


def test_counts_rates_and_states_by_hand():
    s = fed()
    assert s.rate_mbit == {"h0": pytest.approx(10.0)}
    assert s.retransmits == {"h0": 7}
    assert s.ev_counts() == {"p0s1": {"GOOD": 0, "SUSPECT": 0, "ASSUMED_BAD": 0, "DENIED": 1},
                             "p1s0": {"GOOD": 0, "SUSPECT": 1, "ASSUMED_BAD": 1, "DENIED": 0}}
    assert s.iterations_done == {"h0": 5, "h1": 3}
    assert s.fidelity == "cpu_bound" and len(s.faults) == 1


def test_plane_goodput_from_two_port_counter_answers():
    topo = Topology(FabricSpec(planes=2, groups=1, spines=1, hosts_per_group=2))
    link = next(l for l in topo.links if l.kind == "host" and l.a == "h1" and l.plane == 1)
    before = {link.b: {str(link.b_port): {"tx_bytes": 1000}}}
    after = {link.b: {str(link.b_port): {"tx_bytes": 1000 + 2_500_000}}}
    s = L.LiveState()
    s.set_port_counters(before, after, 2.0, topo)
    # 2,500,000 B in 2 s = 10 Mbit/s delivered to h1 on plane 1
    assert s.plane_rate_mbit == {("h1", 1): pytest.approx(10.0)}


def test_prometheus_text_by_hand():
    text = fed().prometheus()
    lines = text.splitlines()
    assert 'mrclab_goodput_mbit{transport="mrc",host="h0"} 10.0' in lines
    assert 'mrclab_retransmits_total{transport="mrc",host="h0"} 7' in lines
    assert 'mrclab_evs{transport="mrc",path="p1s0",state="ASSUMED_BAD"} 1' in lines
    assert 'mrclab_evs{transport="mrc",path="p0s1",state="DENIED"} 1' in lines
    assert 'mrclab_faults_fired_total{transport="mrc"} 1' in lines
    assert 'mrclab_fidelity_ok{transport="mrc",verdict="cpu_bound"} 0' in lines
    assert "# TYPE mrclab_retransmits_total counter" in lines
    assert text.endswith("\n")


def test_follower_reads_only_complete_new_lines(tmp_path):
    path = tmp_path / "worker-h0.jsonl"
    path.write_text(json.dumps(records()[0]) + "\n" + '{"t_ns": 1, "ho')
    f = L.Follower()
    assert [r["t_ns"] for _, r in f.poll([path])] == [0]
    with open(path, "a") as out:
        out.write('st": "h0", "event": "x"}\n')
    assert [r["t_ns"] for _, r in f.poll([path])] == [1]
    assert f.poll([path, tmp_path / "missing.jsonl"]) == []


def transport_dir(tmp_path):
    run = tmp_path / "run"
    tdir = run / "mrc"
    tdir.mkdir(parents=True)
    (run / "scenario.toml").write_text('name = "x"\n')
    (run / "run.json").write_text(json.dumps({"status": "running"}))
    (tdir / "worker.json").write_text(json.dumps({"fabric": FabricSpec().to_dict()}))
    by_host = {}
    for r in records():
        by_host.setdefault(r["host"], []).append(r)
    for h, rs in by_host.items():
        (tdir / f"worker-{h}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    return run, tdir


def test_top_once_shows_the_running_transport(tmp_path, capsys):
    run, tdir = transport_dir(tmp_path)
    assert top.main([str(run), "--once", "--api-port", str(free_port())]) == 0
    out = capsys.readouterr().out
    assert "transport mrc" in out and "h0" in out
    assert max(len(x) for x in out.splitlines()) <= 100
    (tdir / "summary.json").write_text("{}")
    (run / "run.json").write_text(json.dumps({"status": "finished"}))
    assert top.main([str(run), "--once"]) == 0
    assert "no transport running (the run ended)" in capsys.readouterr().out
    assert top.main([str(tmp_path / "nowhere"), "--once"]) == 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str, token: str | None = TOKEN):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                                         headers=headers), timeout=5)


def test_metrics_endpoint_serves_the_state_on_loopback_and_404_elsewhere(tmp_path):
    _, tdir = transport_dir(tmp_path)
    port = free_port()
    server = metrics_server.MetricsServer(port, L.Watcher(tdir, "mrc"), TOKEN).start()
    try:
        with _get(port, "/metrics") as r:
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            body = r.read().decode()
        assert 'mrclab_retransmits_total{transport="mrc",host="h0"} 7' in body
        with pytest.raises(urllib.error.HTTPError) as err:
            _get(port, "/other")
        assert err.value.code == 404
        assert server.httpd.server_address[0] == "127.0.0.1"
        with pytest.raises(metrics_server.MetricsPortError, match=f"metrics_port = {port}"):
            metrics_server.MetricsServer(port, L.Watcher(tdir, "mrc"), TOKEN)
    finally:
        server.stop()


def test_metrics_need_the_fabrics_token(tmp_path):
    """Loopback is not authentication: a scrape without the API token, or with another, or
    with the token under another scheme, is 401 and reads nothing (docs/security.md)."""
    _, tdir = transport_dir(tmp_path)
    port = free_port()
    polls = []
    watcher = L.Watcher(tdir, "mrc")
    real_poll = watcher.poll
    watcher.poll = lambda: polls.append(1) or real_poll()
    server = metrics_server.MetricsServer(port, watcher, TOKEN).start()
    try:
        for token in (None, "0" * len(TOKEN)):
            with pytest.raises(urllib.error.HTTPError) as err:
                _get(port, "/metrics", token)
            assert err.value.code == 401
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                         headers={"Authorization": f"Basic {TOKEN}"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=5)
        assert err.value.code == 401
        assert polls == []
    finally:
        server.stop()


def test_a_silent_client_is_cut_off_after_the_request_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_server, "REQUEST_TIMEOUT_S", 0.5)
    _, tdir = transport_dir(tmp_path)
    port = free_port()
    server = metrics_server.MetricsServer(port, L.Watcher(tdir, "mrc"), TOKEN).start()
    try:
        with socket.create_connection(("127.0.0.1", port)) as idle:
            idle.sendall(b"GET /metrics HTTP/1.1\r\n")      # and never the rest
            idle.settimeout(5)
            t0 = time.monotonic()
            assert idle.recv(65536) == b""          # closed, not left waiting
            assert time.monotonic() - t0 < 3
    finally:
        server.stop()


def test_endpoint_logs_give_ev_states_but_not_goodput():
    s = L.LiveState("mrc")
    s.feed({"t_ns": 0, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0}, "endpoint")
    s.feed({"t_ns": 10**9, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 10**6}, "endpoint")
    s.feed({"t_ns": 1, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": EV_P1S0,
            "new": "ASSUMED_BAD"}, "endpoint")
    assert s.rate_mbit == {} and s.rx_bytes == {}
    assert s.ev_counts()["p1s0"]["ASSUMED_BAD"] == 1
