"""model/timescale.py, the one time-scale module: times x k and rates / k on the way to the wall
world, the inverse on the way back, everything else unchanged; k a finite number >= 1. Expected
values are worked by hand from that rule."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model import timescale as T

SCALES = st.floats(min_value=1.0, max_value=1000.0, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- values by hand


def test_an_emulated_time_lasts_k_times_longer_on_the_wall_clock():
    assert T.wall_time(2.0, 4) == 8.0                    # 2 s emulated, 8 s wall
    assert T.wall_time(0.5, 4) == 2.0                    # a 0.5 ms RTT, 2 ms wall
    assert T.wall_ns(500_000, 4) == 2_000_000            # the same RTT in ns
    assert T.emulated_time(8.0, 4) == 2.0
    assert T.emulated_time(2.0, 4) == 0.5
    assert T.emulated_ns(2_000_000, 4) == 500_000


def test_an_emulated_rate_is_k_times_smaller_on_the_wall_clock():
    assert T.wall_rate(100.0, 4) == 25.0                 # 100 Mbit/s emulated, 25 wall
    assert T.wall_rate(100_000_000, 4) == 25_000_000     # the same in bit/s
    assert T.wall_rate(100, 3) == pytest.approx(33.333333333)   # a rate is not rounded
    assert T.wall_rate(1000.0, 4) == 250.0               # packets per second
    assert T.emulated_rate(25.0, 4) == 100.0
    assert T.emulated_rate(25_000_000, 4) == 100_000_000


def test_the_generic_conversion_is_the_named_ones():
    assert T.convert(2.0, T.TIME, 4, T.FORWARD) == 8.0
    assert T.convert(8.0, T.TIME, 4, T.BACK) == 2.0
    assert T.convert(100.0, T.RATE, 4, T.FORWARD) == 25.0
    assert T.convert(25.0, T.RATE, 4, T.BACK) == 100.0
    with pytest.raises(ValueError, match="kind must be"):
        T.convert(1.0, "bytes", 4, T.FORWARD)
    with pytest.raises(ValueError, match="direction must be"):
        T.convert(1.0, T.TIME, 4, "sideways")


def test_only_nanoseconds_are_kept_whole():
    assert T.emulated_ns(99, 4) == 25 and isinstance(T.emulated_ns(99, 4), int)   # 24.75
    assert T.emulated_ns(97, 4) == 24                    # 24.25
    assert T.wall_ns(3, 1.5) == 4                        # 4.5: Python rounds a half to even
    assert T.wall_ns(1, 1.5) == 2                        # 1.5 -> 2
    assert T.wall_ns(1.5e6, 2) == 3_000_000 and isinstance(T.wall_ns(1.5e6, 2), int)
    assert T.wall_time(3, 2.5) == 7.5                    # 3 ms is 7.5 ms, not 8
    assert T.emulated_time(3, 4) == 0.75                 # 3 s is 0.75 s, not 0 or 1


def test_unset_stays_unset_and_k_one_changes_nothing():
    assert T.wall_time(None, 4) is None
    assert T.wall_ns(None, 4) is None
    assert T.emulated_rate(None, 4) is None
    big = 2 ** 62 + 1                                    # beyond a float's whole numbers
    assert T.emulated_ns(big, 1) == big
    assert T.wall_time(big, 1.0) == big


def test_a_bool_or_a_string_is_not_a_quantity():
    with pytest.raises(TypeError):
        T.wall_time(True, 2)
    with pytest.raises(TypeError):
        T.wall_rate("100", 2)


def test_integer_arrays_keep_their_dtype():
    np = pytest.importorskip("numpy")
    wall = np.array([8, 99, 4_000_000_000], dtype=np.int64)
    out = T.emulated_ns(wall, 4)
    assert out.dtype == np.int64 and list(out) == [2, 25, 1_000_000_000]
    floats = T.emulated_ns(np.array([9.0]), 4)
    assert floats.dtype == np.float64 and floats[0] == 2.25


# ---------------------------------------------------------------- the kind of a named parameter


@pytest.mark.parametrize("name, kind", [
    ("at_s", T.TIME), ("period_s", T.TIME), ("port_poll_ms", T.TIME), ("rto_min_ns", T.TIME),
    ("delay_us", T.TIME), ("rate_mbit", T.RATE), ("goodput_bps", T.RATE),
    ("pkts_per_s", T.RATE), ("count", None), ("percent", None), ("rto_rtts", None),
    ("message_bytes", None), ("hosts", None), ("direction", None),
])
def test_the_suffix_rule(name, kind):
    assert T.kind_of(name) == kind


def test_declared_names_replace_the_suffix_rule():
    assert T.kind_of("period", time_params=("period",)) == T.TIME
    assert T.kind_of("at_s", time_params=("period",)) is None
    assert T.kind_of("speed", rate_params=("speed",)) == T.RATE
    assert T.kind_of("rate_mbit", rate_params=()) is None
    assert T.kind_of("x_per_s", rate_params=()) is None   # a rate name is never a time


def test_scale_params_forward_and_back_by_hand():
    flap = {"action": "flap", "a": "t0p0g0", "period_s": 0.5, "count": 2, "ok": True,
            "at_s": None}
    assert T.scale_params(flap, 4) == {"action": "flap", "a": "t0p0g0", "period_s": 2.0,
                                       "count": 2, "ok": True, "at_s": None}
    mark = {"action": "ecn_mark", "rate_mbit": 40, "direction": "both"}
    assert T.scale_params(mark, 4) == {"action": "ecn_mark", "rate_mbit": 10,
                                       "direction": "both"}
    record = {"t_ns": 8_000_000_001, "rtt_ns": 4000, "gap_ns": 10.0, "window_ms": 2,
              "bytes": 9000, "rate_mbit": 10.0}
    back = T.scale_params(record, 4, direction=T.BACK)
    assert back == {"t_ns": 2_000_000_000, "rtt_ns": 1000, "gap_ns": 2.5, "window_ms": 0.5,
                    "bytes": 9000, "rate_mbit": 40.0}
    assert isinstance(back["t_ns"], int)                 # an int of ns stays whole
    assert flap["period_s"] == 0.5                       # a copy: the input is kept


def test_scale_params_with_declared_lists():
    params = {"period": 0.5, "at_s": 1.0, "speed": 40.0, "rate_mbit": 40.0}
    assert T.scale_params(params, 4, time_params=("period",), rate_params=("speed",)) == {
        "period": 2.0, "at_s": 1.0, "speed": 10.0, "rate_mbit": 40.0}


# ---------------------------------------------------------------- round trips


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), SCALES)
def test_a_float_time_comes_back(t, k):
    assert T.emulated_time(T.wall_time(t, k), k) == pytest.approx(t, rel=1e-12, abs=1e-300)


@given(st.floats(min_value=0, max_value=1e12, allow_nan=False), SCALES)
def test_a_float_rate_comes_back(rate, k):
    assert T.emulated_rate(T.wall_rate(rate, k), k) == pytest.approx(rate, rel=1e-12,
                                                                     abs=1e-300)


@given(st.integers(min_value=-10 ** 12, max_value=10 ** 12), SCALES)
def test_whole_nanoseconds_come_back_exactly(t, k):
    assert T.emulated_ns(T.wall_ns(t, k), k) == t


@given(st.integers(min_value=0, max_value=10 ** 12), SCALES)
def test_an_int_rate_comes_back(rate, k):
    assert T.emulated_rate(T.wall_rate(rate, k), k) == pytest.approx(rate, rel=1e-12)


@given(SCALES)
def test_named_params_come_back(k):
    params = {"at_s": 1.5, "port_poll_ms": 3.0, "skip_ns": 3_000_000, "rate_mbit": 40,
              "pkts_per_s": 1000.0, "count": 2, "action": "flap"}
    back = T.scale_params(T.scale_params(params, k), k, direction=T.BACK)
    assert back.keys() == params.keys()
    for name in ("at_s", "port_poll_ms", "rate_mbit", "pkts_per_s"):
        assert back[name] == pytest.approx(params[name], rel=1e-12)
    assert (back["skip_ns"], back["count"], back["action"]) == (3_000_000, 2, "flap")


# ---------------------------------------------------------------- the one check of k


@pytest.mark.parametrize("k", [1, 1.0, 2.5, 1000])
def test_check_takes_a_finite_number_at_least_one(k):
    assert T.check(k) == float(k) and isinstance(T.check(k), float)


@pytest.mark.parametrize("k", [0.5, 0.99, 0, -1, math.nan, math.inf, -math.inf, "x", "2",
                               True, False, None, 1000.5, 1e308])
def test_check_refuses_and_names_the_value(k):
    with pytest.raises(T.TimeScaleError) as err:
        T.check(k)
    assert isinstance(err.value, ValueError)
    assert f"got {k!r}" in str(err.value)


@pytest.mark.parametrize("k", [0.5, math.nan, "x", True])
def test_every_conversion_applies_the_check(k):
    for call in (lambda: T.wall_time(1.0, k), lambda: T.wall_rate(1.0, k),
                 lambda: T.emulated_time(1.0, k), lambda: T.emulated_rate(1.0, k),
                 lambda: T.wall_ns(1, k), lambda: T.emulated_ns(1, k),
                 lambda: T.wall_time(None, k), lambda: T.scale_params({}, k)):
        with pytest.raises(T.TimeScaleError):
            call()
