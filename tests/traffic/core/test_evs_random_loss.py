"""Random loss under OCP's loss rule: every loss without trim retires the EV it travelled on
(the paper's rule), so a QP's EVs must outnumber what random loss retires before probes return
them. With one EV per path, 2% loss empties a plane of EVs and the other plane carries the
traffic alone; with MRCConfig's default of several per path (OCP's examples use 128-256 EVs)
both planes keep their half. Real SenderQP/ReceiverQP over the simulated lossy network
(tests/helpers/simnet.py, fake clock)."""
import pytest

from model.topology import ev_plane
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet, count_data

pytestmark = pytest.mark.core

MS = 1_000_000


def plane_shares(evs_per_path: int | None) -> list[float]:
    """Fraction of the data packets each plane carried over 2% random loss on every packet."""
    net = SimNet(planes=2, spines=2, seed=11, loss=0.02)
    extra = {} if evs_per_path is None else {"evs_per_path": evs_per_path}
    # retired EVs probed every 20 base RTTs, as the emulated fabric's endpoints do
    h = Harness(net, MRCConfig(max_payload=1000, base_rtt_ns=MS, probe_period_rtts=20.0, **extra))
    per_plane = count_data(net, lambda pkt: ev_plane(pkt.ev))
    h.transfer([250_000] * 8)
    total = sum(per_plane.values())
    return [per_plane[p] / total for p in (0, 1)]


def test_the_default_ev_set_keeps_both_planes_in_use_under_random_loss():
    # the sender alternates planes packet by packet while both have an EV: half each
    assert MRCConfig().evs_per_path == 4
    assert all(share > 0.4 for share in plane_shares(None))


def test_one_ev_per_path_lets_random_loss_empty_a_plane():
    assert min(plane_shares(1)) < 0.3
