"""The Lua dissector shows MRC fields in tshark and wins UDP 4791 over the built-in InfiniBand one."""
from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.needs_tshark

from model.topology import make_ev
from tests.helpers.synth import EV0, bth, data_hdrs, frame, mixed_frames, write_capture
from tests.helpers.paths import REPO

LUA = REPO / "analysis" / "wireshark" / "mrc.lua"
FIELDS = ["_ws.col.Protocol", "mrc.opcode", "mrc.qp", "mrc.psn", "mrc.ev", "mrc.ev.plane",
          "mrc.ev.spine", "mrc.retransmission", "mrc.meth.msn", "mrc.tseth.timestamp",
          "mrc.reth.va", "mrc.immdt", "mrc.payload_len", "mrc.sack.cum_psn", "mrc.sack.bitmap",
          "mrc.sack.rx_bytes", "mrc.nack.reason", "mrc.probe.seq", "mrc.probe.response"]


def tshark_fields(pcap, fields=FIELDS, options=()):
    if shutil.which("tshark") is None:
        pytest.fail("tshark is not installed (scripts/setup.sh installs it)")
    cmd = ["tshark", "-X", f"lua_script:{LUA}", *options, "-r", str(pcap), "-T", "fields",
           "-E", "separator=|", "-E", "aggregator=;"] + [x for fld in fields for x in ("-e", fld)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"{cmd} failed: {res.stderr}"
    assert "Lua" not in res.stderr and "error" not in res.stderr.lower(), res.stderr
    return [dict(zip(fields, line.split("|"))) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("srv6", [True, False])
def test_tshark_shows_mrc_fields(tmp_path, srv6):
    pcap = tmp_path / "h0-p0.pcap"
    write_capture(pcap, mixed_frames(srv6))
    # without an SRv6 container (ECMP) the packets are labelled RoCE unless told they are MRC
    rows = tshark_fields(pcap, options=() if srv6 else ("-o", "mrc.transport:mrc"))
    assert [r["_ws.col.Protocol"] for r in rows] == ["MRC"] * 5
    assert [r["mrc.opcode"] for r in rows] == ["0xca", "0xc9", "0xdc", "0xdd", "0xd9"]
    assert [int(r["mrc.psn"]) for r in rows] == [100, 101, 102, 105, 9]
    assert all(int(r["mrc.ev"], 16) == EV0 for r in rows)
    assert rows[0]["mrc.ev.spine"] == "1" and rows[0]["mrc.ev.plane"] == "0"
    assert [r["mrc.retransmission"] for r in rows[:2]] == ["0", "1"]
    assert rows[0]["mrc.meth.msn"] == "7" and rows[0]["mrc.tseth.timestamp"] == "123456789"
    assert int(rows[0]["mrc.reth.va"], 16) == 0x2000 and rows[0]["mrc.payload_len"] == "512"
    assert int(rows[1]["mrc.immdt"], 16) == 0xCAFE
    assert rows[2]["mrc.sack.cum_psn"] == "102" and int(rows[2]["mrc.sack.bitmap"], 16) == 0b1011
    assert rows[2]["mrc.sack.rx_bytes"] == str(1 << 40)
    assert rows[3]["mrc.nack.reason"] == "0x01" and rows[4]["mrc.probe.seq"] == "9"
    assert rows[4]["mrc.probe.response"] == "1" and rows[0]["mrc.probe.response"] == ""


def test_tshark_verbose_names_opcodes_and_reasons(tmp_path):
    pcap = tmp_path / "h0-p0.pcap"
    write_capture(pcap, mixed_frames(True))
    res = subprocess.run(["tshark", "-X", f"lua_script:{LUA}", "-r", str(pcap), "-V"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    for text in ("Opcode: WRITE_ONLY (0xca)", "NACK reason: TRIMMED (0x01)", "SACK",
                 "Opcode: EP_RESPONSE (0xd9)", "Endpoint operation: EV_PROBE (0)",
                 "Probed EV: 0x00400bee", "Source QP: 0x00000010",
                 "Entropy value (EV): 0x00400bee", "Skip (M field): SKIP_ONCE"):
        assert text in res.stdout, text


def test_short_capture_is_flagged_not_an_error(tmp_path):
    pcap = tmp_path / "h0-p0.pcap"
    big = frame(0, 1, 0, make_ev(0, 0, 5), bth(0xCA, 3, 1) + data_hdrs(1, 0, 1, 900) + bytes(900))
    write_capture(pcap, [(0, big)])
    raw = bytearray(pcap.read_bytes())
    # cut to 120 bytes like tcpdump -s 120: incl_len = 120, data cut
    import struct
    sec, frac, incl, orig = struct.unpack_from("<IIII", raw, 24)
    pcap.write_bytes(bytes(raw[:24]) + struct.pack("<IIII", sec, frac, 120, orig) + bytes(raw[40:160]))
    res = subprocess.run(["tshark", "-X", f"lua_script:{LUA}", "-r", str(pcap), "-V"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "MRC header cut short" in res.stdout


def test_tshark_decodes_codec_ev_probe_request_and_response(tmp_path):
    """Frames from the real codec: request 0xD8 and response 0xD9, probe id = PSN."""
    from scapy.layers.l2 import Ether

    from tests.helpers.synth import TOPO
    from traffic.core.codec import Codec
    from traffic.core.messages import Probe

    ev = make_ev(1, 1, 0xC0DE)
    enc = Codec(TOPO).encoder(0, 1, 1, "srv6")
    frames = [Ether(enc.encode(Probe(ev=ev, seq=0xABCDEF, src_qp=0x21, timestamp=42, path_ev=ev))),
              Ether(enc.encode(Probe(ev=ev, seq=0xABCDEF, src_qp=0x21, timestamp=42,
                                     response=True, path_ev=ev)))]
    pcap = tmp_path / "h0-p1.pcap"
    write_capture(pcap, [(1000 * i, f) for i, f in enumerate(frames)])
    cmd = ["tshark", "-X", f"lua_script:{LUA}", "-r", str(pcap), "-T", "fields", "-E",
           "separator=|", "-e", "mrc.opcode", "-e", "mrc.qp", "-e", "mrc.probe.seq", "-e",
           "mrc.probe.response", "-e", "mrc.ep.op", "-e", "mrc.probe.ev", "-e",
           "mrc.probe.src_qp", "-e", "mrc.probe.timestamp"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    rows = [line.split("|") for line in res.stdout.splitlines()]
    assert [r[0] for r in rows] == ["0xd8", "0xd9"]
    for row, response in zip(rows, ("0", "1")):
        assert int(row[1], 16) == 2 and int(row[2]) == 0xABCDEF and row[3] == response
        assert row[4] == "0" and int(row[5], 16) == ev and int(row[6], 16) == 0x21 and row[7] == "42"


def _one_frame_capture(tmp_path, fr, snaplen=65535):
    pcap = tmp_path / "one.pcap"
    write_capture(pcap, [(0, fr)], snaplen=snaplen)
    return pcap


def test_srv6_usid_container_names_each_hop(tmp_path):
    # TOPO: 2 planes x 2 groups x 2 spines, one host per group: h0 in group 0, h1 in group 1.
    # h0 -> h1 on plane 1 via spine 1: [T0 p1 g0, T1 p1 s1, T0 p1 g1, downlink to host 0]
    pcap = _one_frame_capture(tmp_path, frame(0, 1, 1, make_ev(1, 1, 0x77),
                                              bth(0xCA, 3, 1) + data_hdrs(1, 0, 1, 64) + bytes(64),
                                              spine=1))
    [row] = tshark_fields(pcap, ["mrc.srv6.locator", "mrc.srv6.usid", "mrc.srv6.hop"])
    assert int(row["mrc.srv6.locator"], 16) == 0xFCBBBB00
    assert [int(u, 16) for u in row["mrc.srv6.usid"].split(";")] == [0x1100, 0x2101, 0x1101, 0x3000]
    assert row["mrc.srv6.hop"].split(";") == [
        "T0 t0p1g0 (plane 1, group 0)", "T1 t1p1s1 (plane 1, spine 1)",
        "T0 t0p1g1 (plane 1, group 1)", "downlink to host 0 of the destination T0's group"]


@pytest.mark.parametrize("dscp, name", [(0x3B, "TRIMMED"), (0x3F, "TRIMMED_LASTHOP")])
def test_trimmed_dscp_is_named(tmp_path, dscp, name):
    fr = frame(0, 1, 0, EV0, bth(0xCA, 3, 1) + data_hdrs(1, 0, 1, 64), ecn=dscp << 2 | 2)
    pcap = _one_frame_capture(tmp_path, fr)
    res = subprocess.run(["tshark", "-X", f"lua_script:{LUA}", "-r", str(pcap), "-V"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    [line] = [ln.strip() for ln in res.stdout.splitlines() if "Outer DSCP:" in ln]
    assert line.startswith(f"[Outer DSCP: {name} (cut ") and line.endswith(f"(0x{dscp:02x})]")


def test_udp_checksum_zero_is_expected_not_an_error(tmp_path):
    from analysis.open_captures import viewer_options
    pcap = tmp_path / "h0-p0.pcap"
    write_capture(pcap, mixed_frames(True))
    cmd = ["tshark", "-X", f"lua_script:{LUA}", *viewer_options("mrc"), "-r", str(pcap), "-q",
           "-z", "expert,error"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "Illegal checksum" not in res.stdout
    rows = tshark_fields(pcap, ["mrc.udp_checksum"])
    assert all(r["mrc.udp_checksum"].startswith("0: expected") for r in rows) and len(rows) == 5
    # without the preference Wireshark's UDP dissector calls every packet an error
    res = subprocess.run(cmd[:3] + ["-r", str(pcap), "-q", "-z", "expert,error"],
                         capture_output=True, text=True, timeout=60)
    assert "Illegal checksum value (0)" in res.stdout


def test_payload_length_comes_from_the_headers_when_the_capture_is_cut(tmp_path):
    fr = frame(0, 1, 0, EV0, bth(0xCA, 3, 1) + data_hdrs(1, 0, 1, 900) + bytes(900))
    # every header whole, the payload cut: Ethernet 14 + 2 x IPv6 40 + UDP 8 + BTH 12 + METH 4
    # + RETH 16 = 134 bytes of headers; snap length 166 as the runner captures
    pcap = _one_frame_capture(tmp_path, fr, snaplen=166)
    [row] = tshark_fields(pcap, ["mrc.payload_len", "_ws.col.Info"])
    assert row["mrc.payload_len"] == "900" and "len=900" in row["_ws.col.Info"]


def test_roce_baseline_packets_are_labelled_roce(tmp_path):
    pcap = tmp_path / "h0-p0.pcap"
    write_capture(pcap, mixed_frames(False))          # ECMP: no SRv6 container, as RoCE runs
    rows = tshark_fields(pcap, ["_ws.col.Protocol", "_ws.col.Info", "mrc.transport"])
    assert {r["_ws.col.Protocol"] for r in rows} == {"RoCE"}
    assert all(r["_ws.col.Info"].startswith("RoCE ") and r["mrc.transport"] == "RoCE (baseline)"
               for r in rows)
    rows = tshark_fields(pcap, ["_ws.col.Protocol"], options=("-o", "mrc.transport:roce"))
    assert {r["_ws.col.Protocol"] for r in rows} == {"RoCE"}
    write_capture(pcap, mixed_frames(True))
    assert {r["_ws.col.Protocol"] for r in tshark_fields(pcap, ["_ws.col.Protocol"])} == {"MRC"}
