"""Scenario keys of the ECN collision and victim experiments: kind = "bisection" and
[collective] victim_only, checked against the fabric with file:line errors."""
import pytest

from emulation.config import scenario as S
from emulation.run.runner import worker_config

INCAST = """
name = "v"
[fabric]
time_scale = 1
planes = 1
groups = 2
spines = 2
hosts_per_group = {hpg}
[collective]
kind = "incast"
message_bytes = 4096
iterations = 2
incast_target = "h0"
{victim}
"""


def parse_incast(victim, hpg=4):
    return S.parse(INCAST.format(hpg=hpg, victim=victim), source="v.toml")


def test_victim_only_reaches_the_worker_config(tmp_path):
    scn = parse_incast('victim = ["h4", "h1"]\nvictim_only = true')
    config = worker_config(scn, "mrc", tmp_path).to_dict()
    assert config["victim"] == [4, 1] and config["victim_only"] is True


def test_victim_only_defaults_to_false(tmp_path):
    scn = parse_incast('victim = ["h4", "h1"]')
    assert worker_config(scn, "mrc", tmp_path).to_dict()["victim_only"] is False


@pytest.mark.parametrize("victim, hpg, expect", [
    ("victim_only = true", 4, "v.toml:14: [collective] victim_only: needs a victim"),
    ('victim = ["h0", "h1"]\nvictim_only = true', 4,
     "v.toml:14: [collective] victim: with victim_only the victim's source must not be the "
     "incast target"),
    ('victim = ["h2", "h1"]\nvictim_only = true', 1,
     "v.toml:14: [collective] victim: must be [src, dst]"),
])
def test_bad_victim_only_names_key_and_line(victim, hpg, expect):
    with pytest.raises(S.ScenarioError) as err:
        parse_incast(victim, hpg)
    assert str(err.value).startswith(expect), str(err.value)


def test_victim_only_needs_an_incast_sender():
    # 3 hosts over 2 groups cannot be made; 2 groups x 2 hosts = 4 is the least that works
    scn = parse_incast('victim = ["h2", "h1"]\nvictim_only = true', hpg=2)
    assert scn.collective.victim_only is True
    text = INCAST.format(hpg=1, victim="").replace("groups = 2", "groups = 3")
    text = text.replace('incast_target = "h0"', 'incast_target = "h0"\nvictim = ["h1", "h2"]\n'
                        'victim_only = true')
    with pytest.raises(S.ScenarioError, match=r"victim_only: leaves no incast sender on 3 hosts"):
        S.parse(text, source="v.toml")


BISECTION = """
name = "b"
[fabric]
time_scale = 1
planes = 1
groups = {groups}
spines = 2
hosts_per_group = 1
[collective]
kind = "bisection"
message_bytes = 4096
iterations = 2
"""


def test_bisection_parses_on_an_even_fabric():
    assert S.parse(BISECTION.format(groups=2), source="b.toml").collective.kind == "bisection"


def test_bisection_refuses_an_odd_number_of_hosts():
    with pytest.raises(S.ScenarioError) as err:
        S.parse(BISECTION.format(groups=3), source="b.toml")
    assert str(err.value).startswith("b.toml:10: [collective] kind: bisection pairs"), str(err.value)


def test_victim_only_is_for_incast_only():
    with pytest.raises(S.ScenarioError, match=r"b.toml:13: \[collective\] victim_only: only used"):
        S.parse(BISECTION.format(groups=2) + "victim_only = true\n", source="b.toml")
