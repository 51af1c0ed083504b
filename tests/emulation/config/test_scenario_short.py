"""Scenario [short] versions and [mrc] tables: what the runner's --short runs, what reaches the
worker's "mrc" config, and the errors (key and line named) for anything wrong in either."""

import pytest

from emulation.run import run_faults, runner
from emulation.config import scenario as S
from tests.helpers.scenario_texts import fabric_table
from traffic.nic.endpoint_support import EndpointConfig
from tests.helpers.paths import REPO

SHIPPED = sorted((REPO / "experiments").glob("*.toml"))

# Links of 1 Mbit/s: at line rate an iteration takes at least 6.3 s (full) and 1.6 s (short),
# so every fault below lands inside the traffic (emulation/config/scenario_timing.py).
BASE = """
name = "t"
""" + fabric_table(link_mbit=1) + """[collective]
kind = "allreduce"
message_bytes = 1048576
iterations = 40
timeout_s = 30
[short]
iterations = 10
message_bytes = 262144
capture = false
fault_time_factor = 0.5
[[faults]]
at_s = 4.0
action = "flap"
a = "t0p0g0"
b = "t1p0s0"
period_s = 2.0
count = 3
[[faults]]
at_iteration = 20
action = "link_down"
a = "t0p0g0"
b = "t1p0s1"
[[faults]]
at_iteration = 39
action = "link_up"
a = "t0p0g0"
b = "t1p0s1"
"""


def error_of(text, short=False):
    with pytest.raises(S.ScenarioError) as info:
        S.parse(text, source="x.toml", short=short)
    return str(info.value)


def test_every_shipped_scenario_has_a_short_version_that_is_smaller():
    for path in SHIPPED:
        full, short = S.load(path), S.load(path, short=True)
        assert short.short and short.has_short and full.has_short and not full.short, path
        assert short.collective.iterations < full.collective.iterations, path
        assert short.collective.message_bytes <= full.collective.message_bytes, path
        assert len(short.faults) == len(full.faults), path
        for f in short.faults:   # every fault still lands inside the short run
            if f.at_iteration is not None:
                assert 0 <= f.at_iteration < short.collective.iterations, path


def test_short_overrides_collective_options_and_scales_the_fault_schedule():
    full, short = S.parse(BASE), S.parse(BASE, short=True)
    assert (full.collective.iterations, full.collective.message_bytes, full.capture) == \
        (40, 1048576, True)
    assert (short.collective.iterations, short.collective.message_bytes, short.capture) == \
        (10, 262144, False)
    assert short.collective.timeout_s == 30.0            # not overridden: kept
    flap, down, up = short.faults
    assert flap.at_s == 2.0 and flap.commands[0]["period_s"] == 1.0
    assert full.faults[0].commands[0]["period_s"] == 2.0
    assert down.at_iteration == 5                         # 20 of 40 -> 5 of 10
    assert up.at_iteration == 9                           # 39 of 40 -> clamped to the last one


def test_short_without_a_short_table_is_a_clear_error():
    text = BASE.split("[short]")[0] + "[[faults]]" + BASE.split("[[faults]]", 1)[1]
    assert S.parse(text).has_short is False
    assert "has no [short] table" in error_of(text, short=True)


@pytest.mark.parametrize("edit,expect", [
    (("fault_time_factor = 0.5", "fault_time_factor = 0.5\niteratons = 3"), "x.toml:21: [short] iteratons: unknown key"),
    (("fault_time_factor = 0.5", "fault_time_factor = 2.0"), "x.toml:20: [short] fault_time_factor: must be between 0.01 and 1.0"),
    (("fault_time_factor = 0.5", "time_scale = 0.5"), "x.toml:20: [short] time_scale: unknown key here (renamed: use fault_time_factor"),
    (("message_bytes = 262144", "message_bytes = 262142"), "must be a multiple of 4 (float32), got 262142 (in the short version"),
    (("capture = false", "capture = 1"), "[short] capture: must be true or false, got 1"),
])
def test_bad_short_tables_fail_even_when_the_full_version_is_asked_for(edit, expect):
    old, new = edit
    assert old in BASE
    assert expect in error_of(BASE.replace(old, new, 1))


MRC = BASE + """
[mrc]
ring_bytes = 2097152
fragment_bytes = 131072
linger_s = 0.5
[mrc.endpoint]
base_rtt_ns = 2000000
port_poll_ms = 3.0
[mrc.qp]
retry_exp_count = 12
rto_rtts = 30.0
ev_count = 16
"""


