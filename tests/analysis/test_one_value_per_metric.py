"""One run read through every output: each headline metric (analysis/metric_names.py) has one
value and one name in the transport's summary.json, the run's summary.json, the console table,
`mrclab analyze` (table, --json, --csv) and `mrclab compare`. The run is synthetic
(tests/helpers/synthetic_run.py), so the values are worked by hand:

- 4 hosts, 30 timed iterations of 100 ms each (host 0 ends each at the full 100 ms), except that
  the first one's records start 900 ms early: times 1000 ms and 29 x 100 ms, median 100 ms (the
  mean, 130 ms, would give another busbw), slowest 1000 ms;
- all-reduce of 4,000 B on 4 ranks: busbw = 4,000 B / 0.1 s x 2 x 3 / 4 = 60,000 B/s = 0.48 Mbit/s
  per rank;
- every host delivers 10,000 B per 10 ms sample from the timed start except during [1.0, 1.4) s;
  the traffic ends at 3.0 s; the count at t = 0 already holds the first sample. Delivered in
  [0, 3.0 s] by all hosts: 4 x (260 - 1) x 10,000 B = 10.36e6 B, over 3 s = 27.6267 Mbit/s;
- each host's final counters report 7 + h retransmissions: 7 + 8 + 9 + 10 = 34 (summed over hosts).
"""
from __future__ import annotations

import csv
import io
import json

import pytest

from analysis import cli, compare, metric_names
from emulation.run import run_summary
from emulation.run.run_output import comparison_table
from model.events import Event
from tests.helpers import synthetic_run as R

MEDIAN_MS = 100.0
SLOWEST_MS = 1000.0
BUSBW_MBIT = 4000 / 0.1 * 2 * 3 / 4 * 8 / 1e6
GOODPUT_MBIT = 4 * 259 * 10_000 * 8 / 3.0 / 1e6
RETRANSMISSIONS = 7 + 8 + 9 + 10


def make_run(tmp_path):
    """The synthetic tcp run with each worker's final counters, summarised as the runner does."""
    run_dir = tmp_path / "synthetic-20260101"
    tdir = run_dir / "tcp"
    tdir.mkdir(parents=True)
    scn = R.write_run(tdir, R.records(R.parse_run()))
    for h in range(4):
        path = tdir / f"worker-h{h}.jsonl"
        events = [json.loads(line) for line in path.read_text().splitlines()]
        for e in events:
            if e["event"] == Event.ITERATION and e["iter"] == 0:
                e["start_ns"] -= 900 * R.MS
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        with open(tdir / f"worker-h{h}.jsonl", "a") as log:
            log.write(json.dumps({"t_ns": R.T0 + 5000 * R.MS, "host": f"h{h}",
                                  "event": Event.COUNTERS, "retransmits": 7 + h}) + "\n")
    (run_dir / "scenario.toml").write_text(R.TEXT)
    s = run_summary.summarize(scn, "tcp", tdir, {"partial": False,
                                                 "exit_codes": {f"h{i}": 0 for i in range(4)}})
    s.update(metric_names.of_summary(s))       # as the runner writes it
    (tdir / "summary.json").write_text(json.dumps(s))
    top = run_summary.top_summary(scn, run_dir, [s], False)
    (run_dir / "summary.json").write_text(json.dumps(top))
    return run_dir, s


def column(table: str, heading: str, row: str) -> str:
    """The cell under `heading` in the line starting with `row` of a text table."""
    lines = table.splitlines()
    head = lines[0]
    start = head.index(heading)
    line = next(x for x in lines if x.startswith(row + " "))
    # cells are left- or right-aligned under their heading: read the word around its span
    end = start + len(heading)
    left = line.rfind("  ", 0, start + 1)
    right = line.find("  ", end - 1)
    return line[left if left >= 0 else 0: right if right >= 0 else None].strip()


def test_one_run_reads_the_same_in_every_output(tmp_path, capsys):
    run_dir, s = make_run(tmp_path)
    expected = {"median_iteration_ms": MEDIAN_MS, "slowest_iteration_ms": SLOWEST_MS,
                "busbw_mbit": BUSBW_MBIT, "goodput_sum_mbit": GOODPUT_MBIT,
                "retransmissions": RETRANSMISSIONS}
    per = json.loads((run_dir / "tcp" / "summary.json").read_text())
    top = json.loads((run_dir / "summary.json").read_text())["transports"]["tcp"]
    assert cli.main([str(run_dir), "--json"]) == 0
    analyzed = json.loads(capsys.readouterr().out)["tcp"]
    assert cli.main([str(run_dir), "--csv"]) == 0
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for key, value in expected.items():
        for name, output in (("summary.json", per), ("run summary.json", top),
                             ("analyze --json", analyzed)):
            assert output[key] == pytest.approx(value, rel=1e-6), (key, name)
        assert float(row[key]) == pytest.approx(value, rel=1e-6), (key, "analyze --csv")
    assert per["recovery_ms"] == top["recovery_ms"]

    # the console and analyze's table: the same heading, the same value
    console = comparison_table([per])
    assert cli.main([str(run_dir)]) == 0
    table = capsys.readouterr().out
    for key, value in (("median_iteration_ms", MEDIAN_MS), ("slowest_iteration_ms", SLOWEST_MS)):
        heading = metric_names.HEADERS[key]
        assert column(console, heading, "tcp") == column(table, heading, "tcp") == f"{value:.1f}"
    busbw = metric_names.HEADERS["busbw_mbit"]
    assert column(console, busbw, "tcp") == column(table, busbw, "tcp") == f"{BUSBW_MBIT:.1f}"
    assert column(table, metric_names.HEADERS["retransmissions"], "tcp") == str(RETRANSMISSIONS)

    # compare: the run against itself shows the same values under the same keys
    rows = {r["metric"]: r for r in compare.compare(run_dir, run_dir)["rows"]}
    assert rows["median_iteration_ms"]["a"] == pytest.approx(MEDIAN_MS)
    assert rows["busbw_mbit"]["a"] == pytest.approx(BUSBW_MBIT)
    assert rows["retransmissions"]["a"] == RETRANSMISSIONS
