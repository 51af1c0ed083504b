"""[cluster] in a scenario (emulation/config/scenario_cluster.py): read, placed on the fabric
once, and every problem reported with the file, line and key."""
import pytest

from emulation.config import scenario as S
from emulation.config.scenario_cluster import ClusterSpec
from tests.helpers.scenario_texts import SMALL_FABRIC

BASE = 'name = "t"\n' + SMALL_FABRIC + "[collective]\nkind = \"allreduce\"\niterations = 2\n"


def error_of(text):
    with pytest.raises(S.ScenarioError) as info:
        S.parse(text, source="x.toml")
    return str(info.value)


def test_no_cluster_table_is_the_single_machine_run():
    assert S.parse(BASE).cluster is None


def test_cluster_table_is_read_with_its_default_placement():
    scn = S.parse(BASE + '[cluster]\nservers = ["localhost", "10.0.0.2"]\n')
    assert scn.cluster == ClusterSpec(("localhost", "10.0.0.2"), "plane")
    assert len(scn.cluster.place(scn.topology).tunnels) == 4


def test_explicit_map_is_kept_for_the_placement():
    scn = S.parse(BASE + '[cluster]\nservers = ["a", "b"]\nplacement = "explicit"\n'
                  '[cluster.nodes]\na = ["t*p0*", "h0", "h1"]\nb = ["t*p1*", "h2", "h3"]\n')
    assert scn.cluster.nodes == {"a": ["t*p0*", "h0", "h1"], "b": ["t*p1*", "h2", "h3"]}


def test_the_short_version_keeps_the_cluster():
    scn = S.parse(BASE + '[cluster]\nservers = ["a", "b"]\nplacement = "pod"\n'
                  "[short]\niterations = 1\n", short=True)
    assert scn.cluster == ClusterSpec(("a", "b"), "pod")


# BASE has 10 lines; [cluster] is line 11, its first key line 12.
@pytest.mark.parametrize("table,words", [
    ('[cluster]\nplacement = "pod"\n', "x.toml:11: [cluster] servers: is required"),
    ('[cluster]\nservers = "a,b"\n', "x.toml:12: [cluster] servers: must be a list of strings"),
    ('[cluster]\nservers = ["a", "a"]\n', "x.toml:12: [cluster] servers: server 'a' is listed "
                                          "twice"),
    ('[cluster]\nservers = ["a", "b"]\nplacement = "ring"\n',
     "x.toml:13: [cluster] placement: must be one of plane, pod, explicit"),
    ('[cluster]\nservers = ["a", "b", "c"]\nplacement = "pod"\n',
     "x.toml:13: [cluster]: placement \"pod\" puts whole pods"),
    ('[cluster]\nservers = ["a", "b"]\nplacement = "explicit"\n[cluster.nodes]\na = ["t*"]\n',
     "x.toml:14: [cluster]: [cluster.nodes] places no server for h0, h1, h2, h3"),
    ('[cluster]\nservers = ["a", "b"]\nnodes = 3\n', "x.toml:13: [cluster] nodes: must be a "
                                                     "table"),
    ('[cluster]\nservers = ["a", "b"]\nport = 22\n', "x.toml:13: [cluster] port: unknown key"),
])
def test_cluster_errors_name_line_and_key(table, words):
    assert words in error_of(BASE + table)


def test_a_cluster_that_is_not_a_table():
    assert "x.toml:1: cluster: must be a table, got 3" in error_of("cluster = 3\n" + BASE)
