"""summary.json fields the runner adds: the MRC loss policy in force (a reader must know whether
the recovery figures measure OCP's rule or the tolerant one), line rate fraction, fabric delay."""

import pytest

from emulation.run import run_summary
from emulation.config import scenario
from tests.helpers.paths import REPO

DEMO = REPO / "experiments" / "demo.toml"


def _with_qp(text: str, qp_lines: str) -> str:
    return text + "\n[mrc.qp]\n" + qp_lines + "\n" if "[mrc.qp]" not in text else \
        text.replace("[mrc.qp]\n", "[mrc.qp]\n" + qp_lines + "\n", 1)


def test_default_policy_is_ocps():
    # The README and traffic/core/qp_config.py document OCP's rule as the default.
    assert run_summary.loss_policy_in_force(scenario.load(DEMO)) == "ocp"


def test_a_scenario_choosing_tolerant_is_recorded_as_tolerant(tmp_path):
    path = tmp_path / "tolerant.toml"
    path.write_text(_with_qp(DEMO.read_text(), 'loss_policy = "tolerant"'))
    assert run_summary.loss_policy_in_force(scenario.load(path)) == "tolerant"


def test_line_rate_fraction_of_the_median_iteration(tmp_path):
    """A 4-rank all-reduce of 1 MiB per rank over 2 planes of 30 Mbit/s host links, iterations
    of 0.4, 0.5 and 0.9 s: the median 0.5 s gives algbw 1048576 / 0.5 = 2097152 B/s, busbw x 2(4-1)/4
    = 3145728 B/s = 25.165824 Mbit/s, over 2 x 30 Mbit/s = 0.419 of the line rate."""
    text = ('name = "t"\n[fabric]\ntime_scale = 1\nplanes = 2\ngroups = 2\nspines = 2\nhosts_per_group = 2\n'
            'host_link_mbit = 30\n[collective]\nkind = "allreduce"\nmessage_bytes = 1048576\n'
            'iterations = 3\n')
    scn = scenario.parse(text)
    summary = {"iteration_times_ms": [400.0, 900.0, 500.0], "world_size": 4}
    out = run_summary.bandwidth_and_delay(scn, "tcp", tmp_path, summary)
    assert out["line_rate_fraction"] == 0.419
    assert out["busbw_mbit"] == pytest.approx(25.165824)     # the same busbw, per rank
    assert out["fabric_delay_p999_ms"] is None          # tcp: no MRC data packets to time
    assert run_summary.bandwidth_and_delay(scn, "mrc", tmp_path, {"iteration_times_ms": [],
                                                             "world_size": 4}) == {
        "busbw_mbit": None, "line_rate_fraction": None, "fabric_delay_p999_ms": None}
