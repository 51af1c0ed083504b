"""The lateness histogram's bucket layout: a log format, shared by the endpoint that writes the
histograms (traffic/nic/endpoint_support.py LatenessHistogram, the `lateness` event of
model/events.py) and the analysis that reads percentiles from them (analysis/fidelity.py).

A bucket is a quarter octave (4 per power of two), so a percentile read from the histogram is
within 19% of the true value at the cost of a few integer operations per sample. Buckets 0..3
hold 0..3 ns exactly; from 4 ns on, a bucket is the octave (bit length) and which quarter of it
the next two bits name.
"""
from __future__ import annotations

LATENESS_SUB_BUCKETS = 4
LATENESS_BUCKETS = 64 * LATENESS_SUB_BUCKETS


def lateness_bucket(ns: int) -> int:
    """The bucket of a lateness of `ns` nanoseconds (0 for anything up to 3 ns, never negative):
    its octave (bit length) and which quarter of the octave the next two bits name."""
    if ns < 4:
        return 0 if ns < 0 else ns
    bits = ns.bit_length()
    return (bits - 2) * LATENESS_SUB_BUCKETS + ((ns >> (bits - 3)) & 3)


def lateness_bucket_floor_ns(bucket: int) -> int:
    """The smallest lateness (ns) that falls into `bucket` (lateness_bucket's inverse)."""
    if bucket < 4:
        return bucket
    bits = bucket // LATENESS_SUB_BUCKETS + 2
    return (4 + bucket % LATENESS_SUB_BUCKETS) << (bits - 3)
