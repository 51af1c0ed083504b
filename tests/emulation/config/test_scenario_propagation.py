"""[fabric] host_link_delay_ms and fabric_link_delay_ms: range-checked with the key and line, carried
into the fabric spec, and a fixed wait the propagation alone outlasts refused; the random-loss
scenario runs at a BDP of at least 64 packets per plane on every path."""
import pytest

from emulation.config import scenario as S
from model import propagation
from tests.helpers.paths import REPO

# 5 ms per host link, 1 ms per fabric link: 12 ms one way across groups, 24 ms both ways
DELAYED = """name = "t"
[fabric]
time_scale = 1
host_link_delay_ms = 5
fabric_link_delay_ms = 1
[collective]
iterations = 4
"""


def error_of(text):
    with pytest.raises(S.ScenarioError) as info:
        S.parse(text, source="x.toml")
    return str(info.value)


def test_the_delays_reach_the_spec():
    spec = S.parse(DELAYED).spec
    assert (spec.host_link_delay_ms, spec.fabric_link_delay_ms) == (5.0, 1.0)
    assert propagation.one_way_delay_ns(spec) == 12_000_000
    assert S.parse('[fabric]\ntime_scale = 1\n').spec.host_link_delay_ms == 0.0


@pytest.mark.parametrize("line, words", [
    ("host_link_delay_ms = -1", "x.toml:4: [fabric] host_link_delay_ms: must be between 0.0 and "
                                "100.0"),
    ("fabric_link_delay_ms = 101", "x.toml:4: [fabric] fabric_link_delay_ms: must be between"),
    ('host_link_delay_ms = "3"', "[fabric] host_link_delay_ms: must be a number"),
])
def test_a_bad_delay_names_the_key_and_line(line, words):
    assert words in error_of(f'name = "t"\n[fabric]\ntime_scale = 1\n{line}\n')


@pytest.mark.parametrize("table, setting, key", [
    ("mrc.endpoint", "base_rtt_ns = 20000000", "[mrc.endpoint] base_rtt_ns"),
    ("mrc.endpoint", "path_probe_interval_ms = 20\npath_probe_timeout_ms = 24",
     "[mrc.endpoint] path_probe_timeout_ms"),
    ("mrc.qp", "rto_ns = 24000000", "[mrc.qp] rto_ns"),
    ("mrc.qp", "roce_ack_timeout_ns = 1000000", "[mrc.qp] roce_ack_timeout_ns"),
    # 4.096 us x 2^12 = 16.8 ms
    ("mrc.qp", "roce_ack_timeout = 12", "[mrc.qp] roce_ack_timeout"),
])
def test_a_fixed_wait_the_propagation_outlasts_is_refused(table, setting, key):
    text = DELAYED + f"[{table}]\n{setting}\n"
    message = error_of(text)
    assert key in message and "24 ms" in message and "no answer can come in time" in message


@pytest.mark.parametrize("table, setting", [
    ("mrc.endpoint", "base_rtt_ns = 25000000"),
    ("mrc.qp", "roce_ack_timeout = 13"),                  # 33.6 ms
    ("mrc.endpoint", "path_probe_interval_ms = 20"),      # the default 250 ms timeout
])
def test_a_wait_longer_than_the_propagation_passes(table, setting):
    S.parse(DELAYED + f"[{table}]\n{setting}\n")


def test_without_delay_no_wait_is_judged_by_it():
    S.parse('[fabric]\ntime_scale = 1\n[mrc.qp]\nrto_ns = 1000\n')


@pytest.mark.parametrize("short", [False, True])
def test_random_loss_fabric_with_its_delays_holds_at_least_64_packets_per_plane(short):
    """The paper's fabrics hold on the order of a hundred packets per BDP: random-loss's fabric
    (30 Mbit/s, MTU 1500) with 6.5 ms per host link and 0.25 ms per fabric link holds at least
    64 on every path, the same-T0 ones too (2 x 2 x 6.5 ms = 26 ms of round trip alone is
    30e6 / 8 x 0.026 / 1538 = 63.4 frames, plus serialization)."""
    spec = S.parse((REPO / "experiments" / "random-loss.toml").read_text(), short=short).spec
    assert (spec.host_link_delay_ms, spec.fabric_link_delay_ms) == (6.5, 0.25)
    frame = propagation.wire_frame_bytes(spec)
    for across in (True, False):
        rtt_s = propagation.path_rtt_ns(spec, across_groups=across) / 1e9
        assert spec.host_link_mbit * 1e6 / 8 * rtt_s / frame >= 64
