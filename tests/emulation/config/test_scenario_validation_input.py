"""Bad scenario input fails at validation, before anything starts: every key of every table is
typed and range-checked with `file:line: [table] key:` messages, never a traceback."""
from dataclasses import fields

import pytest

from controller import faults as controller_faults
from emulation.config import scenario as S
from tests.helpers.scenario_texts import LINK_DOWN_AT_1_5_S, SMALL_FABRIC
from emulation.config.scenario import ScenarioError
from model.topology import FabricSpec, Topology
from traffic.nic.endpoint_support import QP_SETTINGS_FROM_THE_ENDPOINT, EndpointConfig
from traffic.core.reliability import MRCConfig

BASE = """name = "t"
description = \"\"\"A description that quotes TOML:
iterations = 3
[collective]
\"\"\"
""" + SMALL_FABRIC + """[collective]
kind = "allreduce"
message_bytes = 4194304     # 10 iterations of at least 0.25 s: the fault at 1.5 s fits
iterations = 10
""" + LINK_DOWN_AT_1_5_S


def error_of(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        S.parse(text, source="x.toml")
    return str(info.value)


def line_of(text: str, line: str) -> int:
    return text.splitlines().index(line) + 1


def with_table(table: str, line: str) -> str:
    return BASE + f"[{table}]\n{line}\n"


@pytest.mark.parametrize("table,line,message", [
    ("mrc.qp", 'nscc_enabled = "no"', "must be true or false, got 'no'"),
    ("mrc.qp", "ev_count = 1.5", "must be an integer, got 1.5"),
    ("mrc.endpoint", "rtt_probe_count = 1.5", "must be an integer, got 1.5"),
    ("mrc.qp", "ev_count = inf", "must be an integer, got inf"),
    ("mrc.endpoint", "max_payload = 1e9", "must be an integer, got 1000000000.0"),
    ("mrc.endpoint", "max_payload = 1000000000", "must be between 64 and 9000"),
    ("mrc.qp", "mpr = 0.001", "must be an integer, got 0.001"),
    ("mrc.endpoint", 'seed = "abc"', "must be an integer, got 'abc'"),
    ("mrc.endpoint", "port_poll_ms = nan", "must be a number, got nan"),
    ("mrc.qp", "skip_rtts = inf", "must be a number, got inf"),
    ("mrc.qp", "ev_min_active = 1.5", "must be an integer, got 1.5"),
    ("mrc.qp", "mpr = 65536", "must be between 1 and 65535"),          # 65536 x 128 = 2^23 PSNs
    ("mrc.qp", "roce_retry_limit = 8", "must be between 1 and 7"),     # 3-bit retry_cnt
    ("options", 'trimming = "false"', "must be true or false, got 'false'"),
    ("transport", 'names = ["mrc", 3]', "must be a list of strings"),
    ("collective", 'victim = "h1"', "must be a list of strings"),
])
def test_bad_value_names_file_line_table_and_key(table, line, message):
    text = with_table(table, line)
    key = line.split(" =")[0]
    if table == "collective":              # the file's own [collective] table
        text = BASE.replace("iterations = 10", f"iterations = 10\n{line}")
    assert f"x.toml:{line_of(text, line)}: [{table}] {key}: {message}" in error_of(text)


@pytest.mark.parametrize("selector", ['["host"]', "{ kind = \"host\" }", "3"])
def test_links_selector_of_another_type_is_an_error_not_a_traceback(selector):
    text = BASE.replace('a = "t0p0g0"\nb = "t1p0s0"', f"links = {selector}")
    line = line_of(text, f"links = {selector}")
    assert f"x.toml:{line}: [[faults]] #1 links: must be a string" in error_of(text)


def test_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(BASE.replace('name = "t"', 'name = "t"\n# caf\xe9').encode("latin-1"))
    with pytest.raises(ScenarioError) as info:
        S.load(path)
    assert f"{path}:2: not UTF-8 text (byte 0xe9" in str(info.value)


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "", "x" * 65])
def test_name_that_is_not_a_plain_directory_name_is_refused(name):
    text = BASE.replace('name = "t"', f'name = "{name}"')
    assert "x.toml:1: name: use up to 64 letters" in error_of(text)


