"""summary.json records the MRC loss policy in force (a reader must know whether the
recovery figures measure OCP's rule or the emulator's tolerant one)."""
from pathlib import Path

from emulation import runner, scenario

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo.toml"


def _with_qp(text: str, qp_lines: str) -> str:
    return text + "\n[mrc.qp]\n" + qp_lines + "\n" if "[mrc.qp]" not in text else \
        text.replace("[mrc.qp]\n", "[mrc.qp]\n" + qp_lines + "\n", 1)


def test_default_policy_is_the_tolerant_one():
    # The README and traffic/loss_policy.py document "tolerant" as the default.
    assert runner.loss_policy_in_force(scenario.load(DEMO)) == "tolerant"


def test_a_scenario_choosing_ocp_is_recorded_as_ocp(tmp_path):
    path = tmp_path / "ocp.toml"
    path.write_text(_with_qp(DEMO.read_text(), 'loss_policy = "ocp"'))
    assert runner.loss_policy_in_force(scenario.load(path)) == "ocp"
