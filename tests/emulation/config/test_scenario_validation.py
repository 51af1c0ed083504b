"""Scenario files: every shipped one validates; bad ones fail with the key and line."""

import pytest

from emulation.config import scenario as S
from tests.helpers.scenario_texts import LINK_DOWN_AT_1_5_S, SMALL_FABRIC
from emulation.run.run_output import comparison_table
from emulation.run.runner import worker_config
from tests.helpers.paths import REPO

SHIPPED = sorted((REPO / "experiments").glob("*.toml"))

# 4 MiB messages: at line rate the 10 iterations take at least 2.5 s, so the link-down at 1.5 s
# lands inside the traffic (emulation/config/scenario_timing.py).
GOOD = """
name = "t"
""" + SMALL_FABRIC + """[collective]
kind = "allreduce"
message_bytes = 4194304
iterations = 10
""" + LINK_DOWN_AT_1_5_S


def test_every_required_scenario_is_shipped_and_valid():
    names = {p.stem for p in SHIPPED}
    assert {"demo", "nic-link-down", "fabric-links-down", "t1-blackhole", "gray-failure",
            "random-loss", "incast", "flap"} <= names
    for path in SHIPPED:
        scn = S.load(path)
        assert scn.name == path.stem
        assert scn.collective.iterations > 0


def test_good_scenario_parses_with_defaults():
    scn = S.parse(GOOD)
    assert scn.spec.planes == 2 and scn.routing == "srv6"
    assert scn.transports == ["mrc", "roce", "tcp"]
    assert scn.routing_for("tcp") == ("ecmp", 2.0)
    assert scn.routing_for("roce") == ("ecmp", None)
    assert scn.routing_for("mrc") == ("srv6", None)
    assert scn.transports_of("all") == ["mrc", "roce", "tcp"]
    assert scn.transports_of("roce") == ["roce"]
    (entry,) = scn.faults
    assert entry.at_s == 1.5 and entry.commands[0]["action"] == "link_down"


def error_of(text):
    with pytest.raises(S.ScenarioError) as info:
        S.parse(text, source="x.toml")
    return str(info.value)


@pytest.mark.parametrize("edit,expect", [
    (("iterations = 10", "iterations = 10\nmesage_bytes = 4"), "x.toml:13: [collective] mesage_bytes: unknown key"),
    (("message_bytes = 4194304", "message_bytes = 4194305"), "x.toml:11: [collective] message_bytes: must be a multiple of 4"),
    (("iterations = 10", "iterations = \"ten\""), "x.toml:12: [collective] iterations: must be an integer"),
    (("planes = 2", "planes = 0"), "x.toml:4: [fabric] planes: must be between 1 and 8"),
    (('b = "t1p0s0"', 'b = "t1p0s7"'), "x.toml:17: [[faults]] #1 b: no node 't1p0s7'"),
    (('b = "t1p0s0"', 'b = "h3"'), "no link between 't0p0g0' and 'h3'"),
    (("at_s = 1.5", "at_s = 1.5\nat_iteration = 2"), "x.toml:13: [[faults]] #1: needs exactly one of"),
    (("at_s = 1.5", "at_iteration = 10"), "at_iteration: must be between 0 and 9"),
    (('action = "link_down"', 'action = "explode"'), "unknown action 'explode'"),
    (('kind = "allreduce"', 'kind = "broadcast"'), "[collective] kind: must be one of"),
    (("[fabric]", "[fabrik]"), "fabrik: unknown top-level key"),
    (("iterations = 10", "iterations = 10 ]"), "not valid TOML"),
])
def test_bad_scenarios_name_key_and_line(edit, expect):
    old, new = edit
    assert old in GOOD
    assert expect in error_of(GOOD.replace(old, new, 1))


def test_fault_parameters_are_checked_by_the_controller_rules():
    text = GOOD.replace('b = "t1p0s0"', 'b = "t1p0s0"\npercent = 150').replace(
        '"link_down"', '"gray_loss"')
    assert "percent must be in 0..100" in error_of(text)