def test_plain_names_with_dots_are_accepted():
    assert S.parse(BASE.replace('name = "t"', 'name = "run.v2-b_c"')).name == "run.v2-b_c"


def test_unknown_fault_key_names_its_line():
    text = BASE.replace('b = "t1p0s0"', 'b = "t1p0s0"\npercnt = 5')
    assert f"x.toml:{line_of(text, 'percnt = 5')}: [[faults]] #1 percnt: unknown key" in error_of(text)


def test_key_inside_a_multiline_string_does_not_move_line_numbers():
    text = BASE.replace("iterations = 10", 'iterations = "ten"')
    # the description's "iterations = 3" and "[collective]" lines are text, not TOML
    line = line_of(text, 'iterations = "ten"')
    assert line == 15
    assert f"x.toml:{line}: [collective] iterations: must be an integer" in error_of(text)


def test_reserved_endpoint_key_says_who_sets_it():
    err = error_of(with_table("mrc.endpoint", "qp = { mtu = 512 }"))
    assert "[mrc.endpoint] qp: unknown key here (use the [mrc.qp] table)" in err


def test_ev_min_active_above_ev_count_is_an_error():
    text = BASE + "[mrc.qp]\nev_count = 8\nev_min_active = 9\n"
    assert f"x.toml:{line_of(text, 'ev_min_active = 9')}: [mrc.qp] ev_min_active: must be at most " \
           f"ev_count (8)" in error_of(text)


def test_ev_count_below_the_planes_in_use_is_an_error():
    # EVs are split equally over the planes: 1 EV on a 2-plane fabric leaves a plane without one
    assert "[mrc.qp] ev_count: must be at least the number of planes in use (2)" in \
        error_of(with_table("mrc.qp", "ev_count = 1"))


# ---------------------------------------------------------------- [fabric] mtu


def test_fabric_mtu_defaults_to_1500_and_is_kept():
    assert S.parse(BASE).fabric_mtu == 1500
    assert S.parse(BASE.replace("planes = 2", "planes = 2\nmtu = 9000")).fabric_mtu == 9000


@pytest.mark.parametrize("mtu", ["1279", "9001", "1500.0", '"1500"'])
def test_fabric_mtu_out_of_range_or_type_is_an_error(mtu):
    text = BASE.replace("planes = 2", f"planes = 2\nmtu = {mtu}")
    assert f"x.toml:{line_of(text, f'mtu = {mtu}')}: [fabric] mtu: must be" in error_of(text)


@pytest.mark.parametrize("table, line, where", [
    ("mrc.endpoint", "rto_rtts = 20.0", "use [mrc.qp] rto_rtts"),
    ("mrc.endpoint", "ev_count = 8", "use [mrc.qp] ev_count"),
    ("mrc.endpoint", "loss_verdict_ms = 100.0", "use [mrc.qp] loss_verdict_ns (in ns"),
    ("mrc.endpoint", "goodput_interval_ms = 5.0", "use [options] goodput_interval_ms"),
    ("mrc", "base_rtt_ns = 2000000", "use [mrc.endpoint] base_rtt_ns"),
    ("mrc.qp", "rto_rtt_multiplier = 4.0", "use rto_rtts"),
    ("mrc.qp", "reorder_window_frac = 0.5", "use reorder_rtts"),
    ("mrc.qp", "mtu = 1000", "use [mrc.endpoint] max_payload"),
    ("mrc.qp", "base_rtt_ns = 2000000", "fix it with [mrc.endpoint] base_rtt_ns"),
    ("mrc.qp", "port_rate_Bps = 1e7", "use [mrc.endpoint] port_rate_mbit and pacing_fraction"),
    ("mrc.qp", "pacer_burst_packets = 4", "use [mrc.endpoint] pacing_burst_packets"),
    ("mrc.qp", "trimming = false", "comes from [options] trimming"),
])
def test_a_knob_has_one_name_and_another_names_it(table, line, where):
    """Each setting is read under one name in one table; any other spelling of it is an error
    that names the one to use."""
    text = with_table(table, line)
    key = line.split(" =")[0]
    assert (f"x.toml:{line_of(text, line)}: [{table}] {key}: unknown key here" in error_of(text)
            and where in error_of(text))


