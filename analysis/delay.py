"""One-way delay of MRC data packets through the fabric, host port to host port, from captures.

A data packet is matched between the sender's capture (direction "tx") and the receiver's
(direction "rx") by (source address, destination address, destination QP, PSN, retransmission
flag): an MRC retransmission reuses the PSN but carries the flag, so the original and the retry
are two packets; a packet sent on one plane and received on another cannot happen (a plane is a
separate network), so the plane is not part of the key. RoCE's go-back-N resends a PSN without
any flag, so one key can leave several times: its first arrival is paired with the latest
departure at or before it, the copy that arrived (the first departure of a lost original would
make the retry's arrival look held for a whole ACK timeout). Captures' time_ns must share one clock
(analysis/pcap.load_captures aligns them to CLOCK_MONOTONIC with the run's clock.json).
Packets seen only on one side (lost, or outside one capture's window) are not delays and are
left out; trimmed packets are kept (their header crossed the fabric: that delay is real).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.pcap import DATA_OPCODES

MATCH_KEY = ["src", "dst", "qp", "psn", "retx"]
REQUIRED_COLUMNS = ["time_ns", "direction", "opcode", *MATCH_KEY]


def data_packet_delays_ns(packets: pd.DataFrame) -> np.ndarray:
    """One-way delays (ns) of every MRC data packet seen leaving one host port and arriving at
    another. packets: rows of analysis.pcap captures (any number of hosts and planes)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in packets.columns]
    if missing:
        raise ValueError(f"capture table lacks column(s) {missing}; need {REQUIRED_COLUMNS}")
    data = packets[packets["opcode"].isin(DATA_OPCODES)]
    key = data[MATCH_KEY].astype(str)
    frame = key.assign(time_ns=data["time_ns"].astype("int64"),
                       direction=data["direction"].astype(str))
    sent = frame[frame["direction"] == "tx"].drop(columns="direction")
    received = frame[frame["direction"] == "rx"].drop(columns="direction")
    both = pair_arrivals(sent.rename(columns={"time_ns": "sent_ns"}),
                         received.rename(columns={"time_ns": "received_ns"}))
    return (both["received_ns"] - both["sent_ns"]).to_numpy(dtype=np.int64)


def pair_arrivals(sent: pd.DataFrame, received: pd.DataFrame) -> pd.DataFrame:
    """Each key's first arrival (a row of `received`: MATCH_KEY, received_ns and its other
    columns) with the latest departure of that key at or before it (the row of `sent`:
    MATCH_KEY, sent_ns and its other columns); keys never sent before they arrived are left
    out. The key columns must have the same types on both sides."""
    first = (received.sort_values("received_ns", kind="stable")
             .groupby(MATCH_KEY, sort=False, observed=True).first().reset_index())
    both = pd.merge_asof(first.sort_values("received_ns", kind="stable"),
                         sent.sort_values("sent_ns", kind="stable"), left_on="received_ns",
                         right_on="sent_ns", by=MATCH_KEY, direction="backward")
    both = both.dropna(subset=["sent_ns"])
    return both.astype({"sent_ns": "int64", "received_ns": "int64"})


def delay_percentile_ms(delays_ns, percentile: float = 99.9) -> float:
    """The percentile (nearest-rank: the smallest delay with at least `percentile`% of the
    delays at or below it) in ms; NaN when there is no delay."""
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {percentile!r}")
    values = np.sort(np.asarray(delays_ns, dtype=np.int64))
    if values.size == 0:
        return float("nan")
    # round first: 99.9 / 100 * 1000 is 999.0000000000001 in binary floating point
    rank = max(1, int(np.ceil(round(percentile * values.size / 100, 9))))
    return float(values[rank - 1]) / 1e6


def ack_round_trips_ns(packets: pd.DataFrame) -> np.ndarray:
    """Round trips (ns) as the data sender's timers see them: a SACK's arrival at the sender's
    host port minus the send stamp it echoes (the TSETH of the data packet that asked for it,
    taken by the sender when it built the packet). Only SACKs that echo a stamp count."""
    for column in ("time_ns", "direction", "opname", "sack_echo_ts"):
        if column not in packets.columns:
            raise ValueError(f"capture table lacks column {column!r}")
    sacks = packets[(packets["opname"] == "SACK") & (packets["direction"] == "rx")]
    echo = sacks["sack_echo_ts"].astype("Float64").fillna(0).to_numpy(dtype=np.float64)
    times = sacks["time_ns"].to_numpy(dtype=np.float64)
    keep = echo > 0
    return (times[keep] - echo[keep]).astype(np.int64)


def fabric_delay_p999_ms(packets: pd.DataFrame) -> float:
    """99.9th percentile one-way fabric delay of MRC data packets, ms (NaN without a match)."""
    return delay_percentile_ms(data_packet_delays_ns(packets), 99.9)
