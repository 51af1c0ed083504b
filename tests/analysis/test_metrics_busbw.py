"""Bus bandwidth as nccl-tests defines it (doc/PERFORMANCE.md): algbw = S / t with S the
operation's size, busbw = algbw x a per-collective factor (all-reduce 2(n-1)/n; reduce-scatter,
all-gather and all-to-all (n-1)/n; broadcast, reduce and send/recv 1).

The hand-computed case used throughout: n = 4 ranks, S = 1 MiB = 1,048,576 B, t = 0.5 s.
    algbw = 1,048,576 / 0.5 = 2,097,152 B/s = 16,777,216 bit/s = 16.777216 Mbit/s
    all-reduce     x 2*3/4 = 1.5  -> 3,145,728 B/s = 25.165824 Mbit/s
    reduce-scatter, all-gather, all-to-all  x 3/4 -> 1,572,864 B/s = 12.582912 Mbit/s
    send/recv, broadcast, reduce  x 1 -> 16.777216 Mbit/s
    incast (n-1 senders straight into one link; not in nccl-tests) x 3 -> 50.331648 Mbit/s
"""
import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from model.events import Event
from tests.helpers.workers import events, start_workers
from traffic.workload import collectives as C

MIB = 1 << 20
ALGBW_MBIT = 16.777216


def mbit(bytes_per_s):
    return float(bytes_per_s) * 8 / 1e6


@pytest.mark.parametrize("collective, busbw_mbit", [
    ("allreduce", 25.165824), ("all_reduce", 25.165824),
    ("reduce_scatter", 12.582912), ("allgather", 12.582912), ("alltoall", 12.582912),
    ("sendrecv", 16.777216), ("broadcast", 16.777216), ("reduce", 16.777216),
    ("incast", 50.331648)])
def test_every_collective_factor_by_hand(collective, busbw_mbit):
    algbw, busbw = m.bus_bandwidth(MIB, 0.5, 4, collective)
    assert mbit(algbw) == pytest.approx(ALGBW_MBIT, rel=1e-12)
    assert mbit(busbw) == pytest.approx(busbw_mbit, rel=1e-12)


def test_every_worker_collective_has_a_factor():
    for collective in C.COLLECTIVES:
        assert m.busbw_factor(collective, 4) > 0


def test_nccl_size_is_the_buffer_not_what_a_rank_sends():
    """1 MiB on 4 ranks: an all-reduce rank sends 2*3/4 of it (1,572,864 B) but S is 1 MiB;
    reduce-scatter / all-gather / all-to-all ranks send 3/4 (786,432 B), S is the whole buffer
    (NCCL: recvcount or sendcount x n)."""
    n = MIB // 4
    for collective in C.COLLECTIVES:
        assert C.nccl_size_bytes(collective, n) == MIB
    assert C.bytes_moved("allreduce", n, 4) == 1_572_864
    assert C.bytes_moved("allgather", n, 4) == 786_432
    assert C.bytes_moved("incast", n, 4, rank=0, target=0) == 0
    assert C.bytes_moved("incast", n, 4, rank=3, target=0, victim=(3, 2)) == 2 * MIB


def test_analysis_takes_S_from_the_event_not_the_bytes_sent():
    """Two ranks' iteration events of one 4-rank all-reduce, as the worker writes them: the
    slowest rank takes 0.5 s. busbw must be 25.165824 Mbit/s; from `bytes` (1,572,864) it would
    be 1.5 x too high, 37.748736."""
    ev = pd.DataFrame([
        {"t_ns": 10, "host": f"h{h}", "event": Event.ITERATION, "collective": "allreduce",
         "transport": "mrc", "iter": 0, "start_ns": 1_000_000_000,
         "end_ns": 1_000_000_000 + (500_000_000 if h == 3 else 400_000_000),
         "bytes": 1_572_864, "nccl_size_bytes": MIB, "verified": True} for h in (0, 3)])
    it = m.iteration_bandwidth(m.iteration_times(ev), world_size=4)
    assert mbit(it["algbw_Bps"].iloc[0]) == pytest.approx(ALGBW_MBIT)
    assert mbit(it["busbw_Bps"].iloc[0]) == pytest.approx(25.165824)


def test_real_workers_log_S_and_the_analysis_gets_busbw(tmp_path):
    """Four TCP workers on 127.0.0.1, all-reduce of 1 MiB: every iteration event carries
    nccl_size_bytes = 1 MiB next to bytes = 1,572,864, and busbw = 1 MiB / t x 1.5 with t the
    slowest rank's span."""
    procs = start_workers(tmp_path, 4, message_bytes=MIB, iterations=2, warmup=0, qps_per_peer=1)
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    evs = [e for r in range(4) for e in events(tmp_path / "logs" / f"worker-h{r}.jsonl")]
    its = [e for e in evs if e["event"] == Event.ITERATION]
    assert len(its) == 8
    assert all(e["nccl_size_bytes"] == MIB and e["bytes"] == 1_572_864 for e in its)
    table = m.iteration_bandwidth(m.iteration_times(pd.DataFrame(evs)), world_size=4)
    for i in range(2):
        mine = [e for e in its if e["iter"] == i]
        t = (max(e["end_ns"] for e in mine) - min(e["start_ns"] for e in mine)) / 1e9
        row = table[table["iter"] == i].iloc[0]
        assert row["busbw_Bps"] == pytest.approx(MIB / t * 1.5)


@pytest.mark.parametrize("busbw, planes, link_mbit, fraction", [
    # 25.165824 Mbit/s over 2 planes x 100 Mbit/s = 0.12582912
    (3_145_728.0, 2, 100.0, 0.12582912),
    # 12.5e6 B/s = 100 Mbit/s on 1 x 100 Mbit/s: the full line rate
    (12_500_000.0, 1, 100, 1.0),
    # median of [1, 2, 3, 100] x 1.25e6 B/s = 2.5 x 1.25e6 B/s = 25 Mbit/s over 4 x 50 Mbit/s
    ([1.25e6, 2.5e6, 3.75e6, 125e6], 4, 50.0, 0.125),
])
def test_line_rate_fraction_by_hand(busbw, planes, link_mbit, fraction):
    assert m.line_rate_fraction(busbw, planes, link_mbit) == pytest.approx(fraction, rel=1e-12)


def test_line_rate_fraction_of_nothing_is_nan_and_bad_rates_are_named():
    assert np.isnan(m.line_rate_fraction([], 2, 100.0))
    assert np.isnan(m.line_rate_fraction([float("nan")], 2, 100.0))
    with pytest.raises(ValueError, match="planes"):
        m.line_rate_fraction(1.0, 0, 100.0)
    with pytest.raises(ValueError, match="host_link_mbit"):
        m.line_rate_fraction(1.0, 2, float("nan"))