# ---------------------------------------------------------------- every key is declared


def test_every_config_field_has_a_schema_entry():
    from emulation.config import scenario_schema as schema
    # every QP setting but those the endpoint derives, and the fabric's trimming; NSCC's
    # mrc_ctl_cc_nscc_cfg knobs are [mrc.nscc] <name> for MRCConfig.nscc_<name>
    nscc = {f"nscc_{key}" for key in schema.MRC_NSCC}
    assert nscc <= {f.name for f in fields(MRCConfig)}
    assert set(schema.MRC_QP) | nscc == {f.name for f in fields(MRCConfig)} - set(
        QP_SETTINGS_FROM_THE_ENDPOINT) - {"trimming"}
    assert not set(schema.MRC_QP) & nscc
    endpoint_fields = {f.name for f in fields(EndpointConfig)}
    assert set(schema.MRC_ENDPOINT) <= endpoint_fields
    assert endpoint_fields <= set(schema.MRC_ENDPOINT) | set(schema.MRC_ENDPOINT_RESERVED)
    assert not set(schema.MRC_ENDPOINT) & set(schema.MRC_ENDPOINT_RESERVED)
    assert set(FabricSpec.__dataclass_fields__) <= set(schema.FABRIC)


PLAIN = BASE.split('description = """')[0] + BASE.split('"""\n', 1)[1]


def set_key(table: str, line: str) -> str:
    """PLAIN with `line` as the only setting of its key in [table] (or [[faults]] #1)."""
    key = line.split(" =")[0]
    header = "[[faults]]" if table == "faults" else f"[{table}]"
    lines = PLAIN.splitlines()
    if header not in lines:
        return PLAIN + f"{header}\n{line}\n"
    start = lines.index(header) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
    body = [x for x in lines[start:end] if not x.startswith(f"{key} =")]
    if table == "faults" and key in ("at_iteration", "after_s"):
        body = [x for x in body if not x.startswith("at_s =")]   # one timing key per entry
    return "\n".join(lines[:start] + [line] + body + lines[end:]) + "\n"


def _keys():
    from emulation.config import scenario_schema as schema
    tables = dict(schema.SCHEMA, faults=schema.FAULT)
    return [(name, key, spec) for name, table in tables.items() if name
            for key, spec in table.items() if spec.kind not in ("table", "array")]


def where(table: str) -> str:
    return "[[faults]] #1" if table == "faults" else f"[{table}]"


