"""MRCConfig validation field by field, and 24-bit PSN unwrapping at the half-way point
(traffic/core/qp_config.py). The fields that must be positive are every count, size, rate and
duration for which 0 means nothing: listed here by hand, not read from the code."""
import pytest

from traffic.core.qp_config import MRCConfig, unwrap

MUST_BE_POSITIVE = [
    "ev_count", "probe_k", "max_payload", "mpr", "base_rtt_ns", "rto_min_ns", "rto_max_ns",
    "ack_every", "port_rate_Bps", "pacing_burst_packets", "reverse_evs_per_plane",
    "reverse_probe_fail_limit", "roce_window_psns", "roce_retry_limit", "probe_period_rtts",
    "probe_timeout_rtts", "reverse_probe_rtts", "reverse_idle_rtts", "rto_rtts", "ack_delay_rtts",
    "evs_per_path", "skip_backoff_max"]


@pytest.mark.parametrize("name", MUST_BE_POSITIVE)
def test_zero_is_refused_naming_the_field(name):
    with pytest.raises(ValueError) as e:
        MRCConfig(**{name: 0})
    assert str(e.value) == f"MRCConfig.{name} must be positive, got 0"
    with pytest.raises(ValueError, match=f"MRCConfig.{name} must be positive, got True"):
        MRCConfig(**{name: True})


@pytest.mark.parametrize("name", ["probe_period_ns", "skip_ns"])
def test_optional_times_are_positive_integers(name):
    assert getattr(MRCConfig(**{name: 1}), name) == 1
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError) as e:
            MRCConfig(**{name: bad})
        assert str(e.value) == f"MRCConfig.{name} must be a positive integer (ns) or None, got {bad!r}"


def test_pinning_fields():
    assert MRCConfig(ev_count=8, ev_pin_spine=0, ev_pin_count=1).ev_pin_count == 1
    assert MRCConfig(ev_count=8, ev_pin_spine=0, ev_pin_count=8).ev_pin_count == 8
    cases = [({"ev_pin_spine": -1}, "MRCConfig.ev_pin_spine must be a spine index >= 0 or None, got -1"),
             ({"ev_pin_spine": True}, "MRCConfig.ev_pin_spine must be a spine index >= 0 or None, got True"),
             ({"ev_pin_spine": 1.0}, "MRCConfig.ev_pin_spine must be a spine index >= 0 or None, got 1.0"),
             ({"ev_pin_count": 2}, "MRCConfig.ev_pin_count needs ev_pin_spine (which spine to pin to)"),
             ({"ev_count": 8, "ev_pin_spine": 0, "ev_pin_count": 9},
              "MRCConfig.ev_pin_count must be in 1..ev_count with ev_pin_spine set, got 9")]
    for kw, message in cases:
        with pytest.raises(ValueError) as e:
            MRCConfig(**kw)
        assert str(e.value) == message


def test_unwrap_takes_the_nearest_absolute_psn():
    """24-bit PSNs, half the space = 2^23: a PSN up to 2^23 - 1 ahead of ref is ahead, one
    exactly 2^23 away is taken as behind."""
    ref = (1 << 24) + 100                              # absolute; its 24-bit PSN is 100
    assert unwrap(100, ref) == ref
    assert unwrap(99, ref) == ref - 1
    assert unwrap(101, ref) == ref + 1
    assert unwrap((100 + (1 << 23) - 1) & 0xFFFFFF, ref) == ref + (1 << 23) - 1
    assert unwrap((100 + (1 << 23)) & 0xFFFFFF, ref) == ref - (1 << 23)
    assert unwrap((100 - 5) & 0xFFFFFF, 3) == 3 + 92   # near zero: 95 is ahead of 3
    assert unwrap(0xFFFFFF, 1 << 24) == (1 << 24) - 1  # just behind a wrap


MUST_NOT_BE_NEGATIVE = ["ev_backup_count", "skip_rtts", "header_overhead", "reorder_rtts",
                        "congestion_grace_rtts", "congestion_delay_rtts",
                        "congestion_forgive_rtts", "fabric_delay_bound_ns", "loss_verdict_ns"]


@pytest.mark.parametrize("name", MUST_NOT_BE_NEGATIVE)
def test_zero_is_allowed_and_negative_refused(name):
    assert getattr(MRCConfig(**{name: 0}), name) == 0
    with pytest.raises(ValueError) as e:
        MRCConfig(**{name: -1})
    assert str(e.value) == f"MRCConfig.{name} must be >= 0, got -1"


