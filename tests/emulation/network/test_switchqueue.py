"""Switch egress buffers (emulation/network/switchqueue.py): tc argv, tc JSON parsing, validation, and
what the Fabric would run on a switch port with and without trimming."""
import json
import re

import pytest

from emulation.network import hostnet, switchqueue, trimming
from emulation.network.fabric import Fabric
from emulation.config.scenario import ScenarioError, parse
from model.topology import FabricSpec

# `tc -s -j qdisc show dev t0p0g0-e1` on a trimming port with a 64 KiB buffer (kernel 6.x),
# trimmed to the fields that matter.
TC_JSON = json.dumps([
    {"kind": "htb", "handle": "1:", "root": True, "refcnt": 2, "options": {"r2q": 10},
     "bytes": 3953550, "packets": 3269, "drops": 17, "overlimits": 4321, "requeues": 0,
     "backlog": 2900, "qlen": 2},
    {"kind": "bfifo", "handle": "51:", "parent": "1:10", "options": {"limit": 65536},
     "bytes": 100, "packets": 1, "drops": 0, "overlimits": 0, "requeues": 0, "backlog": 0,
     "qlen": 0},
    {"kind": "bfifo", "handle": "52:", "parent": "1:20", "options": {"limit": 65536},
     "bytes": 3953450, "packets": 3268, "drops": 17, "overlimits": 0, "requeues": 0,
     "backlog": 2900, "qlen": 2},
])


def test_buffer_argvs_put_a_byte_fifo_under_every_leaf_class():
    argvs = switchqueue.buffer_argvs("t0p0g0-e1", list(trimming.LEAF_CLASSES), 65536)
    assert argvs == [
        ["tc", "qdisc", "replace", "dev", "t0p0g0-e1", "parent", "1:10", "handle", "51:",
         "bfifo", "limit", "65536"],
        ["tc", "qdisc", "replace", "dev", "t0p0g0-e1", "parent", "1:20", "handle", "52:",
         "bfifo", "limit", "65536"]]


@pytest.mark.parametrize("bad", [0, 2999, (64 << 20) + 1, -5, 1.5, "64k", True])
def test_bad_buffer_sizes_are_refused_with_the_value(bad):
    with pytest.raises(switchqueue.QueueConfigError, match=re.escape(repr(bad))):
        switchqueue.validate_buffer_bytes(bad)


def test_root_stats_and_totals():
    stats = switchqueue.parse_root_stats(TC_JSON, "t0p0g0-e1")
    assert stats == {"qdisc": "htb", "sent_bytes": 3953550, "sent_packets": 3269, "dropped": 17,
                     "overlimits": 4321, "backlog_bytes": 2900, "qlen": 2}
    quiet = dict(stats, dropped=0, sent_packets=10)
    assert switchqueue.totals({"a": quiet, "b": stats}) == {
        "ports": 2, "sent_packets": 3279, "dropped": 17, "most_dropping_port": "b"}
    assert switchqueue.totals({"a": quiet})["most_dropping_port"] is None


@pytest.mark.parametrize("text", ["", "not json", "{}", json.dumps([{"kind": "bfifo"}])])
def test_unusable_tc_output_raises_naming_the_port(text):
    with pytest.raises(switchqueue.QueueConfigError, match="t1p0s0-e2"):
        switchqueue.parse_root_stats(text, "t1p0s0-e2")


def test_fabric_port_commands_with_and_without_a_buffer():
    spec = FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1)
    deep = Fabric(spec, control_class=False)._switch_port_qdisc("t0p0g0-e1", 30)
    assert deep == hostnet.htb_argvs("t0p0g0-e1", 30)
    shallow = Fabric(spec, switch_buffer_bytes=16384, control_class=False)._switch_port_qdisc(
        "t0p0g0-e1", 30)
    assert shallow == deep + switchqueue.buffer_argvs("t0p0g0-e1", [hostnet.HTB_CLASS], 16384)
    # the control class (the default): each of its two leaves gets the buffer
    control = Fabric(spec, switch_buffer_bytes=16384)._switch_port_qdisc("t0p0g0-e1", 30)
    assert control == hostnet.htb_argvs("t0p0g0-e1", 30, control_class=True) + \
        switchqueue.buffer_argvs("t0p0g0-e1", ["5:10", "5:20"], 16384)
    trim = Fabric(spec, trimming={"mark": True, "trim": True}, switch_buffer_bytes=16384)
    assert trim._switch_port_qdisc("t0p0g0-e1", 30)[-2:] == switchqueue.buffer_argvs(
        "t0p0g0-e1", list(trimming.LEAF_CLASSES), 16384)
    with pytest.raises(ValueError, match="3000"):
        Fabric(spec, switch_buffer_bytes=100)


BASE = """
name = "q"
[fabric]
planes = 1
groups = 2
spines = 1
hosts_per_group = 1
{extra}
[collective]
kind = "allreduce"
message_bytes = 4096
iterations = 2
"""


def test_scenario_switch_buffer_kb():
    assert parse(BASE.format(extra="")).switch_buffer_kb is None
    assert parse(BASE.format(extra="switch_buffer_kb = 64")).switch_buffer_kb == 64
    with pytest.raises(ScenarioError, match=r"switch_buffer_kb.*between 3 and"):
        parse(BASE.format(extra="switch_buffer_kb = 1"))
    with pytest.raises(ScenarioError, match=r"switch_buffer_kb.*integer"):
        parse(BASE.format(extra='switch_buffer_kb = "64"'))
