"""Virtual-queue model (emulation/network/vqueue.py) and tc builders of emulation/network/trimming.py: no root."""
import random
import struct

import pytest

from emulation.network import vqueue as vq
from emulation.network.vqueue import (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, ConfigError, PortConfig,
                              VirtualQueue, mark_threshold, parse_frame, trim_frame)

MS = 1_000_000


def cfg(**kw):
    base = dict(rate_mbit=8.0, ecn_min_bytes=10_000, ecn_max_bytes=20_000, trim_bytes=30_000,
                last_hop=False)
    base.update(kw)
    return PortConfig(**base)


def test_drain_arithmetic_matches_rate():
    q = VirtualQueue(cfg())                       # 8 Mbit/s = 1,000,000 B/s = 1 B/us
    q.decide(5000, 1 * MS, False, False)
    assert q.vq_bytes == 5000
    q.decide(100, 1 * MS + 2_000_000, False, False)   # 2 ms drain 2000 B
    assert q.vq_bytes == 3000 + 100
    q.decide(100, 10 * 1000 * MS, False, False)   # long idle: empty, then this packet
    assert q.vq_bytes == 100


def test_clock_going_backwards_drains_nothing():
    q = VirtualQueue(cfg())
    q.decide(1000, 5 * MS, False, False)
    q.decide(1000, 4 * MS, False, False)
    assert q.vq_bytes == 2000 and q.last_ns == 5 * MS


def test_drain_integer_semantics_and_huge_gap():
    assert vq.drain_bytes(1_000_000, 1_500_000_000) == 1_500_000
    assert vq.drain_bytes(3, 333_333_334) == 1          # floor of 3 * 0.333333334
    assert vq.drain_bytes(10, vq.MAX_DRAIN_SECONDS * vq.NS_PER_S) == (1 << 64) - 1


def test_mark_threshold_is_linear_between_min_and_max():
    c = cfg()
    assert mark_threshold(10_000, c) == 0
    assert mark_threshold(15_000, c) == 1 << 31
    assert mark_threshold(20_000, c) == 1 << 32
    assert mark_threshold(25_000, c) == 1 << 32
    assert mark_threshold(12_500, c) == 1 << 30


def test_marking_probability_follows_the_threshold():
    rng = random.Random(7)
    marks = 0
    trials = 4000
    for _ in range(trials):
        q = VirtualQueue(cfg(), rng=lambda: rng.getrandbits(32))
        q.decide(15_000, MS, False, True)          # backlog halfway -> p = 0.5
        marks += q.counters["marked"]
    assert 0.45 < marks / trials < 0.55


def test_rng_threshold_semantics_are_strict_less_than():
    q = VirtualQueue(cfg(), rng=lambda: 1 << 31)   # exactly the threshold: no mark
    assert not q.decide(15_000, MS, False, True).marked
    q = VirtualQueue(cfg(), rng=lambda: (1 << 31) - 1)
    assert q.decide(15_000, MS, False, True).marked


def test_not_ect_and_last_hop_and_mark_off_never_mark():
    for c, ect in ((cfg(), False), (cfg(last_hop=True), True), (cfg(mark=False), True)):
        q = VirtualQueue(c, rng=lambda: 0)
        decisions = [q.decide(1500, MS, False, ect) for _ in range(30)]
        assert not any(d.marked for d in decisions)
        assert max(d.backlog for d in decisions) > c.ecn_max_bytes


def test_trim_above_threshold_only_mrc_data_and_only_headers_enqueued():
    q = VirtualQueue(cfg(), rng=lambda: 0)
    hdr = vq.mrc_header_len()
    actions = [q.decide(1500, MS, True, True, header_len=hdr) for _ in range(25)]
    first_trim = next(i for i, d in enumerate(actions) if d.trimmed)
    assert actions[first_trim].backlog > 30_000 >= actions[first_trim - 1].backlog
    assert all(d.trimmed for d in actions[first_trim:])
    assert q.vq_bytes == 1500 * first_trim + hdr * (25 - first_trim)
    assert q.counters["trimmed_bytes_cut"] == (1500 - hdr) * (25 - first_trim)
    assert actions[first_trim].action == "trim" and actions[first_trim].marked


