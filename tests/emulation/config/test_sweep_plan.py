"""Sweep files: grid expansion, dotted keys applied through the scenario loader (so its checks
apply), clear errors for keys that reach nothing, and the shipped sweeps."""
import tomllib
from pathlib import Path

import pytest

from emulation.config import sweep_plan as P
from emulation.config.sweep_plan import SweepError
from tests.helpers.paths import REPO

BASE = REPO / "experiments" / "random-loss.toml"


def sweep_file(tmp_path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'scenario = "{BASE}"\n' + body)
    return path


def test_grid_is_every_combination_first_key_slowest():
    grid = {"a": [1, 2], "b": ["x", "y", "z"]}
    assert P.expand(grid) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
                              {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"}]


def test_dotted_keys_parse():
    assert P.parse_key("faults[0].percent") == ["faults", 0, "percent"]
    assert P.parse_key("mrc.qp.ev_count") == ["mrc", "qp", "ev_count"]
    for bad in ("", "a..b", "faults[x]", "a.[0]"):
        with pytest.raises(SweepError, match="key"):
            P.parse_key(bad)


def test_override_sets_nested_keys_and_creates_missing_tables():
    data = {"fabric": {"planes": 2}, "faults": [{"percent": 0.1}]}
    P.apply_override(data, "fabric.planes", 4)
    P.apply_override(data, "faults[0].percent", 2.0)
    P.apply_override(data, "mrc.qp.ev_count", 16)
    assert data == {"fabric": {"planes": 4}, "faults": [{"percent": 2.0}],
                    "mrc": {"qp": {"ev_count": 16}}}


def test_override_of_an_entry_that_does_not_exist_names_it():
    data = {"faults": [{"percent": 0.1}]}
    with pytest.raises(SweepError, match=r"faults\[3\] does not exist \(the list has 1 entries\)"):
        P.apply_override(data, "faults[3].percent", 1.0)
    with pytest.raises(SweepError, match="no list links"):
        P.apply_override(data, "links[0].a", "h0")
    with pytest.raises(SweepError, match="is not a table"):
        P.apply_override(data, "faults[0].percent.x", 1)


def test_toml_writer_round_trips_a_scenario():
    data = tomllib.loads(BASE.read_text())
    data["mrc"] = {"qp": {"loss_policy": "ocp", "ev_count": 8}, "linger_s": 0.25}
    data["odd key"] = 'quote " and \\ backslash'
    assert tomllib.loads(P.dumps(data)) == data


def test_points_carry_the_values_and_their_scenarios_differ_only_there(tmp_path):
    path = sweep_file(tmp_path, 'repeats = 2\n[grid]\n"faults[0].percent" = [0.1, 1.0]\n'
                                '"collective.iterations" = [30, 40]\n')
    sweep = P.load(path)
    assert [p.values for p in sweep.points] == [
        {"faults[0].percent": 0.1, "collective.iterations": 30},
        {"faults[0].percent": 0.1, "collective.iterations": 40},
        {"faults[0].percent": 1.0, "collective.iterations": 30},
        {"faults[0].percent": 1.0, "collective.iterations": 40}]
    assert [p.x for p in sweep.points] == [0.1, 0.1, 1.0, 1.0]
    assert sweep.transports == ["mrc", "roce", "tcp"] and sweep.repeats == 2
    last = tomllib.loads(sweep.scenario_text(sweep.points[3]))
    base = tomllib.loads(BASE.read_text())
    assert last["faults"][0]["percent"] == 1.0 and last["collective"]["iterations"] == 40
    last["faults"][0]["percent"] = base["faults"][0]["percent"]
    last["collective"]["iterations"] = base["collective"]["iterations"]
    assert last == base


def test_a_value_the_scenario_loader_refuses_names_the_point_and_the_key(tmp_path):
    path = sweep_file(tmp_path, '[grid]\n"fabric.planes" = [2, 0]\n')
    with pytest.raises(SweepError, match=r"point p001 makes an invalid scenario.*planes"):
        P.load(path)


def test_an_unknown_scenario_key_is_refused_by_the_loader(tmp_path):
    path = sweep_file(tmp_path, '[grid]\n"fabric.plains" = [2, 4]\n')
    with pytest.raises(SweepError, match=r"plains"):
        P.load(path)


@pytest.mark.parametrize("body, message", [
    ('[grid]\n"fabric.planes" = []\n', "non-empty list"),
    ('repeats = 0\n[grid]\n"fabric.planes" = [2]\n', "repeats must be an integer in 1..100"),
    ('x = "fabric.spines"\n[grid]\n"fabric.planes" = [2]\n', "not a grid key"),
    ('[grid]\n"collective.kind" = ["allreduce", "allgather"]\n', "give x_values"),
    ('x_values = [1]\n[grid]\n"fabric.planes" = [2, 4]\n', "x_values must be 2 numbers"),
    ('transports = ["rdma"]\n[grid]\n"fabric.planes" = [2]\n', "transports must list"),
    ('colour = 1\n[grid]\n"fabric.planes" = [2]\n', "unknown key"),
    ('[grid]\n"fabric.planes" = [2]\n[short]\nrepeat = 1\n', "unknown; known"),
    ('name = 5\n[grid]\n"fabric.planes" = [2]\n', "name must be a string"),
    ('[grid]\n"faults[1234567890].percent" = [1.0]\n', "is not a key name"),
    ('baseline = 3\n[grid]\n"fabric.planes" = [2, 4]\n', r"baseline must be one of the x "
     r"values \(2, 4\), got 3"),
    ('baseline = nan\n[grid]\n"fabric.planes" = [2, 4]\n', "baseline must be one of"),
    ('[grid]\n"fabric.planes" = [2, nan]\n', "must be finite numbers"),
    ('x_values = [1, inf]\n[grid]\n"fabric.planes" = [2, 4]\n', "must be finite numbers"),
    ('[grid]\n' + "".join(f'"options.k{i}" = [1, 2, 3, 4]\n' for i in range(5)),
     "the grid has 1024 points; at most 1000"),
])
def test_bad_sweep_files_are_named(tmp_path, body, message):
    with pytest.raises(SweepError, match=message):
        P.load(sweep_file(tmp_path, body), short="[short]" in body)


def test_short_needs_a_short_table_and_merges_its_set(tmp_path):
    path = sweep_file(tmp_path, '[set]\n"fabric.planes" = 4\n"fabric.spines" = 2\n'
                                '[grid]\n"faults[0].percent" = [0.1, 1.0]\n')
    with pytest.raises(SweepError, match="no \\[short\\] table"):
        P.load(path, short=True)
    path.write_text(path.read_text() + '[short]\nrepeats = 1\nset = {"fabric.spines" = 1}\n'
                                       'grid = {"faults[0].percent" = [1.0]}\n')
    sweep = P.load(path, short=True)
    data = tomllib.loads(sweep.scenario_text(sweep.points[0]))
    assert data["fabric"]["planes"] == 4 and data["fabric"]["spines"] == 1
    assert len(sweep.points) == 1 and sweep.short


def test_a_missing_base_scenario_is_named(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('scenario = "nowhere.toml"\n[grid]\n"fabric.planes" = [2]\n')
    with pytest.raises(SweepError, match="cannot read the base scenario .*nowhere.toml"):
        P.load(path)


SHIPPED = sorted(p.name for p in (REPO / "experiments" / "sweeps").glob("*.toml"))


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("short", [False, True])
def test_shipped_sweeps_are_valid(name, short):
    sweep = P.load(REPO / "experiments" / "sweeps" / name, short=short)
    assert sweep.points and sweep.transports


def test_the_largest_grid_allowed_has_max_points(tmp_path):
    # 10 x 10 x 10 = 1000 points: the size check passes (each point is then validated; a grid
    # key the scenario does not know fails there, naming the point)
    body = "[grid]\n" + "".join(f'"mrc.qp.k{i}" = {list(range(10))}\n' for i in range(3))
    with pytest.raises(SweepError, match="point p000 makes an invalid scenario"):
        P.load(sweep_file(tmp_path, body))


def test_a_base_scenario_that_is_not_toml_is_named(tmp_path):
    (tmp_path / "base.toml").write_text("[fabric\n")
    path = tmp_path / "s.toml"
    path.write_text('scenario = "base.toml"\n[grid]\n"fabric.planes" = [2]\n')
    with pytest.raises(SweepError, match="base scenario .*base.toml is not valid TOML"):
        P.load(path)


def test_every_claim_of_the_paper_has_a_shipped_sweep_with_figures():
    """The six claims `mrclab paper` reproduces (issue: random loss, NIC links down, EVs per
    path, load balancing, incast degree, scale), each a sweep with [[paper]] figures."""
    assert set(SHIPPED) >= {"random-loss.toml", "nic-links-down.toml", "recovery-evs.toml",
                            "load-balancing.toml", "incast-degree.toml", "scale-hosts.toml"}
    for name in SHIPPED:
        sweep = P.load(REPO / "experiments" / "sweeps" / name)
        assert sweep.claims, f"{name}: no [[paper]] figure"


GOOD_CLAIM = 'claim = "c"\nmetric = "time_mean_ms"\nexpect = "lower"\ncompare = "transports"\n'


@pytest.mark.parametrize("claim, message", [
    ('claim = ""\nmetric = "time_mean_ms"\nexpect = "lower"\ncompare = "x"\n',
     "claim must be a sentence"),
    (GOOD_CLAIM.replace("time_mean_ms", "speed"), "metric must be one of"),
    (GOOD_CLAIM.replace('"lower"', '"smaller"'), "expect must be one of lower, higher"),
    (GOOD_CLAIM.replace('"transports"', '"planes"'), "compare must be one of"),
    (GOOD_CLAIM + "at = [5.0]\n", r"at \[5.0\] not among the x values"),
    (GOOD_CLAIM.replace('"transports"', '"x"') + "at = [0.1]\n", "names two x values"),
    (GOOD_CLAIM + 'transports = ["mrc"]\n', "needs at least two transports"),
    (GOOD_CLAIM + 'transports = ["quic"]\n', "transports must list some of"),
    (GOOD_CLAIM + 'colour = "red"\n', "unknown key"),
])
def test_bad_claims_are_named(tmp_path, claim, message):
    body = '[grid]\n"faults[0].percent" = [0.1, 1.0]\n[[paper]]\n' + claim
    with pytest.raises(SweepError, match=r"\[\[paper\]\] 1: .*" + message):
        P.load(sweep_file(tmp_path, body))


def test_a_claim_loads_with_its_fields(tmp_path):
    body = ('[grid]\n"faults[0].percent" = [0.1, 1.0]\n[[paper]]\n' + GOOD_CLAIM
            + 'at = [1.0]\ntransports = ["mrc", "tcp"]\n')
    (claim,) = P.load(sweep_file(tmp_path, body)).claims
    assert claim.to_json() == {"claim": "c", "metric": "time_mean_ms", "expect": "lower",
                               "compare": "transports", "at": [1.0],
                               "transports": ["mrc", "tcp"]}
