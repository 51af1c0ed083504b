"""[mrc.host_qp.<host>]: one host's QP settings over [mrc.qp], checked as [mrc.qp] is, merged
with it, and refused by name and line when they name no host, break a rule of the merged
settings or set what the summary reads as one value for the whole run."""
import pytest

from emulation.config import scenario as S
from emulation.run.runner import worker_config
from tests.helpers.scenario_texts import SMALL_FABRIC

BASE = """
name = "t"
""" + SMALL_FABRIC + """[collective]
kind = "bisection"
message_bytes = 4096
iterations = 4
[mrc.qp]
ev_count = 8
ev_pin_spine = 0
ev_pin_count = 2
"""
# 8 EVs over 2 planes: 4 per plane, so a pin count of 4 is the most a plane allows


def error(text: str) -> str:
    with pytest.raises(S.ScenarioError) as info:
        S.parse(BASE + text, source="s.toml")
    return str(info.value)


def line_of(text: str, line: str) -> int:
    return (BASE + text).splitlines().index(line) + 1


def test_a_hosts_table_reaches_the_worker_config_over_mrc_qp(tmp_path):
    scn = S.parse(BASE + "[mrc.host_qp.h1]\nev_pin_count = 4\n")
    mrc = worker_config(scn, "mrc", tmp_path).mrc
    assert mrc.qp == {"ev_count": 8, "ev_pin_spine": 0, "ev_pin_count": 2}
    assert mrc.host_qp == {"h1": {"ev_pin_count": 4}}


def test_a_pin_spine_alone_takes_the_count_it_implies():
    # [mrc.qp] pins 2 EVs to spine 0; h1 pins to spine 1 and keeps that count
    scn = S.parse(BASE + "[mrc.host_qp.h1]\nev_pin_spine = 1\n")
    assert scn.mrc["host_qp"] == {"h1": {"ev_pin_spine": 1, "ev_pin_count": 2}}


def test_no_host_tables_no_key():
    assert "host_qp" not in S.parse(BASE).mrc


def test_a_host_the_fabric_lacks_is_named():
    text = "[mrc.host_qp.h7]\nev_pin_count = 1\n"
    msg = error(text)
    assert "[mrc.host_qp.h7]" in msg and "'h7' is not a host of the fabric (h0..h3)" in msg
    assert msg.startswith(f"s.toml:{line_of(text, '[mrc.host_qp.h7]')}:")


def test_a_rule_of_the_merged_settings_names_the_hosts_table():
    # 5 EVs pinned where a plane has 4 (ev_count 8 from [mrc.qp], over 2 planes)
    text = "[mrc.host_qp.h0]\nev_pin_count = 5\n"
    msg = error(text)
    assert "[mrc.host_qp.h0] ev_pin_count: must be at most the active EVs per plane" in msg
    assert msg.startswith(f"s.toml:{line_of(text, 'ev_pin_count = 5')}:")


def test_a_bad_value_or_unknown_key_is_refused_as_in_mrc_qp():
    assert "[mrc.host_qp.h0] ev_count: must be an integer" in error(
        '[mrc.host_qp.h0]\nev_count = "many"\n')
    assert "[mrc.host_qp.h2] ev_pinned: unknown key" in error("[mrc.host_qp.h2]\nev_pinned = 1\n")
    # a setting the config object refuses (loss_verdict_ns below the RTO floor, say) is
    # caught by building the merged QP config
    assert "[mrc.host_qp.h2]" in error("[mrc.host_qp.h2]\nev_count = 1\n")


@pytest.mark.parametrize("key, value", [("loss_policy", '"ocp"'), ("rto_max_ns", "900000000")])
def test_run_wide_settings_stay_in_mrc_qp(key, value):
    msg = error(f"[mrc.host_qp.h0]\n{key} = {value}\n")
    assert f"[mrc.host_qp.h0] {key}: is one setting for the whole run" in msg
    assert "set it in [mrc.qp]" in msg


def test_host_qp_must_be_tables():
    assert "host_qp: must be" in error("[mrc]\nhost_qp = 3\n")
