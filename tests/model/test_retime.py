"""A server's logs and captures put on this machine's clock (model/retime.py). Expected
values are the arithmetic done by hand on the stated offsets."""
import json
import re
import struct
from pathlib import Path

import pytest

from model import retime as C
from model.clockalign import Alignment, Estimate
from model.events import CLOCK_FIELDS, Event

REPO = Path(__file__).resolve().parents[2]


def minus(offset):
    return lambda t: t - offset


def test_every_clock_field_of_an_event_moves_and_durations_stay():
    line = json.dumps({"t_ns": 5_000, "event": Event.ITERATION, "start_ns": 4_000, "end_ns": 4_900,
                       "rtt_ns": 300, "until_ns": 6_000}) + "\n"
    moved = json.loads(C.shift_event_line(line, minus(1_000)))
    assert (moved["t_ns"], moved["start_ns"], moved["end_ns"], moved["until_ns"]) == (
        4_000, 3_000, 3_900, 5_000)
    assert moved["rtt_ns"] == 300                   # a duration: the same on every clock
    assert C.shift_event_line(line, minus(1_000)).endswith("\n")


def test_a_line_cut_by_a_crash_and_a_non_object_stay_as_they_were():
    log = '{"t_ns": 10, "event": "x"}\n{"t_ns": 2\n[1, 2]\n'
    assert C.shift_event_log(log, minus(3)).splitlines() == [
        '{"t_ns": 7, "event": "x"}', '{"t_ns": 2', "[1, 2]"]


def test_the_alignment_maps_a_server_time_onto_ours():
    # the server's clock runs 2 ms ahead at the start and 2.001 ms ahead at the end, 1 s later
    align = Alignment(Estimate(2_000_000, 50, 0), Estimate(2_001_000, 50, 1_000_000_000))
    line = json.dumps({"t_ns": 2_000_000 + 500_000_000})   # half-way, on the server's clock
    assert json.loads(C.shift_event_line(line, align.to_reference_ns))["t_ns"] == \
        500_000_000 - 500   # the offset half-way is 2.0005 ms


def pcap(magic, records, order="<"):
    head = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    body = b"".join(struct.pack(order + "IIII", s, f, len(d), len(d)) + d for s, f, d in records)
    return head + body


def stamps(data, order="<"):
    out, at = [], C.PCAP_HEADER_LEN
    while at + 16 <= len(data):
        s, f, caplen, _ = struct.unpack_from(order + "IIII", data, at)
        out.append((s, f))
        at += 16 + caplen
    return out


def test_a_microsecond_capture_moves_by_the_shift_and_carries_into_the_seconds():
    data = pcap(0xA1B2C3D4, [(100, 999_999, b"abc"), (101, 5, b"de")])
    moved = C.shift_pcap(data, 2_000)                     # +2 us
    assert stamps(moved) == [(101, 1), (101, 7)]
    assert moved[C.PCAP_HEADER_LEN + 16:C.PCAP_HEADER_LEN + 19] == b"abc"   # payload kept
    assert stamps(C.shift_pcap(data, -1_000_000_000)) == [(99, 999_999), (100, 5)]


def test_a_big_endian_nanosecond_capture_keeps_its_order_and_resolution():
    data = pcap(0xA1B23C4D, [(7, 999_999_999, b"x")], order=">")
    assert stamps(C.shift_pcap(data, 1), order=">") == [(8, 0)]


def test_a_record_cut_short_at_the_end_is_kept():
    data = pcap(0xA1B2C3D4, [(1, 0, b"abcd")]) + b"\x01\x02\x03"
    moved = C.shift_pcap(data, 1_000)
    assert stamps(moved) == [(1, 1)] and moved.endswith(b"\x01\x02\x03")


@pytest.mark.parametrize("data, words", [(b"\x00" * 5, "24-byte header"),
                                         (b"\x0a\x0d\x0d\x0a" + b"\x00" * 30, "magic")])
def test_what_is_not_a_pcap_is_named(data, words):
    with pytest.raises(C.CaptureFormatError, match=words):
        C.shift_pcap(data, 0)


def test_the_wall_shift_joins_both_machines_readings():
    # server: wall - mono = 1_000; here: wall - mono = 5_000; the server's mono is 300 ahead.
    # A server stamp W: its mono W - 1_000, ours W - 1_300, our wall W + 3_700.
    assert C.wall_shift_ns(1_000, 5_000, 300) == 3_700


# Every *_ns key the endpoints and workers log, as a time or as a duration: a new one must be
# classified here, or a run over servers would leave it on the wrong clock.
DURATIONS = {"base_rtt_ns", "fabric_delay_bound_ns", "fabric_reorder_bound_ns",
             "loss_verdict_ns", "nscc_frame_rtt_ns", "nscc_min_base_rtt_ns", "probe_period_ns",
             "propagation_rtt_ns", "rto_ns", "rtt_ns", "skip_ns", "used_ns",
             "target_delay_ns", "reference_rtt_ns", "qa_threshold_ns", "probe_timeout_ns",
             "other_path_margin_ns", "adjust_period_ns"}


def logged_ns_names():
    names = set()
    for path in (REPO / "traffic").rglob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r'"([a-z_]+_ns)":', text))
        for call in re.findall(r"\.emit\(Event\.[A-Z_]+,([^)]*)\)", text, re.S):
            names |= set(re.findall(r"\b([a-z_]+_ns)=", call))
    return names


def test_every_logged_time_field_is_a_clock_field_or_a_duration():
    unknown = logged_ns_names() - set(CLOCK_FIELDS) - DURATIONS
    assert not unknown, f"classify in model/events.CLOCK_FIELDS or here: {sorted(unknown)}"
    assert {"t_ns", "start_ns", "end_ns", "until_ns"} <= logged_ns_names()


def test_an_ovs_log_stamp_moves_at_its_own_precision():
    log = ("2026-12-01T01:38:13.123Z|00012|timeval|WARN|Unreasonably long 1234ms poll interval\n"
           "no stamp here\n2026-12-01T23:59:59Z|x\n")
    assert C.shift_iso_stamps(log, 1_900_000_000).splitlines() == [
        "2026-12-01T01:38:15.023Z|00012|timeval|WARN|Unreasonably long 1234ms poll interval",
        "no stamp here", "2026-12-02T00:00:00Z|x"]     # 23:59:59 + 1.9 s, to the second
    assert C.shift_iso_stamps("2026-12-01T00:00:00.500Z|y", -1_000_000_000) == \
        "2026-11-30T23:59:59.500Z|y"


def test_a_shift_between_two_ticks_rounds_to_the_nearer():
    data = pcap(0xA1B2C3D4, [(100, 5, b"x")])
    assert stamps(C.shift_pcap(data, 1_700)) == [(100, 7)]      # 6.7 us -> 7
    assert stamps(C.shift_pcap(data, 1_300)) == [(100, 6)]      # 6.3 us -> 6
