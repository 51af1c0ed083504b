"""The cluster a run uses (emulation/cluster/options.py): the scenario's [cluster], the command
line over it, and `mrclab run`'s printing and refusal before anything starts."""
import argparse

import pytest

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


def _args(**kw):
    return argparse.Namespace(**{"servers": None, "placement": None, "validate_only": False,
                                 **kw})


def test_announce_prints_the_placement_and_refuses_a_run(capsys):
    problem = O.announce(S.parse(BASE), _args(servers="a,b"))
    out, err = capsys.readouterr()
    assert "not supported yet" in problem and "--validate-only" in problem
    assert out == "" and 'cluster: 2 servers, placement "plane"' in err


def test_announce_with_validate_only_prints_on_stdout_and_goes_on(capsys):
    assert O.announce(S.parse(BASE), _args(servers="a,b", validate_only=True)) is None
    assert "tunnels: 4 links cross servers" in capsys.readouterr().out


def test_mrclab_run_prints_the_placement_before_anything_starts(capsys, tmp_path):
    demo = str(REPO / "experiments" / "demo.toml")
    assert runner.main([demo, "--servers", "a,b", "--placement", "pod", "--validate-only"]) == 0
    out = capsys.readouterr().out
    assert "ok (" in out and 'placement "pod"' in out
    code = runner.main([demo, "--servers", "a,b,c", "--out-dir", str(tmp_path)])
    assert code == runner.EXIT_BAD_SCENARIO
    assert "3 servers for 2 planes" in capsys.readouterr().err
    assert runner.main([demo, "--servers", "a,b", "--out-dir", str(tmp_path)]) \
        == runner.EXIT_BAD_SCENARIO
    assert list(tmp_path.iterdir()) == []       # refused before a run directory exists
