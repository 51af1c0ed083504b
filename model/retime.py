"""A server's logs and captures moved onto this machine's clock, when a run over several servers
brings them back (emulation/cluster/run_servers.py): the run's analysis then reads one timeline.

Event logs carry CLOCK_MONOTONIC times of the server that wrote them, in the fields
model/events.CLOCK_FIELDS; each is mapped by the server's measured alignment
(model/clockalign.Alignment.to_reference_ns). A line that is not a JSON object (one cut by a
crash) is kept as it is: the reader skips it as it would here.

Captures carry the server's wall clock (CLOCK_REALTIME, as tcpdump stamps them); the run's
analysis puts pcap times on the monotonic axis with this machine's own wall-to-monotonic
reading (the run directory's clock.json), so a server's capture is shifted by how far its wall
clock stands from this machine's at the same monotonic instant. pcap's record header holds
seconds and a fraction (microseconds, or nanoseconds under the nanosecond magic), in the file's
own byte order; a record cut short at the end is kept as it is.

Pure: text and bytes in, text and bytes out.
"""
from __future__ import annotations

import json
import re
import struct
from datetime import datetime, timedelta, timezone
from typing import Callable

from model.events import CLOCK_FIELDS

NS_PER_S = 1_000_000_000
PCAP_HEADER_LEN = 24
RECORD_HEADER_LEN = 16
# magic number (as read little-endian) -> (byte order, ns per unit of the fraction)
PCAP_MAGICS = {0xA1B2C3D4: ("<", 1000), 0xA1B23C4D: ("<", 1),
               0xD4C3B2A1: (">", 1000), 0x4D3CB2A1: (">", 1)}


# A log line's leading UTC stamp as Open vSwitch writes it: 2026-12-01T01:38:13.123Z|...
ISO_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z")


class CaptureFormatError(ValueError):
    """A capture that is not a pcap file this module can shift."""


def shift_event_line(line: str, to_reference: Callable[[int], int]) -> str:
    """One JSONL line with every clock field mapped by `to_reference` (server ns -> this
    machine's ns); a line that is not a JSON object, unchanged."""
    body = line.rstrip("\n")
    try:
        event = json.loads(body)
    except ValueError:
        return line
    if not isinstance(event, dict):
        return line
    for name in CLOCK_FIELDS:
        value = event.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            event[name] = to_reference(value)
    return json.dumps(event) + ("\n" if line.endswith("\n") else "")


def shift_event_log(text: str, to_reference: Callable[[int], int]) -> str:
    return "".join(shift_event_line(line, to_reference) for line in text.splitlines(True))


def shift_iso_stamps(text: str, shift_ns: int) -> str:
    """Every line's leading ISO-8601 UTC stamp moved by shift_ns, at the stamp's own precision
    (digits after the second); a line without one, unchanged."""
    def moved(m: re.Match) -> str:
        stamp = datetime.fromisoformat(m.group(1) + (m.group(2) or "")).replace(
            tzinfo=timezone.utc) + timedelta(microseconds=round(shift_ns / 1000))
        digits = len(m.group(2)) - 1 if m.group(2) else 0
        text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
        if digits:
            text += "." + f"{stamp.microsecond:06d}"[:digits].ljust(digits, "0")
        return text + "Z"
    return "".join(ISO_STAMP.sub(moved, line, count=1) for line in text.splitlines(True))


def wall_shift_ns(server_wall_minus_mono_ns: int, here_wall_minus_mono_ns: int,
                  server_offset_ns: float) -> int:
    """What to add to a server's wall-clock stamp to get this machine's wall clock at the same
    instant: its stamp on its monotonic clock, that on ours (minus the offset, server minus
    ours), then ours on our wall clock."""
    return round(here_wall_minus_mono_ns - server_wall_minus_mono_ns - server_offset_ns)


def shift_pcap(data: bytes, shift_ns: int) -> bytes:
    """A pcap file with every record's time moved by shift_ns (rounded to its resolution)."""
    if len(data) < PCAP_HEADER_LEN:
        raise CaptureFormatError(f"a pcap file starts with a {PCAP_HEADER_LEN}-byte header; "
                                 f"this one has {len(data)} bytes")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in PCAP_MAGICS:
        raise CaptureFormatError(f"not a pcap file (magic 0x{magic:08x})")
    order, unit_ns = PCAP_MAGICS[magic]
    record = struct.Struct(order + "IIII")
    out = bytearray(data)
    at = PCAP_HEADER_LEN
    while at + RECORD_HEADER_LEN <= len(data):
        sec, frac, caplen, wirelen = record.unpack_from(data, at)
        stamp = sec * NS_PER_S + frac * unit_ns + shift_ns
        if stamp < 0:
            raise CaptureFormatError(f"the shift of {shift_ns} ns takes a record at offset {at} "
                                     "before 1970")
        sec, rest = divmod(stamp, NS_PER_S)
        frac = round(rest / unit_ns)
        if frac * unit_ns >= NS_PER_S:          # a fraction rounded up to a whole second
            sec, frac = sec + 1, 0
        record.pack_into(out, at, sec, frac, caplen, wirelen)
        at += RECORD_HEADER_LEN + caplen
    return bytes(out)
