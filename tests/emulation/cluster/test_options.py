"""The cluster a run uses (emulation/cluster/options.py): the scenario's [cluster], the command
line over it, and `mrclab run`'s printing and refusal before anything starts."""
import argparse

import pytest

from emulation.calibration import calibrate
from emulation.cluster import options as O
from emulation.cluster.placement import PlacementError
from emulation.config import scenario as S
from emulation.run import runner
from tests.helpers.paths import REPO
from tests.helpers.scenario_texts import SMALL_FABRIC

BASE = 'name = "t"\n' + SMALL_FABRIC + "[collective]\nkind = \"allreduce\"\niterations = 2\n"
EXPLICIT = BASE + ('[cluster]\nservers = ["a", "b"]\nplacement = "explicit"\n'
                   '[cluster.nodes]\na = ["t*p0*", "h0", "h1"]\nb = ["t*p1*", "h2", "h3"]\n')


def test_without_servers_the_run_stays_here():
    assert O.placement_for(S.parse(BASE)) is None
    assert O.placement_for(S.parse(BASE), servers="localhost") is None
    with pytest.raises(PlacementError, match="--placement pod needs servers"):
        O.placement_for(S.parse(BASE), mode="pod")


def test_the_scenario_cluster_applies_without_a_command_line():
    got = O.placement_for(S.parse(EXPLICIT))
    assert got.mode == "explicit" and got.server_of["h2"] == "b"


def test_servers_from_the_command_line_use_the_scenario_placement():
    scn = S.parse(BASE + '[cluster]\nservers = ["a", "b"]\nplacement = "pod"\n')
    got = O.placement_for(scn, servers="x,y")
    assert got.servers == ("x", "y") and got.mode == "pod"
    assert O.placement_for(scn, mode="plane").servers == ("a", "b")


def test_a_placement_from_the_command_line_drops_the_explicit_map():
    got = O.placement_for(S.parse(EXPLICIT), mode="pod")
    assert got.mode == "pod" and got.server_of["t1p0s1"] == "b"


def test_an_explicit_map_on_other_servers_is_refused():
    with pytest.raises(PlacementError, match="a: not one of the servers"):
        O.placement_for(S.parse(EXPLICIT), servers="x,y")


def ready(scn, placement):
    return None                 # every server ready: the preflight itself is
                                # tests/emulation/cluster/test_preflight.py's


def _args(**kw):
    return argparse.Namespace(**{"servers": None, "placement": None, "validate_only": False,
                                 **kw})


RUNNABLE = BASE + "[options]\ntrimming = false\n"


def test_announce_prints_the_placement_and_lets_a_runnable_scenario_go(capsys):
    problem, placement = O.announce(S.parse(RUNNABLE), _args(servers="a,b"), check=ready)
    out, err = capsys.readouterr()
    assert problem is None and placement.servers == ("a", "b")
    assert out == "" and 'cluster: 2 servers, placement "plane"' in err


@pytest.mark.parametrize("old, new, words", [
    ("[options]\ntrimming = false\n", "", "trimming = true over several servers"),
    ("time_scale = 1", 'time_scale = 1\nscheduling = "hifi"',
     'scheduling = "hifi" over several servers')])
def test_what_a_run_over_servers_cannot_do_yet_is_refused_by_name(old, new, words):
    text = RUNNABLE.replace(old, new, 1)
    problem, _ = O.announce(S.parse(text), _args(servers="a,b"), check=ready)
    assert words in problem
    assert O.announce(S.parse(text), _args()) == (None, None)     # on one server: no limit


def test_the_chosen_placement_travels_with_the_scenario_into_the_calibration_key():
    scn = S.parse(RUNNABLE)
    assert O.with_placement(scn, None) is scn
    placed = O.with_placement(scn, O.placement_for(scn, servers="localhost,b", mode="pod"))
    assert placed.cluster.servers == ("localhost", "b") and placed.cluster.placement == "pod"
    assert O.placement_for(placed).server_of["h2"] == "b"   # what run_transport builds
    # another cluster is another calibration; one server keys as before
    assert calibrate.cache_key(placed, "mrc")[0] != calibrate.cache_key(scn, "mrc")[0]
    assert "cluster" not in calibrate.fabric_description(scn, "mrc")
    assert calibrate.trial_of(placed, scn).cluster == placed.cluster


def test_announce_with_validate_only_prints_on_stdout(capsys):
    assert O.announce(S.parse(RUNNABLE), _args(servers="a,b", validate_only=True),
                      check=ready)[0] is None
    assert "tunnels: 4 links cross servers" in capsys.readouterr().out


def test_mrclab_run_prints_the_placement_before_anything_starts(capsys, tmp_path):
    demo = str(REPO / "experiments" / "demo.toml")
    # the demo's short version trims: refused over servers, with the placement printed first
    assert runner.main([demo, "--short", "--servers", "a,b", "--placement", "pod",
                        "--validate-only"]) == runner.EXIT_BAD_SCENARIO
    out, err = capsys.readouterr()
    assert 'placement "pod"' in out and "trimming = true" in err
    code = runner.main([demo, "--servers", "a,b,c", "--out-dir", str(tmp_path)])
    assert code == runner.EXIT_BAD_SCENARIO
    assert "3 servers for 2 planes" in capsys.readouterr().err
    assert runner.main([demo, "--servers", "a,b", "--out-dir", str(tmp_path)]) \
        == runner.EXIT_BAD_SCENARIO
    assert list(tmp_path.iterdir()) == []       # refused before a run directory exists
