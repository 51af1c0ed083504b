"""`mrclab bench pcap`: the made-up capture is what it says (read back by hand, byte by byte),
the figures are consistent with each other, and bad arguments exit with a message."""
import struct

import pytest

from emulation.benches import pcap as bench
from model.topology import FabricSpec, Topology
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Sack


def records(path):
    """(ns timestamp, frame) of a nanosecond pcap, parsed by hand from the libpcap format."""
    raw = path.read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", raw, 0)
    assert (magic, major, minor, linktype) == (0xA1B23C4D, 2, 4, 1)   # ns pcap, Ethernet
    off, out = 24, []
    while off < len(raw):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", raw, off)
        assert incl == orig <= snaplen
        out.append((sec * 1_000_000_000 + nsec, raw[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def test_bench_capture_holds_writes_and_one_sack_per_four_writes(tmp_path):
    path = bench.write_bench_capture(tmp_path / "x.pcap", packets=50, payload=100)
    recs = records(path)
    assert len(recs) == 50
    assert all(b - a == 10_000 for (a, _), (b, _) in zip(recs, recs[1:]))   # 10 us apart
    codec = Codec(Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1)))
    kinds = []
    for i, (_, frame) in enumerate(recs):
        msg, meta = codec.decode(frame)
        kinds.append(type(msg))
        assert meta.srv6
        if isinstance(msg, DataPacket):
            assert (msg.psn, len(msg.payload), msg.retransmit) == (i, 100, i % 97 == 0)
    assert kinds == [Sack if i % 5 == 4 else DataPacket for i in range(50)]


def test_bench_figures_are_consistent(tmp_path):
    lines = []
    res = bench.run_pcap_bench(packets=300, print_fn=lines.append)
    assert res["packets"] == 300
    assert res["analysis_pcap_pps"] == pytest.approx(300 / res["analysis_pcap_s"])
    assert res["scapy_rdpcap_pps"] == pytest.approx(300 / res["scapy_rdpcap_s"])
    assert res["ratio"] == pytest.approx(res["analysis_pcap_pps"] / res["scapy_rdpcap_pps"])
    assert res["goal_met"] == (res["ratio"] >= 20)
    assert len(lines) == 4 and "300 packets" in lines[0]
    assert ("NOT met" in lines[3]) != res["goal_met"]
    # a given capture is loaded instead of a made-up one
    path = bench.write_bench_capture(tmp_path / "y.pcap", packets=40, payload=64)
    assert bench.run_pcap_bench(path=path, print_fn=lambda *_: None)["packets"] == 40


def test_bench_rejects_a_non_positive_packet_count(capsys):
    from emulation import cli
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "pcap", "--packets", "0"])
    assert exit_.value.code == 2
    assert "argument --packets: must be >= 1, got 0" in capsys.readouterr().err