def error(**kw) -> str:
    with pytest.raises(ValueError) as e:
        MRCConfig(**kw)
    return str(e.value)


def test_mpr_window_must_stay_below_half_the_psn_space():
    """MPR counts units of 128 PSNs (OCP); the window must stay under 2^23 PSNs so PSNs unwrap
    unambiguously: 65535 x 128 = 2^23 - 128 fits, 65536 x 128 = 2^23 does not."""
    assert MRCConfig(mpr=65535).mpr_window == (1 << 23) - 128
    assert error(mpr=65536) == "MRCConfig.mpr 65536 too large for 24-bit PSNs"


def test_start_psn_and_floor_ranges():
    assert MRCConfig(start_psn=0xFFFFFF).start_psn == 0xFFFFFF
    assert error(start_psn=1 << 24) == "MRCConfig.start_psn must fit 24 bits, got 16777216"
    assert MRCConfig(ev_count=8, ev_min_active=0).ev_min_active == 0
    assert MRCConfig(ev_count=8, ev_min_active=8).ev_min_active == 8
    for bad in (9, -1):
        assert error(ev_count=8, ev_min_active=bad) == \
            f"MRCConfig.ev_min_active must be in 0..ev_count, got {bad}"


def test_ocp_retry_and_timeout_fields_take_their_whole_range_and_no_bools():
    for lin in (0, 7):
        assert MRCConfig(retry_linear_count=lin).retry_linear_count == lin
    for exp in (0, 25):
        assert MRCConfig(retry_exp_count=exp).retry_exp_count == exp
    assert error(retry_linear_count=True) == \
        "MRCConfig.retry_linear_count must be an integer in 0..7 (OCP mrc.h), got True"
    assert error(ack_timeout=True) == ("MRCConfig.ack_timeout must be an integer in 0..24 "
                                       "(1.024 us x 2^timeout, OCP mrc.h), got True")
    assert error(ack_timeout=10, rto_ns=5_000_000) == (
        "MRCConfig: set ack_timeout or rto_ns, not both (both fix the base retransmission timeout)")


def test_loss_policy_and_md_bound_messages():
    assert error(loss_policy="lenient") == \
        "MRCConfig.loss_policy must be one of ocp, tolerant, got 'lenient'"
    assert MRCConfig(nscc_max_md_jump=0.5).nscc_max_md_jump == 0.5
    for bad in (0, 0.6, 1.0):
        assert error(nscc_max_md_jump=bad) == ("MRCConfig.nscc_max_md_jump must be in (0, 0.5] "
                                               "(MD factor >= 0.5)")


NSCC_OPTIONAL = ["nscc_adjust_bytes_threshold", "nscc_adjust_period_threshold", "nscc_eta",
                 "nscc_fi", "nscc_fi_scale", "nscc_max_cwnd", "nscc_qa_threshold",
                 "nscc_target_delay"]


@pytest.mark.parametrize("name", NSCC_OPTIONAL)
def test_nscc_knobs_are_none_or_not_negative(name):
    assert getattr(MRCConfig(**{name: 0}), name) == 0
    assert error(**{name: -1}) == f"MRCConfig.{name} must be >= 0 or None, got -1"


def test_roce_timeout_gate_and_ewma_gain_bounds():
    """roce_ack_timeout_ns: a positive integer of ns (1 is legal); nscc_qa_gate: a shift 0..31;
    nscc_delay_alpha: an EWMA gain in (0, 1]."""
    assert MRCConfig(roce_ack_timeout_ns=1).roce_ack_timeout_ns == 1
    for bad in (0, True, 1.5):
        assert error(roce_ack_timeout_ns=bad) == (
            f"MRCConfig.roce_ack_timeout_ns must be a positive integer (ns) or None, got {bad!r}")
    assert MRCConfig(nscc_qa_gate=0).nscc_qa_gate == 0
    assert MRCConfig(nscc_qa_gate=31).nscc_qa_gate == 31
    assert "nscc_qa_gate must be an integer in 0..31" in error(nscc_qa_gate=32)
    assert MRCConfig(nscc_delay_alpha=1).nscc_delay_alpha == 1
    assert error(nscc_delay_alpha=0) == "MRCConfig.nscc_delay_alpha must be in (0, 1], got 0"
