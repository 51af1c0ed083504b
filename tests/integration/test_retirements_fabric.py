"""summary.json's count of EVs retired on healthy paths, on the real fabric: a short MRC ring
all-reduce with one T0-T1 link down from timed iteration 4 to 16 of 24: faults at iterations
land inside the traffic at any speed of the run (fault times in seconds do not). The summary's counts are checked against the
endpoint logs read here with the fabric's wiring worked out by hand: hosts h0, h1 are group 0
and h2, h3 group 1 (2 hosts per group); a packet between the groups on plane 0 via T1 0 crosses
t0p0g0~t1p0s0, any other path does not."""
import json

import pytest

from emulation.run import runner
from model.events import Event
from model.topology import ev_plane, ev_spine
from tests.integration.run_files import events
from traffic.core.qp_config import MRCConfig
from tests.helpers.scenario_texts import RETIREMENTS as SHORT
from tests.integration.fidelity_guard import judged_by_fidelity

pytestmark = pytest.mark.integration


def crosses_the_dead_link(host: str, peer: str, ev: int) -> bool:
    group = {"h0": 0, "h1": 0, "h2": 1, "h3": 1}
    return ev_plane(ev) == 0 and ev_spine(ev) == 0 and group[host] != group[peer]


def test_retirements_over_the_dead_link_are_justified_and_every_one_is_judged(tmp_path):
    scenario = tmp_path / "short.toml"
    scenario.write_text(SHORT)
    rc = runner.main([str(scenario), "--transport", "mrc", "--out-dir", str(tmp_path / "results")])
    (run_dir,) = (tmp_path / "results").iterdir()
    summary = json.loads((run_dir / "mrc" / "summary.json").read_text())
    with judged_by_fidelity(summary):     # an iteration past its time-out on a starved machine
        assert rc == 0, summary.get("problems")
    assert summary["loss_policy"] == MRCConfig().loss_policy

    faults = events(run_dir / "mrc" / "faults.jsonl")
    down = next(f["t_ns"] for f in faults if f["action"] == "link_down")
    up = next(f["t_ns"] for f in faults if f["action"] == "link_up")
    retired, over_dead_link, near_dead_link = 0, 0, 0
    for log in sorted((run_dir / "mrc").glob("endpoint-h*.jsonl")):
        log_events = events(log)
        peers = {e["qp"]: e["peer"] for e in log_events if e["event"] == Event.QP}
        for e in log_events:
            if (e["event"] != Event.EV_STATE or e["new"] != "ASSUMED_BAD"
                    or e.get("reason") == "allowed" or e.get("direction") == "reverse"):
                continue
            retired += 1
            if crosses_the_dead_link(e["host"], peers[e["qp"]], e["ev"]):
                # retired while the link was down: justified whatever the policy; retired up
                # to the lookback (1 s) plus a loss verdict window (0.3 s) after the repair:
                # justified if its loss was detected within the lookback of the repair
                over_dead_link += down <= e["t_ns"] <= up
                near_dead_link += down <= e["t_ns"] <= up + 1_300_000_000
    assert summary["retirements_unjudged"] == 0
    assert summary["evs_retired"] == retired
    justified = summary["evs_retired"] - summary["healthy_evs_retired"]
    assert over_dead_link >= 1, "the link-down retired no EV over it"
    # an ACK-timeout retirement whose SACKs came back over the dead link is justified too
    # (analysis/retirements.py evs_retired_for_lost_acks) although its own path is healthy
    lost_acks = summary["evs_retired_for_lost_acks"]
    counts = (over_dead_link, justified, near_dead_link, lost_acks, summary)
    assert over_dead_link <= justified, counts
    # "near" is a window in time after the repair (the lookback plus a verdict window): a
    # starved endpoint that noticed a loss over the dead link late retires its EV after it
    with judged_by_fidelity(summary):
        assert justified <= near_dead_link + lost_acks, counts