@pytest.mark.parametrize("table,key,spec", _keys(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_key_rejects_a_value_of_another_type(table, key, spec):
    line = f"{key} = " + ('"text"' if spec.kind != "str" else "3")
    text = set_key(table, line)
    assert f"x.toml:{line_of(text, line)}: {where(table)} {key}: must be" in error_of(text)


@pytest.mark.parametrize("table,key,spec", [k for k in _keys() if k[2].hi is not None],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_bounded_key_rejects_a_value_above_its_ceiling(table, key, spec):
    line = f"{key} = " + (str(int(spec.hi) + 1) if spec.kind == "int" else str(spec.hi * 2 + 1))
    text = set_key(table, line)
    assert f"x.toml:{line_of(text, line)}: {where(table)} {key}: must be" in error_of(text)


# ---------------------------------------------------------------- link selectors at scale


def test_links_selector_validates_one_link_per_kind_not_every_link(monkeypatch):
    """The controller's rules are the same for every link of one kind, so a selector over the
    largest fabric must not run them once per link (49,152 of them)."""
    calls = []
    real = controller_faults.validate

    def counting(cmd, topo):
        calls.append((cmd["a"], cmd["b"]))
        return real(cmd, topo)

    monkeypatch.setattr(controller_faults, "validate", counting)
    text = BASE.replace('a = "t0p0g0"\nb = "t1p0s0"', 'links = "all"\npercent = 2.5').replace(
        '"link_down"', '"gray_loss"')
    (entry,) = S.parse(text).faults
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    assert len(calls) == 2                               # one host link, one fabric link
    assert sorted((c["a"], c["b"]) for c in entry.commands) == sorted(
        (lk.a, lk.b) for lk in topo.links)               # 4 hosts x 2 + 2 planes x 2 x 2 = 16
    assert len(entry.commands) == 16
    # every command is what the controller itself makes of that link's command
    for cmd in entry.commands:
        assert cmd == real({"action": "gray_loss", "a": cmd["a"], "b": cmd["b"], "percent": 2.5},
                           topo)


def test_reference_lists_every_key_with_its_range():
    from emulation.config import scenario_schema as schema
    text = schema.reference()
    for table, key, spec in _keys():
        assert f"| {key} | {spec.kind} |" in text
    assert "| mtu | int | 1280..9000 | 1500 | link MTU of every host and switch port |" in text


def test_ev_min_active_is_checked_against_the_endpoints_ev_count():
    # by default a QP has 4 EVs per path of the fabric: 4 x 2 planes x 2 spines = 16
    text = BASE + "[mrc.qp]\nev_min_active = 17\n"
    assert "[mrc.qp] ev_min_active: must be at most ev_count (16), got 17" in error_of(text)
    # evs_per_path sets it when ev_count is omitted: 1 x 2 x 2 = 4
    text = BASE + "[mrc.qp]\nevs_per_path = 1\nev_min_active = 5\n"
    assert "[mrc.qp] ev_min_active: must be at most ev_count (4), got 5" in error_of(text)


# Every period, interval and timeout of a scenario (scenario_schema's floors): a timer shorter
# than its floor would fire on every turn of the endpoint's loop, so "> 0" is not enough.
PERIODS = [("mrc.qp", "probe_period_rtts", 0.01), ("mrc.qp", "probe_timeout_rtts", 0.01),
           ("mrc.qp", "rto_rtts", 0.01), ("mrc.qp", "ack_delay_rtts", 0.01),
           ("mrc.qp", "reverse_probe_rtts", 0.01), ("mrc.qp", "reverse_idle_rtts", 0.01),
           ("mrc.endpoint", "port_poll_ms", 0.1), ("mrc.endpoint", "path_probe_timeout_ms", 1.0),
           ("mrc.endpoint", "path_probe_margin_ms", 0.1),
           ("mrc.endpoint", "path_probe_interval_ms", 1.0)]
PERIODS_NS = [("mrc.qp", "rto_ns"), ("mrc.qp", "rto_min_ns"), ("mrc.qp", "ack_delay_ns"),
              ("mrc.qp", "probe_period_ns"), ("mrc.qp", "roce_ack_timeout_ns")]


@pytest.mark.parametrize("table,key,floor", PERIODS, ids=lambda v: str(v))
def test_a_period_below_its_floor_is_refused(table, key, floor):
    for tiny in (1e-300, floor * 0.99):
        err = error_of(with_table(table, f"{key} = {tiny!r}"))
        assert f"[{table}] {key}: must be" in err and f"got {tiny!r}" in err, err
    S.parse(with_table(table, f"{key} = {floor!r}"), source="x.toml")


@pytest.mark.parametrize("table,key", PERIODS_NS, ids=lambda v: str(v))
def test_a_period_in_ns_is_at_least_a_microsecond(table, key):
    err = error_of(with_table(table, f"{key} = 999"))
    assert f"[{table}] {key}: must be between 1000 and" in err, err


def test_the_path_prober_interval_may_be_0_which_turns_it_off():
    S.parse(with_table("mrc.endpoint", "path_probe_interval_ms = 0"), source="x.toml")
    err = error_of(with_table("mrc.endpoint", "path_probe_interval_ms = 0.5"))
    assert "must be 0 (off) or between 1.0 and 60000.0, got 0.5" in err, err
