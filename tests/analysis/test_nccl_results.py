"""nccl-tests' result row (doc/PERFORMANCE.md): algbw = S / t (GB = 10^9 B, t the mean time over
the timed iterations), busbw = algbw x the collective's factor, #wrong = elements that failed.

Hand-worked case: all-reduce of S = 64 MiB = 67,108,864 B over n = 4 ranks, mean time 0.5 s:
    algbw = 67,108,864 / 0.5 / 1e9 = 0.134217728 GB/s
    busbw = algbw x 2(n-1)/n = x 1.5 = 0.201326592 GB/s
    count = 67,108,864 / 4 (float32) = 16,777,216 elements
"""
import json

import numpy as np
import pytest

from analysis import nccl_results as N
from analysis import runmodel
from model.events import Event
from tests.helpers import synthetic_run
from traffic.workload import collectives as C

S = 64 << 20


def test_all_reduce_64_mib_over_4_ranks_in_half_a_second():
    row = N.result_row("allreduce", S, 4, [300.0, 500.0, 700.0], 0)
    assert row["count"] == 16_777_216 and row["type"] == "float" and row["redop"] == "sum"
    assert row["time_median_ms"] == 500.0 and row["time_mean_ms"] == 500.0
    assert row["algbw_GBps"] == pytest.approx(0.134217728, rel=1e-12)
    assert row["busbw_GBps"] == pytest.approx(0.201326592, rel=1e-12)
    assert row["wrong"] == 0


def test_bandwidth_comes_from_the_mean_time_as_nccl_tests_prints_it():
    """times 200, 300, 1000 ms: median 300, mean 500; algbw is S / 0.5 s, not S / 0.3 s."""
    row = N.result_row("allreduce", S, 4, [200.0, 300.0, 1000.0], 0)
    assert row["time_median_ms"] == 300.0 and row["time_mean_ms"] == 500.0
    assert row["algbw_GBps"] == pytest.approx(0.134217728, rel=1e-12)


@pytest.mark.parametrize("collective, redop, busbw", [
    ("allgather", "none", 0.100663296),          # x 3/4
    ("reduce_scatter", "sum", 0.100663296),      # x 3/4
    ("alltoall", "none", 0.100663296),           # x 3/4
    ("sendrecv", "none", 0.134217728),           # x 1
])
def test_other_collectives_by_hand(collective, redop, busbw):
    row = N.result_row(collective, S, 4, [500.0], 0)
    assert row["redop"] == redop
    assert row["busbw_GBps"] == pytest.approx(busbw, rel=1e-12)


def test_no_iteration_gives_no_time_and_no_bandwidth():
    row = N.result_row("allreduce", S, 4, [None, 0.0], None)
    assert row["time_mean_ms"] is None and row["algbw_GBps"] is None and row["busbw_GBps"] is None
    assert row["wrong"] is None and row["size_bytes"] == S


def test_table_fits_100_columns_and_shows_each_field():
    rows = {"mrc": N.result_row("allreduce", S, 4, [500.0], 0),
            "roce": N.result_row("allreduce", S, 4, [], None)}
    text = N.table(rows)
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 100
    assert lines[1].split() == ["mrc", "67108864", "16777216", "float", "sum", "500.0", "500.0",
                                "0.1342", "0.2013", "0"]
    assert lines[2].split()[-4:] == ["N/A", "N/A", "N/A", "N/A"]


def test_wrong_elements_counts_every_differing_element():
    expect = {"result": np.arange(8, dtype=np.float32)}
    got = expect["result"].copy()
    got[[1, 4, 7]] += 1
    assert C.wrong_elements({"result": got}, expect) == 3
    assert C.wrong_elements({"result": expect["result"].copy()}, expect) == 0
    assert C.wrong_elements({}, expect) == 8
    assert C.wrong_elements({"result": got[:4]}, expect) == 8


def _logs(tmp_path, wrong_of):
    """The synthetic 4-host run with iteration 2 of h0 and h1 failing verification."""
    synthetic_run.write_worker_logs(tmp_path, 10**12, iterations=5)
    for h, wrong in wrong_of.items():
        path = tmp_path / f"worker-h{h}.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        for e in lines:
            if e["event"] == Event.ITERATION:
                e["wrong"] = 0
                if e["iter"] == 2:
                    e["verified"] = False
                    if wrong is None:
                        del e["wrong"]
                    else:
                        e["wrong"] = wrong
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_run_model_sums_wrong_elements_over_ranks(tmp_path):
    _logs(tmp_path, {0: 5, 1: 2})
    model = runmodel.load_transport(tmp_path, name="tcp")
    assert model.wrong_elements == 7
    assert model.summary_fields()["wrong_elements"] == 7
    assert not model.data_verified


def test_run_model_does_not_guess_a_count_the_logs_do_not_give(tmp_path):
    _logs(tmp_path, {0: 5, 1: None})
    assert runmodel.load_transport(tmp_path, name="tcp").wrong_elements is None


def test_a_clean_run_has_no_wrong_elements(tmp_path):
    synthetic_run.write_worker_logs(tmp_path, 10**12, iterations=5)
    assert runmodel.load_transport(tmp_path, name="tcp").wrong_elements == 0


def test_transport_result_reads_the_collective_from_worker_json(tmp_path):
    synthetic_run.write_worker_logs(tmp_path, 10**12, iterations=5)
    (tmp_path / "worker.json").write_text(json.dumps(
        {"collective": "allreduce", "message_bytes": S, "world_size": 4,
         "hosts": ["h0", "h1", "h2", "h3"]}))
    model = runmodel.load_transport(tmp_path, name="tcp")
    row = N.transport_result(tmp_path, model)
    # every synthetic iteration lasts 100 ms: algbw = 64 MiB / 0.1 s = 0.67108864 GB/s
    assert row["time_median_ms"] == pytest.approx(100.0)
    assert row["algbw_GBps"] == pytest.approx(0.67108864, rel=1e-6)
    (tmp_path / "worker.json").write_text("[]")
    with pytest.raises(ValueError, match="worker.json"):
        N.transport_result(tmp_path, model)
