"""A fault schedule against the link arithmetic (emulation/config/scenario_timing.py): the
shortest an iteration can take, worked by hand from the bytes each rank must move and its NIC
ports' rate, and the schedules that fit or may land after the traffic."""
import pytest

from emulation.config import scenario as S
from emulation.config import scenario_timing as timing
from tests.helpers.scenario_texts import fabric_table, link_fault


def scenario(collective: str, faults: str = "", **fabric) -> str:
    return 'name = "t"\n' + fabric_table(**fabric) + "[collective]\n" + collective + faults


# The demo's traffic: 4 hosts, ring all-reduce of 2 MiB, 2 planes of 100 Mbit/s. Each rank sends
# (and receives) 2 (4-1)/4 x 2,097,152 = 3,145,728 bytes an iteration over 2 x 100 Mbit/s:
# 3,145,728 x 8 / 200e6 = 0.12582912 s; 60 iterations at least 7.5497472 s; the last starts at
# the earliest 59 x 0.12582912 = 7.42391808 s after the timed start.
DEMO = 'kind = "allreduce"\nmessage_bytes = 2097152\niterations = 60\n'


def bound(text: str) -> timing.TrafficBound:
    scn = S.parse(text)
    return timing.traffic_bound(scn.collective, scn.topology)


def test_a_ring_all_reduce_moves_2_n_minus_1_over_n_of_the_message_each_iteration():
    b = bound(scenario(DEMO, link_mbit=100))
    assert b.bytes_per_iteration == 3_145_728
    assert b.iteration_s == pytest.approx(0.12582912)
    assert b.traffic_s == pytest.approx(7.5497472)
    assert b.latest_offset_s(0) == pytest.approx(7.42391808)
    assert b.latest_offset_s(59) == 0.0


def test_an_incast_is_bound_by_what_the_target_receives():
    # 8 hosts, 7 senders of 262,144 bytes each into h0: 1,835,008 bytes over 2 x 30 Mbit/s =
    # 1,835,008 x 8 / 60e6 = 0.24466773 s (a sender alone would need a seventh of that)
    text = scenario('kind = "incast"\nmessage_bytes = 262144\niterations = 20\n',
                    hosts_per_group=4, link_mbit=30)
    b = bound(text)
    assert b.bytes_per_iteration == 1_835_008
    assert b.iteration_s == pytest.approx(0.244667733)


def test_a_bisection_moves_the_message_once_per_flow():
    # 1 MiB from each of h0, h1 to h2, h3: 1,048,576 x 8 / 200e6 = 0.04194304 s
    b = bound(scenario('kind = "bisection"\nmessage_bytes = 1048576\niterations = 5\n',
                       link_mbit=100))
    assert b.bytes_per_iteration == 1_048_576
    assert b.iteration_s == pytest.approx(0.04194304)


def error_of(text: str) -> str:
    with pytest.raises(S.ScenarioError) as info:
        S.parse(text, source="x.toml")
    return str(info.value)


def test_an_at_s_the_traffic_may_not_reach_is_refused_with_the_arithmetic_and_what_to_use():
    down = link_fault("link_down", "t0p0g0", "t1p0s0", at_s=7.42)
    S.parse(scenario(DEMO, down, link_mbit=100))                   # 7.42 <= 7.4239
    late = scenario(DEMO, link_fault("link_down", "t0p0g0", "t1p0s0", at_s=9.0), link_mbit=100)
    err = error_of(late)
    line = late.splitlines().index("at_s = 9.0") + 1
    assert err.startswith(f"x.toml:{line}: [[faults]] #1 at_s: is due 9 s after the timed start"), err
    assert "the traffic can end 7.55 s after that (60 timed iterations; each rank moves " \
           "3,145,728 payload bytes an iteration over 2 x 100 Mbit/s" in err
    assert "at most 7.424 s after the timed start" in err
    assert "place it by iteration instead (at_iteration = 0...59: when a rank starts that " \
           "timed iteration)" in err


