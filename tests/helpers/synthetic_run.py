"""A run's worker logs built by hand, for the tests of what reads them (the runner's summary, the
run model): every number in them is chosen, so expected results follow by arithmetic.

The run: `hosts` workers, each delivering 10,000 bytes every 10 ms (1e6 B/s each) from the timed
start t0 until `deliver_ms`, except during `outage` [start, end) ms; `warmup_ms` before t0 deliver
nothing; the workers keep sampling (flat) for `tail_ms` after `deliver_ms`. `iterations` of
100 ms each, all verified; host h ends each iteration h ns early.

The tcp run of TEXT (4 hosts, 30 iterations) with its fault records (`records`: applied,
refused, sent after the traffic, never sent), written into a transport directory by `write_run`
and into a whole run directory, summaries included, by `make_run_dir`.
"""
from __future__ import annotations

import json
from unittest import mock

from emulation.run import run_summary
from emulation.config import scenario as S
from emulation.config import scenario_faults
from emulation.run.runner import worker_config
from model.events import Event, Phase
from tests.helpers.scenario_texts import link_fault

MS = 1_000_000
BYTES_PER_SAMPLE = 10_000
SAMPLE_MS = 10
ITERATION_MS = 100

# The scenario these logs belong to (fabric, transport, collective; faults are each test's own).
TCP_RUN = """
[fabric]
planes = 2
time_scale = 1
[transport]
names = ["tcp"]
[collective]
message_bytes = 4000
iterations = 30
"""


def worker_log(host: int, t0: int, *, outage=(1000, 1400), iterations=30, deliver_ms=None,
               warmup_ms=0, tail_ms=0) -> list[dict]:
    """One worker's events, time-sorted."""
    deliver_ms = iterations * ITERATION_MS if deliver_ms is None else deliver_ms
    name = f"h{host}"
    lines = [{"t_ns": t0 + ms * MS, "host": name, "event": Event.GOODPUT, "rx_bytes": 0}
             for ms in range(-warmup_ms, 0, SAMPLE_MS)]
    lines.append({"t_ns": t0, "host": name, "event": Event.PHASE, "phase": Phase.WARMUP_DONE})
    delivered = 0
    for ms in range(0, deliver_ms + tail_ms, SAMPLE_MS):
        if ms < deliver_ms and not outage[0] <= ms < outage[1]:
            delivered += BYTES_PER_SAMPLE
        lines.append({"t_ns": t0 + ms * MS, "host": name, "event": Event.GOODPUT,
                      "rx_bytes": delivered})
    for i in range(iterations):
        start, end = t0 + i * ITERATION_MS * MS, t0 + (i + 1) * ITERATION_MS * MS
        lines.append({"t_ns": end, "host": name, "event": Event.ITERATION,
                      "collective": "allreduce", "transport": "tcp", "iter": i,
                      "start_ns": start, "end_ns": end - host, "bytes": 1, "verified": True})
    lines.sort(key=lambda e: e["t_ns"])
    return lines


def write_worker_logs(tdir, t0: int, *, hosts: int = 4, **run) -> None:
    """worker-h<n>.jsonl of every host into `tdir` (keyword arguments: worker_log's)."""
    for h in range(hosts):
        lines = worker_log(h, t0, **run)
        (tdir / f"worker-h{h}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


# ---------------------------------------------------------------- the tcp run with its faults

T0 = 10_000 * MS


TEXT = TCP_RUN + "".join([link_fault("link_down", "t0p0g0", "t1p0s0", at_s=1.0),
                          link_fault("link_up", "t0p0g0", "t1p0s0", at_s=2.7),
                          link_fault("gray_loss_clear", "t0p0g0", "t1p0s1", at_s=2.8),
                          link_fault("link_down", "t0p1g0", "t1p1s0", at_s=3.5),
                          link_fault("link_down", "t0p1g0", "t1p1s1", at_s=9.0),
                          link_fault("gray_loss", "t0p0g0", "t1p0s1", at_iteration=29)
                          .replace('action = "gray_loss"', 'action = "gray_loss"\npercent = 5')])


def parse_run(text: str = TEXT):
    """The scenario of `text` (TEXT or a part of it) with the checks across fault entries off.
    Validation refuses TEXT's schedule (a clear before its fault, faults due after the traffic
    can end); what the tests read is how a run reports such entries once they reach the
    controller or the end of the traffic (a fault cleared by hand from another shell, a machine
    slower than the link arithmetic), so the scenario is built without those checks."""
    with mock.patch.object(scenario_faults, "_check_fit", lambda *args: None), \
            mock.patch.object(scenario_faults, "_check_clears", lambda *args: None):
        return S.parse(text)


def write_run(tdir, records):
    scn = parse_run()
    (tdir / "worker.json").write_text(json.dumps(worker_config(scn, "tcp", tdir).to_dict()))
    write_worker_logs(tdir, T0, warmup_ms=2000, tail_ms=2000)
    (tdir / "faults-applied.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return scn


def sent(entry, when, at_ms, command, ok=True, error=None):
    rec = {"entry": entry, "when": when, "asked_ns": T0 + at_ms * MS, "t_ns": T0 + at_ms * MS,
           "ok": ok, "command": command}
    if error:
        rec["error"] = error
    return rec


def records(scn):
    c = [e.commands[0] for e in scn.faults]
    return [sent(0, "at_s=1.0", 1000, c[0]),
            sent(1, "at_s=2.7", 2700, c[1]),
            sent(2, "at_s=2.8", 2800, c[2], ok=False, error="no gray_loss on t0p0g0~t1p1s0"),
            sent(3, "at_s=3.5", 3500, c[3]),
            {"entry": 4, "when": "at_s=9.0", "reached": False, "ok": False, "action": "link_down",
             "a": "t0p1g0", "b": "t1p1s1", "reason": "the traffic ended before it was due"},
            {"entry": 5, "when": "at_iteration=29", "reached": False, "ok": False,
             "action": "gray_loss", "a": "t0p0g0", "b": "t1p0s1",
             "reason": "the traffic ended before it was due"}]


def make_run_dir(tmp_path, recs=None):
    run_dir = tmp_path / "synthetic-20260101"
    tdir = run_dir / "tcp"
    tdir.mkdir(parents=True)
    scn = write_run(tdir, records(parse_run()) if recs is None else recs)
    (run_dir / "scenario.toml").write_text(TEXT)
    s = run_summary.summarize(scn, "tcp", tdir, {"partial": False,
                                            "exit_codes": {f"h{i}": 0 for i in range(4)}})
    (tdir / "summary.json").write_text(json.dumps(s))
    (run_dir / "summary.json").write_text(json.dumps(run_summary.top_summary(scn, run_dir, [s], False)))
    return run_dir, s


# the controller's log of the three faults of TEXT that took effect (faults.jsonl, what the
# figures read): (ms after the timed start, action, a, b)
CONTROLLER_LOG = [(1000, "link_down", "t0p0g0", "t1p0s0"), (2700, "link_up", "t0p0g0", "t1p0s0"),
                  (3500, "link_down", "t0p1g0", "t1p1s0")]


def write_controller_log(tdir) -> None:
    """faults.jsonl of CONTROLLER_LOG into the transport directory `tdir`."""
    (tdir / "faults.jsonl").write_text("".join(
        json.dumps({"t_ns": T0 + ms * MS, "action": action, "a": a, "b": b}) + "\n"
        for ms, action, a, b in CONTROLLER_LOG))
