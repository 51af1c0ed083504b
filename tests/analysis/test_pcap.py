"""analysis.pcap: values loaded from real pcap files equal the values encoded into them."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.pcap import ClockOffset, PcapError, capture_identity, load_captures, load_pcap
from model.topology import make_ev
from tests.helpers.synth import (EV0, REALTIME_OFFSET, TOPO, make_run, mixed_frames,
                                 write_capture)

@pytest.mark.parametrize("srv6", [True, False])
def test_fields_roundtrip(tmp_path, srv6):
    path = tmp_path / "h0-p0.pcap"
    write_capture(path, mixed_frames(srv6))
    assert "direction ambiguous" in load_pcap(path).attrs["pcap_report"]["problems"][0]
    df = load_pcap(path, local_addr=TOPO.nic_addr(0, 0))
    assert len(df) == 5
    assert list(df["opname"]) == ["WRITE_ONLY", "WRITE_LAST_IMM", "SACK", "NACK", "EP_RESPONSE"]
    assert (df["host"] == "h0").all() and (df["plane"] == 0).all()
    assert list(df["direction"]) == ["tx", "tx", "rx", "rx", "tx"]
    assert df["srv6"].all() == srv6
    assert list(df["qp"]) == [0x10, 0x10, 0x11, 0x11, 0x2]
    assert list(df["psn"]) == [100, 101, 102, 105, 9]
    assert (df["ev"] == EV0).all() and (df["ev_spine"] == 1).all() and (df["ev_plane"] == 0).all()
    assert list(df["retx"]) == [False, True, False, False, False]
    assert list(df["ack_req"]) == [True, False, False, False, False]
    assert list(df["ce"]) == [False, True, False, False, False]
    assert df["pcap_time_ns"].iloc[1] - df["pcap_time_ns"].iloc[0] == 1000
    d0, d1 = df.iloc[0], df.iloc[1]
    assert (d0.msn, d0.tseth, d0.va, d0.rkey, d0.dma_len, d0.payload_len) == (7, 123456789, 0x2000, 0x55, 2048, 512)
    assert pd.isna(d0.imm)
    assert (d1.msn, d1.va, d1.imm, d1.payload_len) == (8, 0x3000, 0xCAFE, 300) and pd.isna(d1.tseth)
    s = df.iloc[2]
    assert (s.sack_cum_psn, s.sack_base, s.sack_bitmap, s.sack_ev, s.sack_skip, s.sack_mpr,
            s.sack_port_status, s.sack_echo_ts, s.sack_ooo, s.sack_window_penalty,
            s.sack_rx_bytes) == (102, 104, 0b1011, EV0, 1, 8, 2, 99, 4, 5, 1 << 40)
    n = df.iloc[3]
    assert (n.nack_reason, n.nack_reason_name, n.nack_port_status, n.nack_ev, n.nack_echo_ts) == \
        (1, "TRIMMED", 1, EV0, 77)
    p = df.iloc[4]
    assert (p.probe_response, p.probe_seq, p.probe_ev, p.probe_src_qp, p.probe_ts) == (True, 9, EV0, 0x10, 555)
    assert pd.isna(p.sack_cum_psn) and pd.isna(p.msn)
    assert all(pd.isna(r.probe_seq) and pd.isna(r.probe_response) for r in df.iloc[:4].itertuples())
    assert not df["short"].any()
    expected_size = [len(bytes(f)) for _, f in mixed_frames(srv6)]
    assert list(df["size"]) == expected_size
    assert df.attrs["pcap_report"]["problems"] == []


def test_snaplen_128_keeps_readable_fields(tmp_path):
    path = tmp_path / "h0-p0.pcap"
    write_capture(path, mixed_frames(True), snaplen=128)
    # wrpcap records the snaplen in the header but writes whole packets: cut them like tcpdump -s 128
    raw = bytearray(path.read_bytes())
    out, pos = bytearray(raw[:24]), 24
    while pos < len(raw):
        sec, frac, incl, orig = np.frombuffer(raw[pos:pos + 16], dtype="<u4")
        cut = min(int(incl), 128)
        out += np.array([sec, frac, cut, orig], dtype="<u4").tobytes() + raw[pos + 16:pos + 16 + cut]
        pos += 16 + int(incl)
    path.write_bytes(bytes(out))
    df = load_pcap(path)
    assert len(df) == 5
    assert list(df["psn"]) == [100, 101, 102, 105, 9]
    assert (df["captured"] <= 128).all() and df["size"].iloc[0] > 128
    # SRv6 data: 114 B of L2-BTH, METH(4)+TSETH(8) = 126 -> RETH cut: va missing, msn/tseth present
    assert df.iloc[0].msn == 7 and df.iloc[0].tseth == 123456789 and pd.isna(df.iloc[0].va)
    assert df.iloc[0].payload_len == 512            # from the IPv6 payload length
    assert df.iloc[2].sack_cum_psn == 102 and pd.isna(df.iloc[2].sack_rx_bytes)
    # NACK ends at byte 130: reason and EV captured, the echoed timestamp is not
    assert df.iloc[3].nack_reason == 1 and df.iloc[3].nack_ev == EV0 and pd.isna(df.iloc[3].nack_echo_ts)
    # EPH starts at byte 114: operation, ports, EV (118..121), source QP (122..125) captured,
    # the timestamp (126..133) is not
    p = df.iloc[4]
    assert (p.probe_seq, p.probe_ev, p.probe_src_qp) == (9, EV0, 0x10) and pd.isna(p.probe_ts)
    assert df["short"].all() and df.attrs["pcap_report"]["short_packets"] == 5


def test_corrupt_tail_loads_readable_part_and_reports(tmp_path):
    path = tmp_path / "h0-p0.pcap"
    write_capture(path, mixed_frames(True))
    full = path.read_bytes()
    path.write_bytes(full[:-30])                     # last record cut short
    df = load_pcap(path)
    assert len(df) == 4
    rep = df.attrs["pcap_report"]
    assert rep["unreadable_bytes"] > 0 and "truncated record" in rep["problems"][0]
    path.write_bytes(full + b"\xff" * 20)            # garbage record header after the last one
    df = load_pcap(path)
    assert len(df) == 5 and df.attrs["pcap_report"]["problems"]


def test_not_a_pcap_raises_clearly(tmp_path):
    p = tmp_path / "x.pcap"
    p.write_bytes(b"hello world, definitely not a capture file")
    with pytest.raises(PcapError, match="not a pcap"):
        load_pcap(p)


def test_foreign_packets_are_counted_not_rows(tmp_path):
    from scapy.layers.inet6 import IPv6
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Ether
    path = tmp_path / "h1-p1.pcap"
    foreign = Ether() / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=1, dport=53) / b"dns"
    write_capture(path, [(1, foreign)] + mixed_frames(False)[:1])
    df = load_pcap(path)
    assert len(df) == 1 and df.attrs["pcap_report"]["other_packets"] == 1
    assert capture_identity(path) == ("h1", 1)


def test_clock_offset_converts_to_monotonic_and_run_loader(tmp_path):
    run = make_run(tmp_path / "run", transports=("mrc", "tcp"), packets=40)
    clock = ClockOffset.load(run / "clock.json")
    assert clock.offset_ns == REALTIME_OFFSET
    df = load_captures(run)
    assert df.attrs["clock"] == "monotonic"
    assert (df["pcap_time_ns"] - df["time_ns"] == REALTIME_OFFSET).all()
    assert set(df["transport"].unique()) == {"mrc", "tcp"}
    assert set(df["host"].unique()) == {"h0", "h1"}
    # h0 only transmits data on its captures; h1 receives data and transmits SACKs
    h0 = df[df.host == "h0"]
    assert set(h0["direction"]) == {"tx"} and set(h0["opname"]) == {"WRITE_ONLY"}
    h1 = df[df.host == "h1"]
    assert set(h1[h1.opname == "SACK"]["direction"]) == {"tx"}
    assert set(h1[h1.opname == "WRITE_ONLY"]["direction"]) == {"rx"}
    assert df["time_ns"].is_monotonic_increasing


def test_frames_of_the_project_codec_load_identically(tmp_path):
    from scapy.layers.l2 import Ether
    from emulation.network.vqueue import trim_frame
    from traffic.core.codec import Codec
    from traffic.core.messages import DataPacket, Nack, Sack
    codec = Codec(TOPO)
    ev = make_ev(1, 0, 77)
    msgs = [DataPacket(dest_qp=9, psn=5, opcode=0xCB, msn=2, va=64, rkey=3, dma_len=100,
                       payload=bytes(100), imm=42, timestamp=1234, retransmit=True, ev=ev),
            Sack(dest_qp=9, cum_psn=6, bitmap=5, sack_base=8, ev=ev, rx_bytes=100),
            Nack(dest_qp=9, psn=7, reason=0x0B, ev=ev)]
    frames = []
    for mode in ("srv6", "ecmp"):
        enc = codec.encoder(1, 0, 1, mode)
        frames += [enc.encode(m) for m in msgs]
    frames.append(trim_frame(frames[0]))
    write_capture(tmp_path / "h0-p1.pcap", [(i, Ether(f)) for i, f in enumerate(frames)])
    df = load_pcap(tmp_path / "h0-p1.pcap", local_addr=TOPO.nic_addr(0, 1))
    assert list(df["srv6"]) == [True] * 3 + [False] * 3 + [True]
    assert (df["direction"] == "rx").all() and (df["ev"] == ev).all()
    assert list(df["opname"]) == ["WRITE_ONLY_IMM", "SACK", "NACK"] * 2 + ["WRITE_ONLY_IMM"]
    assert list(df["psn"]) == [5, 6, 7] * 2 + [5]
    assert df.iloc[0].imm == 42 and df.iloc[0].tseth == 1234 and df.iloc[0].payload_len == 100
    assert df.iloc[0].retx and df.iloc[1].sack_bitmap == 5 and df.iloc[2].nack_reason_name == "PSN_OOR_WINDOW"
    assert list(df["trimmed"]) == [False] * 6 + [True]
    assert df.iloc[6].payload_len == 0 and df.iloc[6].dscp == 0x3B and df.iloc[0].dscp == 0
    assert (df["ecn"] == 2).all()       # codec default: ECT(0)
