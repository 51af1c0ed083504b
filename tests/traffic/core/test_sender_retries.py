"""Retries and the QP error state as OCP's API defines them (mrc.h, struct mrc_qp_attr):
timeout = local ACK timeout 1.024 us x 2^timeout (max 24), retry.linear_cnt fixed-interval
retries (max 7), then retry.exp_cnt exponential backoff retries (max 25, 25 = infinite); a QP
whose retries run out goes to error and flushes its posted work requests (verbs:
IBV_WC_RETRY_EXC_ERR for the request that failed, IBV_WC_WR_FLUSH_ERR for the rest).
Expected times are computed by hand below, in the simulated network with every path dead."""
import pytest

from model.events import Event
from tests.helpers.simnet import Harness, SimNet
from traffic.core.qp_config import MRCConfig
from traffic.core.work_requests import (WC_FLUSH_ERR, WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR, WC_SUCCESS,
                                   QPError)

pytestmark = pytest.mark.core

# timeout = 10: 1.024 us x 2^10 = 1024 x 1024 ns = 1.048576 ms
T = 1_048_576


def ocp_config(**kw) -> MRCConfig:
    base = dict(ack_timeout=10, retry_linear_count=3, retry_exp_count=2,
                retry_fixed_interval=True, nscc_enabled=False, ev_count=8, ev_backup_count=8,
                max_payload=1000)
    base.update(kw)
    return MRCConfig(**base)


def dead_fabric_harness(cfg: MRCConfig) -> Harness:
    net = SimNet(seed=3, planes=2, spines=2)
    net.failed_planes.update({0, 1})
    return Harness(net, cfg=cfg)


def test_ack_timeout_exponent_is_ocp_units():
    assert ocp_config().ack_timeout_ns == T
    assert MRCConfig(ack_timeout=0).ack_timeout_ns == 1024
    assert MRCConfig(ack_timeout=24).ack_timeout_ns == 1024 * 2 ** 24    # 17.18 s, OCP's max


def test_linear_then_exponential_schedule_then_qp_error_at_the_time_computed_by_hand():
    h = dead_fabric_harness(ocp_config())
    start = h.clock.now_ns
    h.post([1000, 1000, 1000])            # three WRITEs, one packet each, all sent at `start`
    h.run_until_idle(until_ns=10_000_000_000)
    # PSN 0: sent at 0; linear retries wait T each: retransmitted at T, 2T, 3T; then the
    # exponential retries wait 2T and 4T: retransmitted at 4T (after the third linear retry's
    # T) and 6T (after 2T); the last one's 4T runs out at 10T: 3 + 2 retries spent -> error.
    retx = [e["t_ns"] - start for e in h.events_of(Event.RETRANSMIT, psn=0)]
    assert retx == [T, 2 * T, 3 * T, 4 * T, 6 * T]
    errors = h.events_of(Event.QP_ERROR)
    assert len(errors) == 1 and errors[0]["t_ns"] - start == 10 * T
    assert "5 retries" in h.sender.error


def test_qp_error_flushes_every_posted_write_and_refuses_new_ones():
    h = dead_fabric_harness(ocp_config())
    h.post([1000, 1000, 1000])
    # a fourth WRITE still waiting to be segmented when the QP fails: it is flushed too
    h.sender.post_write(b"y" * 5000, 0, 0)
    h.run_until_idle(until_ns=10_000_000_000)
    comps = h.sender.pop_completions()
    # Timers of equal deadline fire in PSN order, so PSN 0 (message 0) is the one whose retries
    # ran out; the others are flushed, in posting order.
    assert [(c.msn, c.status) for c in comps] == [
        (0, WC_RETRY_EXC_ERR), (1, WC_FLUSH_ERR), (2, WC_FLUSH_ERR), (3, WC_FLUSH_ERR)]
    assert [c.bytes for c in comps] == [1000, 1000, 1000, 5000]
    assert not any(c.ok for c in comps)
    assert h.sender.idle                  # nothing is left posted
    with pytest.raises(QPError, match="in error"):
        h.sender.post_write(b"x", 0, 0)
    assert h.sender.poll(h.clock.now_ns) == []