def test_link_selector_expands_to_every_host_link():
    text = GOOD.replace('a = "t0p0g0"\nb = "t1p0s0"', 'links = "host"\npercent = 1.0').replace(
        '"link_down"', '"gray_loss"')
    (entry,) = S.parse(text).faults
    assert len(entry.commands) == 8  # 4 hosts x 2 planes
    assert {(c["a"], c["b"]) for c in entry.commands} >= {("h0", "t0p0g0"), ("h3", "t0p1g1")}
    assert all(c["percent"] == 1.0 for c in entry.commands)


def test_switch_selector_takes_down_every_link_of_that_switch():
    t1 = S.parse(GOOD.replace('a = "t0p0g0"\nb = "t1p0s0"', 'links = "t1p0s0"')).faults[0]
    assert sorted((c["a"], c["b"]) for c in t1.commands) == [("t0p0g0", "t1p0s0"),
                                                              ("t0p0g1", "t1p0s0")]
    t0 = S.parse(GOOD.replace('a = "t0p0g0"\nb = "t1p0s0"', 'links = "t0p1g1"')).faults[0]
    assert sorted((c["a"], c["b"]) for c in t0.commands) == [
        ("h2", "t0p1g1"), ("h3", "t0p1g1"), ("t0p1g1", "t1p1s0"), ("t0p1g1", "t1p1s1")]
    err = error_of(GOOD.replace('a = "t0p0g0"\nb = "t1p0s0"', 'links = "t9p0s0"'))
    assert "or a switch of this fabric" in err and "'t9p0s0'" in err


def test_incast_needs_sensible_victim():
    text = GOOD.replace('kind = "allreduce"', 'kind = "incast"\nvictim = ["h2", "h0"]')
    assert "must not be the incast target" in error_of(text)
    text = GOOD.replace('kind = "allreduce"', 'kind = "allreduce"\nvictim = ["h2", "h1"]')
    assert "only used by kind" in error_of(text)


def test_worker_config_points_tcp_at_nic_addresses(tmp_path):
    scn = S.parse(GOOD)
    cfg = worker_config(scn, "tcp", tmp_path).to_dict()
    assert cfg["world_size"] == 4 and cfg["hosts"] == ["h0", "h1", "h2", "h3"]
    assert cfg["tcp"]["endpoints"][3] == [["fd00:0:1:1::1", 47000], ["fd00:1:1:1::1", 47000]]
    assert cfg["routing"] == "ecmp" and worker_config(scn, "mrc", tmp_path).to_dict()["routing"] == "srv6"


def test_comparison_table_lists_each_transport():
    table = comparison_table([
        {"transport": "mrc", "verified": True, "iteration_times_ms": [10.0, 12.0, 40.0],
         "recovery_ms": [3.0], "cpu": {"busy_fraction": 0.974},
         "fidelity": {"verdict": "degraded", "violations": [{"invariant": "link_pacing"}]}},
        {"transport": "tcp", "verified": False, "partial": True, "mean_iteration_ms": None,
         "slowest_iteration_ms": None, "recovery_ms": [None]},
    ])
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["transport", "verified", "fidelity"]
    # median and slowest iteration; no faults scheduled and no busbw without a collective: a
    # column no transport has a value in is left out
    assert "faults" not in lines[0] and "busbw" not in lines[0]
    assert lines[2].split() == ["mrc", "yes", "degraded", "12.0", "40.0", "3", "97"]
    assert lines[3].split() == ["tcp", "PARTIAL", "-", "-", "-", "never", "-"]  # no CPU, fidelity
    # nothing under the table repeats the verdict: the runner states it once per transport
    # (analysis/fidelity_words.transport_line, tests/emulation/run/test_runner_console.py)
    assert len(lines) == 4
