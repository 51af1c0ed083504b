"""Endpoint pieces without sockets: BPF filter program, config parsing, pacer, event log."""
import json

import pytest

from model.events import Event
from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.codec import Codec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import ConfigError, EndpointConfig, EventLog, Pacer, qp_timers
from traffic.core.messages import DataPacket, Opcode, Probe, Sack
from traffic.nic.packet_io import ROCE_BPF_PROGRAM, run_classic_bpf

pytestmark = pytest.mark.core

TOPO = Topology(FabricSpec())


def scapy_frames():
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6ND_NS, IPv6
    from scapy.layers.l2 import ARP, Ether
    from scapy.packet import Raw
    e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:00")
    a, b = "fd00:0:0:0::1", "fd00:0:1:0::1"
    accept = {
        "ipv6 udp 4791": e / IPv6(src=a, dst=b) / UDP(sport=7, dport=4791) / Raw(b"x" * 30),
        "ipv6-in-ipv6 udp 4791": e / IPv6(src=a, dst="fcbb:bb00::1") / IPv6(src=a, dst=b)
        / UDP(sport=7, dport=4791) / Raw(b"x" * 30),
    }
    reject = {
        "ipv6 udp 4792": e / IPv6(src=a, dst=b) / UDP(sport=7, dport=4792) / Raw(b"x" * 30),
        "ipv6 udp sport 4791": e / IPv6(src=a, dst=b) / UDP(sport=4791, dport=9) / Raw(b"x" * 30),
        "ipv6 tcp 4791": e / IPv6(src=a, dst=b) / TCP(sport=7, dport=4791),
        "ipv6-in-ipv6 udp 53": e / IPv6(src=a, dst="fcbb:bb00::1") / IPv6(src=a, dst=b)
        / UDP(sport=7, dport=53),
        "ipv6-in-ipv6 tcp 4791": e / IPv6(src=a, dst="fcbb:bb00::1") / IPv6(src=a, dst=b)
        / TCP(sport=7, dport=4791),
        "ipv4 udp 4791": e / IP(src="1.1.1.1", dst="2.2.2.2") / UDP(sport=7, dport=4791),
        "arp": e / ARP(),
        "neighbour solicitation": e / IPv6(src=a, dst="ff02::1:ff00:1") / ICMPv6ND_NS(tgt=b),
    }
    return {k: bytes(v) for k, v in accept.items()}, {k: bytes(v) for k, v in reject.items()}


def test_bpf_filter_accepts_only_roce_in_ipv6_or_ipv6_in_ipv6():
    accept, reject = scapy_frames()
    for name, frame in accept.items():
        assert run_classic_bpf(ROCE_BPF_PROGRAM, frame) == len(frame), name
    for name, frame in reject.items():
        assert run_classic_bpf(ROCE_BPF_PROGRAM, frame) == 0, name


def test_bpf_filter_accepts_codec_frames_in_both_modes_and_drops_truncated():
    codec = Codec(TOPO)
    for mode in ("srv6", "ecmp"):
        frame = codec.encoder(0, 2, 1, mode).encode(
            Sack(dest_qp=5, cum_psn=3, path_ev=make_ev(1, 1, 99)))
        assert run_classic_bpf(ROCE_BPF_PROGRAM, frame) == len(frame)
        assert run_classic_bpf(ROCE_BPF_PROGRAM, frame[:50]) == 0


