"""An incast's victim-only flow iterates at its own pace and can outlive the incast; its goodput
"while the collective runs" covers only the time both are running. Hand-built worker logs of a
run directory (worker.json + worker-<h>.jsonl); every expected figure is worked out below."""
import json

import pytest

from analysis import flows
from model.events import Event, Phase

MS = 1_000_000
T0 = 90_000 * MS
HOSTS = ["h0", "h1", "h2", "h3", "h4"]
# Incast ranks h0 (target), h2, h3: timed from T0 + 0 to their last iteration's end at 1000 ms.
# Victim h4 -> h1 (ranks 4 and 1): h1 timed from 200 ms to 3000 ms, receiving 1,250 bytes per
# ms (10 Mbit/s) until 1000 ms while the incast runs, then 5,000 bytes per ms (40 Mbit/s) alone.
INCAST_END_MS = 1000
VICTIM = (200, 3000)


def victim_bytes(ms: int) -> int:
    if ms <= INCAST_END_MS:
        return 1250 * ms
    return 1250 * INCAST_END_MS + 5000 * (ms - INCAST_END_MS)


def event(ms, host, name, **kw):
    return {"t_ns": T0 + ms * MS, "host": host, "event": name, **kw}


def write_run(tdir, victim_only=True):
    (tdir / "worker.json").write_text(json.dumps(
        {"transport": "mrc", "hosts": HOSTS, "collective": "incast", "iterations": 2,
         "incast_target": 0, "victim": [4, 1], "victim_only": victim_only,
         "fabric": {"host_link_mbit": 30, "planes": 2}}))
    for host in ("h0", "h2", "h3"):
        lines = [event(0, host, Event.PHASE, phase=Phase.WARMUP_DONE),
                 event(500, host, Event.ITERATION, iter=0, start_ns=T0, end_ns=T0 + 500 * MS),
                 event(INCAST_END_MS, host, Event.ITERATION, iter=1, start_ns=T0 + 500 * MS,
                       end_ns=T0 + INCAST_END_MS * MS)]
        (tdir / f"worker-{host}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    lines = [event(VICTIM[0], "h1", Event.PHASE, phase=Phase.WARMUP_DONE)]
    lines += [event(ms, "h1", Event.GOODPUT, rx_bytes=victim_bytes(ms))
              for ms in range(0, 3001, 100)]
    lines += [event(VICTIM[1], "h1", Event.ITERATION, iter=0, start_ns=T0 + VICTIM[0] * MS,
                    end_ns=T0 + VICTIM[1] * MS)]
    (tdir / "worker-h1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tdir / "worker-h4.jsonl").write_text("")


def test_victim_goodput_while_the_incast_runs(tmp_path):
    write_run(tmp_path)
    (flow,) = flows.flow_summary(tmp_path)["flows"]
    # own window 200..3000 ms: 1,250 * 800 + 5,000 * 2,000 = 11,000,000 bytes in 2.8 s
    assert flow["goodput_mbit"] == pytest.approx(11_000_000 * 8 / 2.8 / 1e6)      # 31.4
    # with the incast: 200..1000 ms, 1,000,000 bytes in 0.8 s = 10 Mbit/s
    assert flow["goodput_during_collective_mbit"] == pytest.approx(10.0)
    assert "10.0 Mbit/s while the collective runs" in flows.describe(flow)


def test_no_figure_without_a_victim_only_flow_or_an_overlap(tmp_path):
    write_run(tmp_path, victim_only=False)
    (flow,) = flows.flow_summary(tmp_path)["flows"]
    assert flow["goodput_during_collective_mbit"] is None
    # a collective that ended before the victim's timed phase began: no overlap, no figure
    assert flows.flow_figures(
        [("h4", "h1")],
        {"h1": [event(ms, "h1", Event.GOODPUT, rx_bytes=ms) for ms in (300, 400)]
         + [event(250, "h1", Event.PHASE, phase=Phase.WARMUP_DONE),
            event(400, "h1", Event.ITERATION, end_ns=T0 + 400 * MS)]},
        {}, None,
        {"h0": [event(0, "h0", Event.PHASE, phase=Phase.WARMUP_DONE),
                event(100, "h0", Event.ITERATION, end_ns=T0 + 100 * MS)]},
    )[0]["goodput_during_collective_mbit"] is None
