"""A runner transport directory holds worker-*.jsonl and endpoint-*.jsonl per host: the analysis
reads both, keeps the endpoint's EV/retransmission events and counts delivered bytes once."""
import json

from analysis.logs import load_events
from model.events import Event


def write(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_worker_and_endpoint_logs_are_merged_without_double_goodput(tmp_path):
    write(tmp_path / "worker-h0.jsonl", [
        {"t_ns": 1, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 100},
        {"t_ns": 2, "host": "h0", "event": Event.ITERATION, "iter": 0, "start_ns": 1, "end_ns": 2,
         "collective": "allreduce"}])
    write(tmp_path / "endpoint-h0.jsonl", [
        {"t_ns": 1, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 999},
        {"t_ns": 3, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": 5, "new": "ASSUMED_BAD"},
        {"t_ns": 4, "host": "h0", "event": Event.COUNTERS, "sent": 7}])
    df = load_events(tmp_path)
    assert sorted(df["event"]) == sorted([Event.EV_STATE, Event.GOODPUT, Event.ITERATION])
    assert df[df["event"] == Event.GOODPUT]["rx_bytes"].tolist() == [100]


def test_latest_is_the_newest_finished_run_never_sweeps_or_one_being_written(tmp_path):
    """'latest': a run directory holding its summary.json (written last), newest first; never
    results/sweeps, even when it is newer, nor a run still being written."""
    import os

    from analysis.logs import resolve_run
    results = tmp_path / "results"
    done = results / "allreduce-20261128-100000"
    (done / "mrc").mkdir(parents=True)
    (done / "summary.json").write_text("{}")
    os.utime(done, (1000, 1000))
    writing = results / "allreduce-20261128-110000"
    (writing / "mrc").mkdir(parents=True)           # no summary.json yet
    sweeps = results / "sweeps"
    (sweeps / "random-loss").mkdir(parents=True)
    (sweeps / "summary.json").write_text("{}")       # even one that looks finished
    assert resolve_run("latest", results) == done
