"""The analysis tests' frame builder (tests/helpers/synth.py) against Scapy's decoding, and its
run directory against the runner's layout: a wrong builder would make every analysis test agree
with itself."""
import struct
import zlib

from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from model.topology import make_ev
from tests.helpers.synth import bth, data_hdrs, frame, make_run


def test_frame_builder_matches_binding_layout():
    ev = make_ev(1, 1, 0x1234)
    fr = frame(0, 1, 1, ev, bth(0xCA, 0x123456, 77, retx=True) + data_hdrs(3, 0x1000, 9, 64) + b"x" * 64)
    raw = bytes(fr)
    assert raw[12:14] == b"\x86\xdd"
    assert raw[14 + 6] == 41 and raw[54 + 6] == 17
    udp = 14 + 40 + 40
    assert struct.unpack("!HH", raw[udp:udp + 4]) == (0x1234, 4791)
    b = raw[udp + 8:udp + 20]
    assert b[0] == 0xCA and b[4] & 0x20 and int.from_bytes(b[5:8], "big") == 0x123456
    assert int.from_bytes(b[9:12], "big") == 77
    # flow label of the inner header = high 16 bits of the EV
    inner = raw[54:94]
    assert (int.from_bytes(inner[1:4], "big") & 0xFFFFF) == ev >> 16
    assert zlib.crc32(raw[udp + 8:-4]) == struct.unpack("!I", raw[-4:])[0]
    assert Ether(raw)[UDP].dport == 4791


def test_make_run_writes_the_runner_layout(tmp_path):
    run = make_run(tmp_path / "r", transports=("mrc",), packets=20)
    names = sorted(p.name for p in (run / "mrc").iterdir())
    assert names == ["clock.json", "faults.jsonl", "h0-p0.pcap", "h0-p1.pcap", "h0.jsonl",
                     "h1-p0.pcap", "h1-p1.pcap", "h1.jsonl", "scenario.toml", "summary.json"]