def test_non_mrc_is_never_trimmed_and_drop_threshold_applies():
    q = VirtualQueue(cfg(drop_bytes=40_000))
    decisions = [q.decide(1500, MS, False, False) for _ in range(40)]
    assert not any(d.trimmed for d in decisions)
    assert decisions[25].backlog > 30_000 and not decisions[25].dropped
    dropped = [d for d in decisions if d.dropped]
    assert dropped and all(d.backlog > 40_000 for d in dropped)
    assert q.vq_bytes <= 40_000
    assert q.counters["dropped"] == len(dropped)


def test_trim_off_drops_mrc_data_but_headers_pass():
    q = VirtualQueue(cfg(trim=False, drop_bytes=20_000))
    hdr = vq.mrc_header_len()
    out = [q.decide(1500, MS, True, False, header_len=hdr) for _ in range(20)]
    assert any(d.dropped for d in out) and not any(d.trimmed for d in out)
    header = q.decide(hdr, MS, True, False, header_len=hdr)   # already trimmed upstream
    assert header.action == "pass" and header.vq_after > 20_000 - 1500


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match="ecn_min_bytes"):
        cfg(ecn_min_bytes=30_000)
    with pytest.raises(ConfigError, match="rate_mbit"):
        cfg(rate_mbit=0)
    with pytest.raises(ConfigError, match="trim_bytes"):
        cfg(trim_bytes=-1)
    with pytest.raises(ConfigError, match="last_hop"):
        cfg(last_hop=1)


def test_default_config_scales_with_rate():
    slow, fast = vq.default_port_config(100, False), vq.default_port_config(1000, True)
    assert slow.ecn_min_bytes < slow.ecn_max_bytes <= slow.trim_bytes
    assert fast.trim_bytes > slow.trim_bytes and fast.last_hop


def test_default_config_floors_follow_the_mtu():
    # 100 Mbit/s drains 12500 bytes per ms: ECN min 0.5 ms = 6250, max 2 ms = 25000, trim
    # 4 ms = 50000. At MTU 1500 the frame floors (3000 / +3000 / 15000) are below all three.
    c = vq.default_port_config(100, False, mtu=1500)
    assert (c.ecn_min_bytes, c.ecn_max_bytes, c.trim_bytes) == (6250, 25000, 50000)
    # At MTU 9000 the floors are 2 x 9000 = 18000 (min), 18000 + 18000 = 36000 (max) and
    # 10 x 9000 = 90000 (trim): each one wins over the drain-time term.
    c = vq.default_port_config(100, False, mtu=9000)
    assert (c.ecn_min_bytes, c.ecn_max_bytes, c.trim_bytes) == (18000, 36000, 90000)
    # 1000 Mbit/s (125000 bytes/ms): drain times win again even at 9000:
    # min 62500, max 250000, trim 500000.
    c = vq.default_port_config(1000, True, mtu=9000)
    assert (c.ecn_min_bytes, c.ecn_max_bytes, c.trim_bytes) == (62500, 250000, 500000)
    with pytest.raises(vq.ConfigError, match="mtu"):
        vq.default_port_config(100, False, mtu=0)


def test_a_long_round_trip_sizes_the_thresholds_in_bdps():
    """UEC's reference (htsim main_uec.cpp): ECN from 0.2 to 0.8 BDP; here trim at 1 BDP.
    30 Mbit/s x 28.6192 ms (random-loss.toml's longest round trip) = 107,322 B: ECN
    21,464..85,857 B, trim 107,322 B, each above its drain-time term (1,875 / 7,500 / 15,000 B).
    A short round trip leaves the drain times in force: 4 frames of BDP at MTU 1500 (6,072 B)
    change nothing."""
    c = vq.default_port_config(30, False, mtu=1500, bdp_bytes=107_322)
    assert (c.ecn_min_bytes, c.ecn_max_bytes, c.trim_bytes) == (21_464, 85_857, 107_322)
    assert vq.default_port_config(30, False, mtu=1500, bdp_bytes=6_072) == \
        vq.default_port_config(30, False, mtu=1500)
    with pytest.raises(vq.ConfigError, match="bdp_bytes"):
        vq.default_port_config(30, False, bdp_bytes=-1)


