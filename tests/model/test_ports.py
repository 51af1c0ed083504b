"""model.ports: the controller's two ports are distinct, and a scenario cannot put its metrics
server on either (both listen on 127.0.0.1; the second bind would fail mid-run)."""
import pytest

from emulation.config import scenario as S
from model.ports import API_PORT, CONTROLLER_PORTS, OF_PORT

BASE = '[fabric]\nplanes = 2\n[transport]\nnames = ["tcp"]\n'


def test_the_controller_ports_are_distinct_and_unprivileged():
    assert OF_PORT != API_PORT and set(CONTROLLER_PORTS) == {OF_PORT, API_PORT}
    assert all(1024 <= p <= 65535 for p in CONTROLLER_PORTS)


@pytest.mark.parametrize("port", [OF_PORT, API_PORT])
def test_a_metrics_port_on_a_controller_port_is_refused(port):
    with pytest.raises(S.ScenarioError, match=f"metrics_port: {port} is the controller's"):
        S.parse(BASE + f"[options]\nmetrics_port = {port}\n")


def test_another_metrics_port_is_accepted():
    assert S.parse(BASE + "[options]\nmetrics_port = 9302\n").metrics_port == 9302