def test_the_default_is_ocps_schedule_retry_by_retry():
    """Defaults (OCP examples/mrc_qp.md): linear_cnt 7 at a fixed interval, exp_cnt 25 =
    infinite. Base RTO 1 ms, cap 64 ms, every path dead. The first send at 0 and the 7 linear
    retries each wait 1 ms: retries at 1..8 ms; then the waits double: 2, 4, 8, 16, 32, then
    the 64 ms cap: retries at 10, 14, 22, 38, 70, 134, 198 ms; the QP never errors."""
    cfg = MRCConfig()
    assert (cfg.retry_linear_count, cfg.retry_exp_count, cfg.retry_fixed_interval,
            cfg.retry_budget) == (7, 25, True, None)
    h = dead_fabric_harness(MRCConfig(rto_ns=1_000_000, rto_max_ns=64_000_000,
                                      nscc_enabled=False, ev_count=8, ev_backup_count=8,
                                      max_payload=1000))
    start = h.clock.now_ns
    h.post([1000])
    h.run(until_ns=start + 200_000_000)
    assert h.clock.now_ns - start >= 200_000_000
    retx = [(e["t_ns"] - start) // 1_000_000 for e in h.events_of(Event.RETRANSMIT, psn=0)]
    assert retx[:15] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 22, 38, 70, 134, 198]
    assert h.sender.error is None and not h.events_of(Event.QP_ERROR)


def test_infinite_exponential_retries_never_fail_the_qp():
    h = dead_fabric_harness(ocp_config(retry_exp_count=25, rto_max_ns=64 * T))
    start = h.clock.now_ns
    h.post([1000])
    h.run(until_ns=3_000_000_000)
    assert h.sender.error is None and not h.events_of(Event.QP_ERROR)
    # 3 linear retries (T each) then waits 2T, 4T, ... capped at 64T: retries keep coming
    retx = [e["t_ns"] - start for e in h.events_of(Event.RETRANSMIT, psn=0)]
    gaps = [b - a for a, b in zip([0] + retx, retx)]
    assert gaps[:9] == [T, T, T, T, 2 * T, 4 * T, 8 * T, 16 * T, 32 * T]
    assert set(gaps[9:]) == {64 * T} and len(retx) > 9 + 10


def test_remote_access_error_completes_the_refused_write_with_its_own_status():
    h = Harness(SimNet(seed=4), cfg=MRCConfig(ev_count=8, ev_backup_count=8))
    _, region = h.post([3000])
    # delivered before the refused WRITE is sent: over several paths a later packet can
    # overtake it, and the QP's error would flush it
    h.run_until_idle(until_ns=2_000_000_000)
    h.sender.post_write(b"z" * 100, region.va, region.rkey ^ 0xFFFF)     # unknown rkey
    h.sender.post_write(b"w" * 100, region.va, region.rkey)
    h.run_until_idle(until_ns=2_000_000_000)
    statuses = [(c.msn, c.status) for c in h.sender.pop_completions()]
    assert statuses == [(0, WC_SUCCESS), (1, WC_REM_ACCESS_ERR), (2, WC_FLUSH_ERR)]


@pytest.mark.parametrize("kw, field", [
    ({"retry_linear_count": 8}, "retry_linear_count"),        # OCP max 7
    ({"retry_linear_count": -1}, "retry_linear_count"),
    ({"retry_exp_count": 26}, "retry_exp_count"),             # OCP max 25 (= infinite)
    ({"ack_timeout": 25}, "ack_timeout"),                     # OCP max 24
    ({"ack_timeout": 10, "rto_ns": 5_000_000}, "ack_timeout or rto_ns"),
])
def test_out_of_range_retry_settings_are_refused_by_name(kw, field):
    with pytest.raises(ValueError, match=field):
        MRCConfig(**kw)


def test_retry_budget_is_linear_plus_exponential_unless_infinite():
    assert MRCConfig(retry_exp_count=3).retry_budget == 10
    assert MRCConfig(retry_exp_count=25).retry_budget is None