# ---------------------------------------------------------------- frames


def mrc_frame(outer=True, tseth=False, opcode=0xC7, payload=1000, tclass=2, dport=4791):
    body = struct.pack("!BBHII", opcode, 0, 0xFFFF, 0x11, 42)
    body += struct.pack("!I", (1 if tseth else 0) << 24 | 5)
    body += struct.pack("!Q", 123) if tseth else b""
    body += struct.pack("!QII", 0x1000, 7, 4096)
    body += struct.pack("!I", 0xABCD) if opcode in (0xC9, 0xCB) else b""
    body += bytes(range(256)) * (payload // 256) + bytes(payload % 256) + b"ICRC"
    udp = struct.pack("!HHHH", 999, dport, 8 + len(body), 0x1111) + body
    src, dst = b"\xfd" + bytes(14) + b"\x01", b"\xfd" + bytes(14) + b"\x02"
    ip = struct.pack("!IHBB", 6 << 28 | tclass << 20 | 0x12345, len(udp), 17, 64) + src + dst + udp
    if outer:
        ip = struct.pack("!IHBB", 6 << 28 | tclass << 20 | 7, len(ip), 41, 64) + src + dst + ip
    return bytes(12) + b"\x86\xdd" + ip


@pytest.mark.parametrize("outer,tseth,opcode", [
    (True, False, 0xC7), (False, False, 0xC6), (True, True, 0xC9), (False, True, 0xCB)])
def test_parse_and_trim_frame(outer, tseth, opcode):
    frame = mrc_frame(outer, tseth, opcode)
    info = parse_frame(frame)
    expected_hdr = vq.mrc_header_len(outer, tseth, opcode in (0xC9, 0xCB))
    assert info.mrc_data and info.header_len == expected_hdr and info.ect
    out = trim_frame(frame)
    assert len(out) == expected_hdr
    off_udp = info.inner_off + 4   # flow label / addresses of the outer header are untouched
    assert out[16:18] == frame[16:18] and out[20:off_udp] == frame[20:off_udp] or not outer
    off = info.inner_off
    assert struct.unpack_from("!H", out, off + 4)[0] == len(out) - off - 40
    if outer:
        assert struct.unpack_from("!H", out, 18)[0] == len(out) - 54
    assert struct.unpack_from("!HH", out, info.udp_off + 4) == (len(out) - info.udp_off, 0)
    assert out[info.udp_off + 8:] == frame[info.udp_off + 8:expected_hdr]
    again = parse_frame(out)
    assert again.dscp == DSCP_TRIMMED and again.ecn == 2
    assert parse_frame(trim_frame(frame, last_hop=True)).dscp == DSCP_TRIMMED_LASTHOP


def test_parse_rejects_non_mrc_and_short_frames():
    assert not parse_frame(mrc_frame(opcode=0xDC)).mrc_data          # SACK: control
    assert not parse_frame(mrc_frame(dport=4792)).mrc_data
    assert not parse_frame(mrc_frame()[:100]).mrc_data               # truncated headers
    assert not parse_frame(b"\x00" * 10).ipv6
    with pytest.raises(ValueError, match="not an MRC data frame"):
        trim_frame(mrc_frame(opcode=0xDD))


def test_set_traffic_class_keeps_flow_label():
    frame = mrc_frame(outer=False, tclass=0)
    ce = vq.set_traffic_class(frame, ecn=vq.ECN_CE)
    info = parse_frame(ce)
    assert info.ecn == 3 and info.dscp == 0
    assert struct.unpack_from("!I", ce, 14)[0] & 0xFFFFF == 0x12345
