"""When the machine, not the code, failed a timing-dependent integration check.

A fabric run measures whether this machine kept up with it (the fidelity monitor, summary.json's
"fidelity": verdict "ok", "degraded" or "invalid", with the invariants' margins and violations).
A timing-dependent check that fails on a run the monitor calls "invalid" says nothing about the
code: the test then reports an xfail naming the verdict, its violations and margins. Everything
else fails as usual, and some failures are never excused whatever the verdict, because a starved
machine cannot cause them:

  a crash (the runner's "error"), wrong data (data_verified false: a collective's result did not
  verify), a scheduled fault that did not take effect (faults_ok false), unless the test made
  that happen on purpose and says so (`expected`).

Use, around the checks a starved run can fail (exit code, iteration counts, recovery and goodput
figures), after the checks it cannot:

    with judged_by_fidelity(summary):
        assert rc == 0, out
        assert summary["recovery_ms"][0] < 500

Endpoint processes run without the runner (no summary.json) are judged by `endpoint_run`: the
same monitor over their event logs.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path

import pytest

from analysis import fidelity
from analysis.fidelity_captures import FabricFacts
from emulation.run import run_faults

INVALID = "invalid"

# summary.json key -> what it says when false or set, when no starved machine explains it
PRODUCT_FAILURES = {"error": "the run crashed", "data_verified": "a collective result did not "
                    "verify (wrong data)", "faults_ok": "a scheduled fault did not take effect"}


def load_summary(run) -> dict:
    """A transport's summary: the dict itself, one a callable returns (worked out only when a
    check fails), or read from a summary.json or the transport directory holding one."""
    if isinstance(run, dict):
        return run
    if callable(run):
        return run()
    path = Path(run)
    if path.is_dir():
        path = path / "summary.json"
    return json.loads(path.read_text())


def product_failures(summary: dict, expected=()) -> list[str]:
    """What in this summary no starved machine explains (PRODUCT_FAILURES), less the keys in
    `expected`: those the test brought about itself and checks on its own."""
    out = []
    if summary.get("error") and "error" not in expected:
        out.append(f"{PRODUCT_FAILURES['error']}: {str(summary['error'])[:300]}")
    for key in ("data_verified", "faults_ok"):
        if summary.get(key) is False and key not in expected:
            if key == "faults_ok" and faults_cut_short(summary):
                continue
            out.append(PRODUCT_FAILURES[key])
    return out


TRAFFIC_ENDED_FIRST = (run_faults.TRAFFIC_ENDED, run_faults.NEVER_STARTED)


def faults_cut_short(summary: dict) -> bool:
    """Whether every fault that did not take effect was never sent because the traffic stopped
    before completing its iterations: a starved run's collective can time out early, and its
    later faults then never come due. A schedule that does not fit a run that completed every
    iteration, or a fault the controller failed, stays a product failure."""
    unreached = summary.get("faults_not_reached") or []
    planned, done = summary.get("iterations_planned"), summary.get("iterations_completed")
    return (not summary.get("faults_failed") and bool(unreached)
            and all(str(f.get("reason", "")).startswith(TRAFFIC_ENDED_FIRST) for f in unreached)
            and isinstance(planned, int) and isinstance(done, int) and done < planned)


def starved_reason(summary: dict, excused=(INVALID,)) -> str | None:
    """'fidelity invalid (<transport>): ...' when the monitor says the machine starved this run
    (its verdict is one of `excused`), else None."""
    fid = summary.get("fidelity")
    if not isinstance(fid, dict) or fid.get("verdict") not in excused:
        return None
    violations = "; ".join(f"{v.get('invariant')}: {str(v.get('reason', ''))[:160]}"
                           for v in (fid.get("violations") or [])[:4]
                           if isinstance(v, dict))
    margins = ", ".join(f"{k} {v}" for k, v in sorted((fid.get("margins") or {}).items()))
    return (f"fidelity {fid['verdict']} ({summary.get('transport', '?')}): "
            f"{violations or 'no violation'}"
            f" (margins: {margins or 'none'})")


@contextlib.contextmanager
def judged_by_fidelity(*runs, excused=(INVALID,), expected=()):
    """Run timing-dependent checks on these runs (summaries, summary.json paths, transport
    directories or callables returning a summary; a list is read when a check fails, so runs
    made inside the block count): a failing check becomes an xfail naming the fidelity verdict
    when a run was starved (its verdict in `excused`: "invalid"; a check that holds only on an
    idle machine also excuses "degraded") and shows no product failure (less `expected`);
    otherwise it fails as it is."""
    try:
        yield
    except AssertionError as failure:
        flat = [x for r in runs for x in (r if isinstance(r, list) else [r])]
        summaries = [load_summary(r) for r in flat]
        broken = [p for s in summaries for p in product_failures(s, expected)]
        reasons = [r for r in (starved_reason(s, excused) for s in summaries) if r]
        if broken or not reasons:
            raise
        pytest.xfail(f"{'; '.join(reasons)}; the timing check that failed: "
                     f"{str(failure).splitlines()[0][:300] if str(failure) else 'assert'}")


def endpoint_run(workdir, spec, start_ns: int, start_realtime_ns: int) -> dict:
    """A summary with the fidelity monitor's verdict (analysis/fidelity.py) on endpoint
    processes started without the runner (emulation/network/endpoint_process.py: event logs
    ep-h<n>.jsonl in `workdir`) on a fabric of `spec`, from start_ns (CLOCK_MONOTONIC; the same
    instant is start_realtime_ns on CLOCK_REALTIME) to now: their timer and receive lateness,
    and ovs-vswitchd's stalls in that window. Copies of the logs under the names the monitor
    reads go to `workdir`/fidelity/."""
    end_ns = time.monotonic_ns()
    judged = Path(workdir) / "fidelity"
    judged.mkdir(exist_ok=True)
    for log in sorted(Path(workdir).glob("ep-h*.jsonl")):
        shutil.copyfile(log, judged / f"endpoint-{log.stem.removeprefix('ep-')}.jsonl")
    fidelity.record_ovs_stalls(judged, start_realtime_ns, start_realtime_ns + end_ns - start_ns)
    facts = FabricFacts(host_link_mbit=spec.host_link_mbit,
                        fabric_link_mbit=spec.fabric_link_mbit, mtu=spec.mtu, trimmed=False,
                        switch_buffer_bytes=None)
    return {"transport": "endpoints",
            "fidelity": fidelity.transport_fidelity(judged, facts, start_ns, end_ns)}
