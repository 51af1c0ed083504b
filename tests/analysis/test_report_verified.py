"""The report says "data verified" only when the iteration records say so: every (rank,
iteration) present once and verified, whatever summary.json claims. On the hand-built run of
tests/helpers/synthetic_run.py's make_run_dir (4 ranks, 30 iterations, summary.json verified:
true)."""
from __future__ import annotations

import json

from analysis import metrics, report
from model.events import Event
from tests.helpers.synthetic_run import make_run_dir


def _rewrite(path, change):
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps(x) + "\n" for x in change(lines)))


def _status(run_dir):
    run = metrics.load_run(run_dir)
    return report.transport_status(run.transports["tcp"]), run.transports["tcp"]


def test_the_untouched_run_is_verified(tmp_path):
    run_dir, summary = make_run_dir(tmp_path)
    (ok, text), td = _status(run_dir)
    assert summary["verified"] is True and "30 of 30 iterations completed, data verified" in text
    assert td.model.records_verified


def test_unverified_records_are_not_verified_whatever_the_summary_says(tmp_path):
    run_dir, _ = make_run_dir(tmp_path)
    _rewrite(run_dir / "tcp" / "worker-h0.jsonl",
             lambda ls: [dict(x, verified=False) if x["event"] == Event.ITERATION else x for x in ls])
    assert json.loads((run_dir / "tcp" / "summary.json").read_text())["verified"] is True
    (ok, text), _ = _status(run_dir)
    assert not ok and "NOT verified" in text


def test_a_missing_record_replaced_by_a_duplicate_is_not_complete(tmp_path):
    """h1's record of iteration 5 is gone and h0's is there twice: still 4 records for 5, but
    not one per rank."""
    run_dir, _ = make_run_dir(tmp_path)
    h1 = run_dir / "tcp" / "worker-h1.jsonl"
    _rewrite(h1, lambda ls: [x for x in ls if not (x["event"] == Event.ITERATION and x["iter"] == 5)])
    h0 = run_dir / "tcp" / "worker-h0.jsonl"
    _rewrite(h0, lambda ls: ls + [x for x in ls if x["event"] == Event.ITERATION and x["iter"] == 5])
    (ok, text), td = _status(run_dir)
    assert not ok and "NOT verified" in text
    assert "worker-h0.jsonl: iteration 5 recorded twice" in td.model.problems
    assert 5 not in [it.index for it in td.model.iterations]


def test_a_missing_record_alone_is_not_complete(tmp_path):
    run_dir, _ = make_run_dir(tmp_path)
    h3 = run_dir / "tcp" / "worker-h3.jsonl"
    _rewrite(h3, lambda ls: [x for x in ls if not (x["event"] == Event.ITERATION and x["iter"] == 29)])
    (ok, text), td = _status(run_dir)
    assert not ok and "29 of 30 iterations completed, NOT verified" in text
