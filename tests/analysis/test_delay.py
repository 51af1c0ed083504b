"""analysis/delay.py: matching data packets across captures and the nearest-rank percentile."""
import math

import pandas as pd
import pytest

from analysis.delay import data_packet_delays_ns, delay_percentile_ms, fabric_delay_p999_ms

WRITE = 0xC7      # a data opcode
SACK = 0xDC       # not data


def row(direction, t, psn, retx=False, opcode=WRITE, src="fd00::1", dst="fd00:0:1::1", qp=2):
    return dict(time_ns=t, direction=direction, opcode=opcode, src=src, dst=dst, qp=qp,
                psn=psn, retx=retx)


def test_delays_match_psn_and_retransmission_flag():
    table = pd.DataFrame([
        row("tx", 1_000, 1), row("rx", 4_000, 1),                       # 3000 ns
        row("tx", 2_000, 2), row("rx", 9_000, 2),                       # 7000 ns
        row("tx", 3_000, 3),                                            # lost: no delay
        row("tx", 20_000, 3, retx=True), row("rx", 21_500, 3, retx=True),  # retry: 1500 ns
        row("tx", 5_000, 4, opcode=SACK), row("rx", 6_000, 4, opcode=SACK),  # not data
        row("tx", 7_000, 9, qp=5), row("rx", 7_100, 9, qp=6),           # other QP: no match
    ])
    assert sorted(data_packet_delays_ns(table)) == [1_500, 3_000, 7_000]


def test_a_psn_resent_without_a_flag_pairs_its_arrival_with_the_copy_that_arrived():
    # RoCE's go-back-N: PSN 7 sent at 1 ms into a black hole, sent again 4.29 s later (no
    # retransmission flag) and received 2 ms after that: 2 ms, not 4.292 s; PSN 8 sent twice
    # and received after the first copy: 500 us (the resend is a duplicate, not a delay)
    table = pd.DataFrame([
        row("tx", 1_000_000, 7), row("tx", 4_291_000_000, 7), row("rx", 4_293_000_000, 7),
        row("tx", 2_000_000, 8), row("rx", 2_500_000, 8), row("tx", 4_292_000_000, 8),
        row("rx", 4_294_000_000, 8),
    ])
    assert sorted(data_packet_delays_ns(table)) == [500_000, 2_000_000]


def test_nearest_rank_percentile_by_hand():
    # 1000 delays 1..1000 ms (in ns): rank ceil(0.999 * 1000) = 999 -> 999 ms.
    delays = [ms * 1_000_000 for ms in range(1, 1001)]
    assert delay_percentile_ms(delays, 99.9) == 999.0
    # 10 delays: rank ceil(9.99) = 10 -> the largest, 10 ms; median rank 5 -> 5 ms.
    ten = [ms * 1_000_000 for ms in range(10, 0, -1)]
    assert delay_percentile_ms(ten, 99.9) == 10.0
    assert delay_percentile_ms(ten, 50) == 5.0
    assert math.isnan(delay_percentile_ms([], 99.9))
    with pytest.raises(ValueError, match="percentile"):
        delay_percentile_ms(ten, 0)


def test_fabric_delay_p999_and_bad_input():
    table = pd.DataFrame([row("tx", 0, 1), row("rx", 2_500_000, 1),
                          row("tx", 0, 2), row("rx", 1_000_000, 2)])
    assert fabric_delay_p999_ms(table) == 2.5
    with pytest.raises(ValueError, match="psn"):
        fabric_delay_p999_ms(table.drop(columns="psn"))
