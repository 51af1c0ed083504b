"""A run over two servers (emulation/cluster/run_servers.py): this machine and a local server
(emulation/cluster/local_server.py), reached by ssh as a remote one is, whose /run and PID
namespace are its own. The demo's short version over MRC, placement "pod" (group 1: h2, h3 and
their T0s on the server), with the link down moved to that group's T0 so the server's own
endpoints see it, and trimming off (refused over servers).

First at k = 1: the run verifies with its fault applied, as on one machine; the ranks there
logged into the staging directory there, and their logs and captures came back into the run
directory here (followed while the run went on, fetched whole at the end), on this machine's
clock; the controller heard their EV events through the forwarded control sockets; the
server's clock is recorded and judged by the fidelity monitor; nothing is left in the staging
directory.

Then on one server and on two at the same k, fabric-bound (k = 16, well above what this
fabric needs on a 2-core machine): fidelity "ok" both times, MRC's median iteration within 10%
of each other, and its recovery from the link-down within what one server alone spreads over
from run to run: one run's recovery depends on where in an iteration the link goes down, 0 to
220 ms over ten one-server demo runs with fidelity "ok"
(docs/results/2026-12-01-run-over-servers.md), far above 10% of a median of 30 ms."""
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis import fidelity_verdict as FV
from emulation.cluster.run_servers import STAGING_ROOT
from model.retime import PCAP_MAGICS
from model.events import ControllerLog, Event
from tests.helpers.local_servers import local_server_up
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

NAME, INDEX = "mrclab-r", 61


STEP_MS = 10.0                # analysis/recovery.py: the sliding window's step
RECOVERY_SPREAD_MS = 220.0    # one server's run-to-run spread (module docstring)
FAIR_K = 16
# After the link-down the collective runs on the EVs left, and how they spread over the paths
# sets its iteration time, so two runs that draw their EVs from the clock can differ by more
# than the 10% compared here with nothing else changed (docs/results/2026-12-01-ledger-session2.md).
# One seed for every run compares the servers, not two draws.
EV_SEED = 20261201


@pytest.fixture(scope="module")
def local():
    with pytest.MonkeyPatch.context() as monkeypatch:
        with local_server_up(monkeypatch, NAME, INDEX) as srv:
            yield srv


def scenario(tmp_path: Path, k: int = 1) -> Path:
    text = (REPO / "experiments" / "demo.toml").read_text()
    text = text.replace("trimming = true", "trimming = false")   # refused over servers
    text = text.replace('a = "t0p0g0"', 'a = "t0p0g1"')           # the server's T0
    text = text.replace("fabric_time_scale = 1 ", f"fabric_time_scale = {k} ")
    assert text.count('a = "t0p0g1"') == 2 and f"fabric_time_scale = {k} " in text
    # the same EVs drawn in every run (EV_SEED's comment)
    text += f"\n[mrc.endpoint]\nseed = {EV_SEED}\n"
    path = tmp_path / f"demo-servers-k{k}.toml"
    path.write_text(text)
    return path


def run_mrc(path: Path, servers: str, out: Path) -> Path:
    """`mrclab run --short --transport mrc` over `servers`; its transport directory."""
    done = subprocess.run(
        [sys.executable, "-m", "emulation.cli", "run", str(path), "--short", "--transport",
         "mrc", "--servers", servers, "--placement", "pod", "--json", "--out-dir", str(out)],
        capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return next(out.iterdir()) / "mrc"


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_server_that_is_not_ready_is_named_before_anything_starts(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "emulation.cli", "run", str(scenario(tmp_path)), "--short",
         "--servers", "localhost,mrclab-nowhere.invalid", "--out-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "preflight" in done.stderr and "mrclab-nowhere.invalid" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_the_demo_runs_over_two_servers_and_comes_back_whole(local, tmp_path):
    tdir = run_mrc(scenario(tmp_path), f"localhost,{NAME}", tmp_path / "out")
    run_dir = tdir.parent
    summary = json.loads((tdir / "summary.json").read_text())
    assert summary["verified"] and summary["faults_ok"] is True
    assert [f["status"] for f in summary["faults"]] == ["applied", "applied"]
    cluster = summary["cluster"]
    assert cluster["hosts"]["h2"] == NAME and cluster["errors"] == []
    assert cluster["clocks"][NAME]["bound_ns"] < 5e6     # ssh over a veth: well under 5 ms
    # the fidelity monitor judged that clock (a quarter of a base RTT of 1 ms and more at k = 1)
    judged = summary["fidelity"]["measurements"][FV.CLOCK_ALIGNMENT]
    assert judged["worst_server"] == NAME and FV.CLOCK_ALIGNMENT not in summary["fidelity"].get(
        "unmeasured", {})
    # the server's scheduling profile: its two workers' packet loops (h2, h3) ran there
    loops = cluster["sched_profile"][NAME]["classes"]["endpoint_loops"]
    assert loops["tasks"] == 2 and loops["cores"] > 0

    # the server's ranks: their logs came back, every timed iteration verified
    for host in ("h2", "h3"):
        log = events(run_dir / "mrc" / f"worker-{host}.jsonl")
        iterations = [e for e in log if e["event"] == Event.ITERATION]
        assert iterations and all(e["verified"] for e in iterations), host
    # on this machine's clock: h2's first timed iteration starts within a second of h0's
    first = {h: min(e["start_ns"] for e in events(run_dir / "mrc" / f"worker-{h}.jsonl")
                    if e["event"] == Event.ITERATION) for h in ("h0", "h2")}
    assert abs(first["h2"] - first["h0"]) < 1e9

    # their captures came back: a pcap with frames, for each of their ports
    for plane in (0, 1):
        data = (run_dir / "mrc" / "pcaps" / f"h3-p{plane}.pcap").read_bytes()
        assert struct.unpack_from("<I", data)[0] in PCAP_MAGICS and len(data) > 24 + 16

    # the controller heard the server's endpoints through the forwarded sockets
    heard = {e.get("host") for e in events(run_dir / "mrc" / "faults.jsonl")
             if e.get("action") == ControllerLog.EV_EVENT}
    assert heard & {"h2", "h3"}, heard

    # nothing left in the staging directory there (the filesystem is shared with the server)
    assert not (Path(STAGING_ROOT) / NAME / run_dir.name).exists()


def test_one_server_and_two_measure_the_same_fabric(local, tmp_path):
    path = scenario(tmp_path, FAIR_K)
    one = json.loads((run_mrc(path, "localhost", tmp_path / "one") / "summary.json").read_text())
    two = json.loads((run_mrc(path, f"localhost,{NAME}", tmp_path / "two") / "summary.json")
                     .read_text())
    assert "cluster" not in one and two["cluster"]["hosts"]["h2"] == NAME
    for s in (one, two):
        assert s["verified"] and s["fidelity"]["verdict"] == "ok", s["fidelity"]
    medians = [float(np.median(s["iteration_times_ms"])) for s in (one, two)]
    assert abs(medians[0] - medians[1]) <= 0.1 * max(medians), medians
    down = [s["recovery_ms"][0] for s in (one, two)]
    assert None not in down, down
    resolution = STEP_MS + 0.1 * max(100.0, max(medians))
    assert abs(down[0] - down[1]) <= max(0.1 * max(down), resolution, RECOVERY_SPREAD_MS), \
        (down, medians)
