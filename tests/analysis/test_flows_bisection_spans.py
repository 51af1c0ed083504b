"""A bisection's pairs run at their own pace: a collective iteration lasts as long as its slowest
pair, not from the first rank's start to the last rank's end (that span also counts how far one
pair has run ahead of the other, and grows every iteration). Hand-built worker logs; every
expected duration is worked out in the comments."""
import json

import pandas as pd

from analysis import flows, metrics, runmodel
from model.events import Event, Phase

MS = 1_000_000
T0 = 70_000 * MS
# Four ranks h0..h3 of a bisection: pairs h0 -> h2 and h1 -> h3 (rank r sends to r + 2).
# Pair h0/h2 takes 1000 ms per iteration, pair h1/h3 1200 ms, back to back from T0, so by
# iteration i the first pair leads by 200 * i ms. The receiver of each pair ends 5 ms after its
# sender and starts 3 ms after it.
PAIR_MS = {"h0": 1000, "h2": 1000, "h1": 1200, "h3": 1200}
ITERATIONS = 4


def spans(host: str) -> list[tuple[int, int]]:
    d = PAIR_MS[host]
    late_start, late_end = (3, 5) if host in ("h2", "h3") else (0, 0)
    return [(i * d + late_start, (i + 1) * d + late_end) for i in range(ITERATIONS)]


def write_run(tdir, collective: str = "bisection"):
    hosts = ["h0", "h1", "h2", "h3"]
    (tdir / "worker.json").write_text(json.dumps(
        {"transport": "mrc", "hosts": hosts, "collective": collective,
         "iterations": ITERATIONS}))
    for host in hosts:
        lines = [{"t_ns": T0, "host": host, "event": Event.PHASE, "phase": Phase.WARMUP_DONE}]
        lines += [{"t_ns": T0 + b * MS, "host": host, "event": Event.ITERATION, "iter": i,
                   "collective": collective, "transport": "mrc",
                   "start_ns": T0 + a * MS, "end_ns": T0 + b * MS, "bytes": 1024,
                   "verified": True} for i, (a, b) in enumerate(spans(host))]
        (tdir / f"worker-{host}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_coupled_groups_pair_a_bisection_and_keep_other_collectives_whole():
    hosts = ["a", "b", "c", "d", "e", "f"]
    assert flows.coupled_groups({"collective": "bisection"}, hosts) == [
        frozenset({"a", "d"}), frozenset({"b", "e"}), frozenset({"c", "f"})]
    assert flows.coupled_groups({"collective": "allreduce"}, hosts) == [frozenset(hosts)]


def test_slowest_group_span_by_hand():
    # pair {a, c}: 0 .. 1005 -> 1005; pair {b, d}: 200 .. 1400 -> 1200; all ranks: 0 .. 1400
    records = [("a", 0, 1000), ("c", 3, 1005), ("b", 200, 1400), ("d", 203, 1390)]
    groups = [frozenset({"a", "c"}), frozenset({"b", "d"})]
    assert flows.slowest_group_span_ns(records, groups) == 1200
    assert flows.slowest_group_span_ns(records, [frozenset("abcd")]) == 1400
    # a host in no group is a group of its own: e alone spans 1500
    assert flows.slowest_group_span_ns(records + [("e", 0, 1500)], groups) == 1500


def test_bisection_iterations_are_the_slowest_pair_not_the_drift(tmp_path):
    write_run(tmp_path)
    run = runmodel.load_transport(tmp_path)
    # slowest pair h1/h3 in iteration i: from h1's start 1200 i to h3's end 1200 (i + 1) + 5
    assert run.iteration_times_ms == [1205.0] * ITERATIONS
    assert run.summary_fields()["mean_iteration_ms"] == 1205.0
    # first rank's start to last rank's end, as before: 1205, 1405, 1605, 1805 (the 200 ms a
    # pair gains per iteration); the run keeps them as its first start and last end
    assert [(it.end_ns - it.start_ns) / MS for it in run.iterations] == [1205, 1405, 1605, 1805]


def test_coupled_collective_keeps_the_all_rank_span(tmp_path):
    write_run(tmp_path, collective="allreduce")
    run = runmodel.load_transport(tmp_path)
    assert run.iteration_times_ms == [1205.0, 1405.0, 1605.0, 1805.0]


def test_iteration_times_table_uses_the_groups(tmp_path):
    write_run(tmp_path)
    lines = [json.loads(x) for h in PAIR_MS
             for x in (tmp_path / f"worker-{h}.jsonl").read_text().splitlines()]
    ev = pd.DataFrame(lines)
    groups = flows.coupled_groups({"collective": "bisection"}, ["h0", "h1", "h2", "h3"])
    it = metrics.iteration_times(ev, groups)
    assert list(it["duration_s"].round(6)) == [1.205] * ITERATIONS
    assert list(metrics.iteration_times(ev)["duration_s"].round(6)) == [1.205, 1.405, 1.605, 1.805]
