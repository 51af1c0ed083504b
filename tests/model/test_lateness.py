"""The lateness histogram's bucket layout (model/lateness.py), worked by hand: buckets 0..3 are
0..3 ns exactly, then four buckets per power of two."""
import pytest

from model.lateness import (LATENESS_BUCKETS, LATENESS_SUB_BUCKETS, lateness_bucket,
                            lateness_bucket_floor_ns)


def test_the_layout_is_quarter_octaves_over_64_octaves():
    assert LATENESS_SUB_BUCKETS == 4
    assert LATENESS_BUCKETS == 256


@pytest.mark.parametrize("ns,bucket", [(0, 0), (1, 1), (2, 2), (3, 3)])
def test_zero_to_three_ns_map_to_themselves(ns, bucket):
    assert lateness_bucket(ns) == bucket


def test_negative_lateness_is_bucket_zero():
    assert lateness_bucket(-1) == 0
    assert lateness_bucket(-10**9) == 0


@pytest.mark.parametrize("ns,bucket", [
    (4, 4),          # 0b100: bit length 3 -> (3 - 2) * 4 + 0b00
    (5, 5),          # 0b101: the next two bits 01
    (6, 6),          # 0b110
    (7, 7),          # 0b111
    (8, 8),          # 0b1000: bit length 4 -> 2 * 4 + 0b00
    (9, 8),          # 0b1001: the third bit is below the quarter: same bucket as 8
    (10, 9),         # 0b1010: 2 * 4 + 0b01
    (15, 11),        # 0b1111: 2 * 4 + 0b11
    (16, 12),        # 0b10000: 3 * 4 + 0b00
    (1000, 35),      # 0b1111101000: bit length 10 -> 8 * 4 + 0b11
    (1024, 36),      # 2^10: bit length 11 -> 9 * 4 + 0b00
])
def test_a_bucket_is_the_octave_and_its_quarter(ns, bucket):
    assert lateness_bucket(ns) == bucket


@pytest.mark.parametrize("bucket,floor", [
    (0, 0), (3, 3), (4, 4), (7, 7), (8, 8), (9, 10), (11, 14), (12, 16), (35, 896), (36, 1024),
])
def test_floors_by_hand(bucket, floor):
    assert lateness_bucket_floor_ns(bucket) == floor


def test_floors_round_trip():
    for bucket in range(LATENESS_BUCKETS):
        floor = lateness_bucket_floor_ns(bucket)
        assert lateness_bucket(floor) == bucket
        if bucket + 1 < LATENESS_BUCKETS:
            assert lateness_bucket(lateness_bucket_floor_ns(bucket + 1) - 1) == bucket