def test_mrc_table_reaches_the_worker_config_of_both_versions(tmp_path):
    for short in (False, True):
        scn = S.parse(MRC, short=short)
        cfg = runner.worker_config(scn, "mrc", tmp_path).to_dict()
        assert cfg["mrc"] == {"ring_bytes": 2097152, "fragment_bytes": 131072, "linger_s": 0.5,
                              "connect_timeout_s": None,
                              "endpoint": {"base_rtt_ns": 2000000, "port_poll_ms": 3.0},
                              "qp": {"retry_exp_count": 12, "rto_rtts": 30.0, "ev_count": 16},
                              "host_qp": {}}
    # unset, the linger is one wait of the run: RoCE's 8 ACK timeouts of NCCL's
    # 4.096 us x 2^20 plus the 5 s slack (emulation/run/worker_wait.py wait_timeout_s)
    unset = {"ring_bytes": None, "fragment_bytes": None,
             "linger_s": pytest.approx(8 * 4.096e-6 * 2**20 + 5.0),
             "connect_timeout_s": None, "endpoint": {}, "qp": {}, "host_qp": {}}
    assert runner.worker_config(S.parse(BASE), "roce", tmp_path).to_dict()["mrc"] == unset


def test_mrc_endpoint_table_is_accepted_by_the_real_endpoint_config(tmp_path):
    scn = S.parse(MRC)
    ep = EndpointConfig.from_dict({"host": 1, "fabric": scn.spec.to_dict(),
                                   **scn.mrc["endpoint"], "qp": scn.mrc["qp"]})
    assert ep.base_rtt_ns == 2000000 and ep.port_poll_ms == 3.0
    assert ep.qp == {"retry_exp_count": 12, "rto_rtts": 30.0, "ev_count": 16}


@pytest.mark.parametrize("edit,expect", [
    (("linger_s = 0.5", "linger_s = 0.5\nring_byte = 4"), "[mrc] ring_byte: unknown key; known keys: ring_bytes"),
    (("linger_s = 0.5", "linger_s = \"long\""), "[mrc] linger_s: must be a number"),
    (("fragment_bytes = 131072", "fragment_bytes = 2097152"), "[mrc] fragment_bytes: must be at most ring_bytes / 2 = 1048576"),
    (("port_poll_ms = 3.0", "port_poll = 3.0"), "[mrc.endpoint] port_poll: unknown key"),
    (("port_poll_ms = 3.0", "host = 3"), "[mrc.endpoint] host: unknown key"),   # the runner sets it
    (("rto_rtts = 30.0", "rto_rtts = -1.0"), "[mrc.qp] rto_rtts: must be between 0.01"),
    (("retry_exp_count = 12", "retry_limt = 12"), "[mrc.qp] retry_limt: unknown key"),
    (("[mrc.qp]", "[mrc.qps]"), "[mrc] qps: unknown key"),
])
def test_bad_mrc_tables_name_the_key(edit, expect):
    old, new = edit
    assert old in MRC
    assert expect in error_of(MRC.replace(old, new, 1))


def test_unknown_mrc_key_names_its_line():
    text = MRC.replace("linger_s = 0.5", "linger_s = 0.5\nring_byte = 4", 1)
    line = text.splitlines().index("ring_byte = 4") + 1
    assert f"x.toml:{line}: [mrc] ring_byte" in error_of(text)


def test_runner_short_flag_validates_the_short_version(capsys):
    path = REPO / "experiments" / "nic-link-down.toml"
    assert runner.main([str(path), "--short", "--validate-only"]) == 0
    out = capsys.readouterr().out
    assert "short version ok" in out and "32 iterations" in out     # its [short] iterations


AFTER = BASE.replace('at_iteration = 39\naction = "link_up"', 'after_s = 3.0\naction = "link_up"')


def test_after_s_follows_the_previous_entry_and_scales_in_the_short_version():
    full, short = S.parse(AFTER), S.parse(AFTER, short=True)
    assert full.faults[2].after_s == 3.0 and full.faults[2].at_iteration is None
    assert full.faults[2].when() == "after_s=3.0"
    assert short.faults[2].after_s == 1.5


def test_after_s_on_the_first_entry_is_an_error():
    text = BASE.replace("at_s = 4.0", "after_s = 4.0")
    assert "[[faults]] #1 after_s: the first entry has no previous one" in error_of(text)
    text = AFTER.replace('after_s = 3.0', 'after_s = 3.0\nat_s = 1.0')
    assert "needs exactly one of at_s, at_iteration or after_s" in error_of(text)


class _Tail:
    def __init__(self):
        self.timed_start_ns = 0
        self.done = 0

    def max_done(self):
        return self.done


def test_scheduler_fires_after_s_only_once_the_previous_entry_was_applied(tmp_path):
    scn = S.parse(AFTER)
    sched = run_faults.FaultScheduler(scn, _Tail(), 8787, tmp_path / "applied.jsonl")
    up = scn.faults[2]
    assert not sched.due(2, up)                       # the link_down has not been applied
    sched.applied_at[1] = run_faults.time.monotonic_ns()
    assert not sched.due(2, up)                       # applied just now: 3 s to go
    sched.applied_at[1] -= int(3.1e9)
    assert sched.due(2, up)
    sched.tail.done = 19
    assert not sched.due(1, scn.faults[1])            # at_iteration = 20
    sched.tail.done = 20
    assert sched.due(1, scn.faults[1])