def test_config_defaults_and_timers():
    cfg = EndpointConfig.from_dict({"host": 1, "fabric": FabricSpec(planes=4).to_dict()})
    assert cfg.planes == [0, 1, 2, 3]
    assert cfg.port_rate_mbit == 100.0
    # the emulated fabric's QP timers: RTO 16, probe period 20 base RTTs, of the RTT a full
    # frame makes: the probes' 2 ms plus a 1518-byte frame (1344 payload + 174 header bytes)
    # stored and forwarded on 4 links of 100 Mbit/s, 4 x 121.44 us
    t = qp_timers(Endpoint(cfg, ports={}).qp_config(2_000_000))
    base = 2_000_000 + 4 * 121_440
    assert t["base_rtt_ns"] == base
    assert t["rto_ns"] == 16 * base and t["probe_period_ns"] == 20 * base
    # no floor under what the probes measured (0.15 ms): neither the base RTT nor NSCC's
    qcfg = Endpoint(cfg, ports={}).qp_config(150_000)
    assert (qcfg.base_rtt_ns, qcfg.nscc_min_base_rtt_ns) == (150_000, 0)
    assert cfg.min_base_rtt_ns is None
    cfg2 = EndpointConfig.from_dict({"host": 0, "qp": {"rto_ns": 123_456}})
    assert qp_timers(Endpoint(cfg2, ports={}).qp_config(1_000_000))["rto_ns"] == 123_456


@pytest.mark.parametrize("data, words", [
    ({"host": 0, "bogus": 1}, "bogus"),
    ({}, "host"),
    ({"host": 9}, "host 9"),
    ({"host": 0, "routing": "ospf"}, "routing"),
    ({"host": 0, "planes": [5]}, "planes"),
    ({"host": 0, "qp": {"rto_rtts": -1}}, "rto_rtts"),
    ({"host": 0, "max_payload": 10}, "max_payload"),
    ({"host": 0, "fabric": {"planes": 0}}, "planes"),
    ({"host": 0, "base_rtt_ns": "1ms"}, "base_rtt_ns"),
])
def test_config_errors_name_the_key(data, words):
    with pytest.raises(ConfigError, match=words):
        EndpointConfig.from_dict(data)


def test_config_load_json_and_toml(tmp_path):
    j = tmp_path / "e.json"
    j.write_text(json.dumps({"host": 2, "routing": "ecmp"}))
    assert EndpointConfig.load(str(j)).routing == "ecmp"
    t = tmp_path / "e.toml"
    t.write_text('host = 3\nrouting = "srv6"\n[fabric]\nplanes = 2\n')
    assert EndpointConfig.load(str(t)).host == 3
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid"):
        EndpointConfig.load(str(bad))
    with pytest.raises(ConfigError, match="cannot read"):
        EndpointConfig.load(str(tmp_path / "missing.json"))


def test_pacer_holds_rate():
    rate = 100e6
    p = Pacer(rate, burst_bytes=3000, now_ns=0)
    now, sent = 0, 0
    while now < 100_000_000:           # 100 ms of fake time
        if p.can_send(now):
            p.consume(1500)
            sent += 1500
        else:
            now = p.next_send_ns(now)
    assert abs(sent * 8 / 0.1 - rate) / rate < 0.02


def test_event_log_writes_schema_lines(tmp_path):
    path = tmp_path / "ev.jsonl"
    clock = iter(range(100, 200)).__next__
    log = EventLog(str(path), "h3", clock)
    log.emit(Event.PORT, plane=1, up=False)
    log.emit(Event.PROBE, t_ns=7, qp=1, ev=2, ok=True, rtt_ns=5)
    lines = [json.loads(x) for x in path.read_text().splitlines()]  # readable before close
    assert lines[0] == {"t_ns": 100, "host": "h3", "event": Event.PORT, "plane": 1, "up": False}
    assert lines[1]["t_ns"] == 7 and lines[1]["event"] == Event.PROBE
    log.close()


def test_a_qp_keeps_the_base_rtt_its_probes_measured():
    """No 2 ms floor: a QP created with a measured 0.15 ms base RTT has it; a floor applies
    only when the config sets one."""
    def qp_base(**config):
        ep = Endpoint(EndpointConfig.from_dict({"host": 0, **config}),
                      ports={p: FakePort(p) for p in range(2)})
        return ep.create_qp(0x100, 2, 0x200, base_rtt_ns=150_000).sender.cfg.base_rtt_ns

    assert qp_base() == 150_000
    assert qp_base(min_base_rtt_ns=400_000) == 400_000
