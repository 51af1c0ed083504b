"""An incast with a victim-only flow: the victim's hosts iterate at their own pace, so the
collective's iterations (summary.json's mean/slowest iteration) are the incast ranks' alone.
Hand-built worker logs; every expected duration is worked out below."""
import json

from analysis import runmodel
from model.events import Event, Phase

MS = 1_000_000
T0 = 50_000 * MS
# incast ranks h0 (target), h2, h3: iteration i runs [i*300, i*300 + 250] ms after T0, except h3
# ends its iteration 1 at 1*300 + 280 ms; the victim flow h1 <- h4 (ranks 4 and 1) takes 1000 ms
# per iteration, back to back from T0
INCAST = {"h0": [(0, 250), (300, 550), (600, 850)],
          "h2": [(0, 240), (300, 540), (600, 840)],
          "h3": [(0, 250), (300, 580), (600, 850)]}
VICTIM = {"h1": [(0, 1000), (1000, 2000), (2000, 3000)],
          "h4": [(0, 990), (1000, 1990), (2000, 2990)]}


def write_run(tdir, victim_only: bool):
    hosts = ["h0", "h1", "h2", "h3", "h4"]
    config = {"transport": "mrc", "hosts": hosts, "collective": "incast", "iterations": 3,
              "incast_target": 0, "victim": [4, 1], "victim_only": victim_only}
    (tdir / "worker.json").write_text(json.dumps(config))
    for host, spans in {**INCAST, **VICTIM}.items():
        lines = [{"t_ns": T0, "host": host, "event": Event.PHASE, "phase": Phase.WARMUP_DONE}]
        lines += [{"t_ns": T0 + b * MS, "host": host, "event": Event.ITERATION, "iter": i,
                   "start_ns": T0 + a * MS, "end_ns": T0 + b * MS, "bytes": 1024,
                   "verified": True} for i, (a, b) in enumerate(spans)]
        (tdir / f"worker-{host}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_victim_only_flow_is_not_part_of_the_collective_iterations(tmp_path):
    write_run(tmp_path, victim_only=True)
    run = runmodel.load_transport(tmp_path)
    # slowest incast rank per iteration: 250, 580 - 300 = 280, 850 - 600 = 250
    assert run.iteration_times_ms == [250.0, 280.0, 250.0]
    assert [it.ranks for it in run.iterations] == [3, 3, 3]
    assert run.traffic_end_ns == T0 + 3000 * MS      # the victim still counts for the traffic
    fields = run.summary_fields()
    assert fields["mean_iteration_ms"] == (250 + 280 + 250) / 3
    assert fields["slowest_iteration_ms"] == 280.0


def test_a_victim_that_is_also_an_incast_rank_stays_in_the_iterations(tmp_path):
    write_run(tmp_path, victim_only=False)
    run = runmodel.load_transport(tmp_path)
    # every host is a rank: iteration i spans the first start to the last end, the victim's
    assert run.iteration_times_ms == [1000.0, 1700.0, 2400.0]