# 40 iterations of a 1 MiB ring all-reduce over 2 x 30 Mbit/s: 1,572,864 x 8 / 60e6 = 0.2097152 s
# an iteration; from timed iteration 6, 33 more iterations can start within 33 x 0.2097152 =
# 6.9206016 s.
GRAY = 'kind = "allreduce"\nmessage_bytes = 1048576\niterations = 40\n'


def loss_and_clear(at_iteration, *after_s):
    text = link_fault("gray_loss", "t0p0g0", "t1p0s0", at_iteration=at_iteration).replace(
        'action = "gray_loss"', 'action = "gray_loss"\npercent = 20')
    for i, gap in enumerate(after_s):
        action = "gray_loss_clear" if i == len(after_s) - 1 else "link_down"
        text += link_fault(action, "t0p0g0", "t1p0s0", after_s=gap)
    return text


def test_an_after_s_counts_from_the_entry_it_follows_and_must_leave_the_traffic_running():
    S.parse(scenario(GRAY, loss_and_clear(6, 6.9), link_mbit=30))
    err = error_of(scenario(GRAY, loss_and_clear(6, 7.0), link_mbit=30))
    assert "[[faults]] #2 after_s: is due 7 s after timed iteration 6 starts" in err
    assert "at most 6.921 s after timed iteration 6 starts" in err
    assert "use a shorter after_s" in err
    # a chain adds up: 3.5 + 3.5 = 7.0 after iteration 6
    assert "#3 after_s: is due 7 s after timed iteration 6" in error_of(
        scenario(GRAY, loss_and_clear(6, 3.5, 3.5), link_mbit=30))


def test_a_flap_must_end_inside_the_traffic():
    # period 2 s, 4 cycles: down at 0, 2, 4, 6 s, the last up at 7 s
    flap = link_fault("flap", "t0p0g0", "t1p0s0", at_iteration=4).replace(
        'action = "flap"', 'action = "flap"\nperiod_s = 2.0\ncount = 4')
    S.parse(scenario(GRAY, flap, link_mbit=30))           # 35 x 0.2097152 = 7.34 s >= 7
    err = error_of(scenario(GRAY, flap.replace("at_iteration = 4", "at_iteration = 6"),
                            link_mbit=30))
    assert "starts 0 s after timed iteration 6 starts and flaps for 7 s" in err


def test_a_clear_that_may_come_before_its_fault_is_refused():
    down = link_fault("link_down", "t0p0g0", "t1p0s0", at_iteration=10)
    up_by_time = link_fault("link_up", "t0p0g0", "t1p0s0", at_s=5.0)
    err = error_of(scenario(GRAY, down + up_by_time, link_mbit=30))
    assert "#2: link_up on t0p0g0~t1p0s0 may come before the link_down of entry #1" in err
    S.parse(scenario(GRAY, down + link_fault("link_up", "t0p0g0", "t1p0s0", after_s=5.0),
                     link_mbit=30))
    S.parse(scenario(GRAY, down + link_fault("link_up", "t0p0g0", "t1p0s0", at_iteration=12),
                     link_mbit=30))
    # a link_up before its link_down at the same anchor is a repair of nothing
    err = error_of(scenario(GRAY, link_fault("link_down", "t0p0g0", "t1p0s0", at_s=4.0)
                            + link_fault("link_up", "t0p0g0", "t1p0s0", at_s=2.0), link_mbit=30))
    assert "#2: link_up on t0p0g0~t1p0s0 clears nothing" in err
    # a link_up on a link nothing takes down is the controller's business, not a schedule error
    S.parse(scenario(GRAY, link_fault("link_up", "t0p0g0", "t1p0s0", at_s=2.0), link_mbit=30))


def test_the_time_scale_does_not_change_the_bound():
    """Times and rates of the file are the emulated world's: k stretches both."""
    text = scenario(DEMO, link_mbit=100)
    assert bound(text) == bound(text.replace("time_scale = 1", "time_scale = 8"))
