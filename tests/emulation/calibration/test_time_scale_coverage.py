"""Every time-valued setting of a run goes through the time scale: a table-driven walk of the
world a run builds (the wall scenario, the worker configuration, the endpoint's configuration
and the MRCConfig of a QP as the endpoint derives it, the run's own constants) at k = 1 and
k = 4. A time must be 4 x (a rate / 4) in the second; a setting whose name or documentation
says it is a time and that does not scale fails, unless it is declared here as not a time
(with why) or listed in emulation/calibration/time_scale.py UNSCALED (with its bias).

What counts as a time is decided here, not by the code under test: a name ending in _s, _ms,
_us or _ns, or a scenario key documented in ns, us or ms; a rate ends in _mbit, _bps, _Bps or
_per_s. A name that sounds like a time (timeout, interval, period, delay, poll, ...) and is
neither must be in NOT_A_TIME. Every such scenario key is set explicitly in EXPLICIT, and the
defaults are walked too: a new key or field cannot slip past both.
"""
from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from emulation.calibration import time_scale as T
from emulation.config import scenario as S
from emulation.config import scenario_schema as schema
from emulation.network import path_monitor
from emulation.network.hostnet import host_argvs
from emulation.run.runner import worker_config
from model.topology import Topology
from tests.helpers.scenario_texts import FLAP_THEN_ECN
from traffic.core.qp_config import MRCConfig
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, qp_timers
from traffic.workload.mrc_comm import MRCComm

K = 4
BASE_RTT_NS = 900_000            # the base RTT a QP measures at k = 1 (x k in the wall world)
TIME_SUFFIXES = ("_s", "_ms", "_us", "_ns")
RATE_SUFFIXES = ("_mbit", "_bps", "_per_s")
SOUNDS_LIKE_TIME = re.compile(r"timeout|interval|period|delay|poll|linger|reconvergence|"
                              r"threshold|rate|time|deadline|wait|grace|margin")
DOC_TIME = re.compile(r"\b(ns|us|ms)\b")
# Names that sound like times (or are documented with a unit) but are not one, and why.
NOT_A_TIME = {
    "time_scale": "k itself",
    "ack_timeout": "OCP's exponent n of 1.024 us x 2^n: becomes rto_ns (EXPONENTS)",
    "roce_ack_timeout": "NCCL_IB_TIMEOUT's exponent n of 4.096 us x 2^n: becomes "
                        "roce_ack_timeout_ns (EXPONENTS)",
    "retry_fixed_interval": "a choice (fixed or growing interval), not a duration",
    "first_packet_grace": "a choice (the first loss of an EV is forgiven), not a duration",
    "nscc_delay_alpha": "an EWMA gain",
    "delay_alpha": "an EWMA gain",
    "nscc_adjust_bytes_threshold": "bytes",
    "adjust_bytes_threshold": "bytes",
}
# Exponents the time scale turns into the time they stand for: exponent -> (time, unit ns).
EXPONENTS = {"ack_timeout": ("rto_ns", 1024), "roce_ack_timeout": ("roce_ack_timeout_ns", 4096)}

# Times that exist in one world only, and where the walk sees what they stand for.
ONE_SIDED = {"roce_ack_timeout_ns": "at k = 1 the exponent roce_ack_timeout stands; the interval "
                                    "itself is walked as qp.roce_ack_interval_ns"}
# Every time-valued scenario key set explicitly (ack_timeout apart: it excludes rto_ns).
EXPLICIT = {
    "fabric": {"host_link_mbit": 100, "fabric_link_mbit": 50, "host_link_delay_ms": 0.1,
               "fabric_link_delay_ms": 0.25},
    "transport": {"tcp_reconvergence_s": 2.0, "roce_reconvergence_s": 1.5},
    "collective": {"timeout_s": 20.0},
    "options": {"goodput_interval_ms": 10.0},
    "mrc": {"linger_s": 0.5, "connect_timeout_s": 20.0},
    "mrc.endpoint": {"port_rate_mbit": 80.0, "base_rtt_ns": 3_000_000,
                     "default_base_rtt_ns": 3_000_000, "min_base_rtt_ns": 1_000_000,
                     "port_poll_ms": 3.0, "port_poll_backstop_ms": 150.0,
                     "path_probe_interval_ms": 30.0,
                     "path_probe_timeout_ms": 300.0, "path_probe_margin_ms": 1500.0,
                     "ev_event_rate_per_s": 20.0},
    "mrc.qp": {"rto_ns": 8_000_000, "rto_min_ns": 2_000_000, "rto_max_ns": 900_000_000,
               "ack_delay_ns": 700_000, "fabric_delay_bound_ns": 456_000,
               "loss_verdict_ns": 50_000_000, "probe_period_ns": 12_000_000,
               "skip_ns": 1_400_000, "nscc_min_base_rtt_ns": 1_500_000,
               "nscc_frame_rtt_ns": 3_300_000, "roce_ack_timeout": 14,
               "roce_ack_timeout_ns": 3_000_000_000, "nscc_reference_rtt_ns": 24_000},
    "mrc.nscc": {"adjust_period_threshold": 3_456_789, "qa_threshold": 9_876_543,
                 "target_delay": 1_234_567},
}
FAULTS = FLAP_THEN_ECN


def kind(name: str, doc: str = "") -> str | None:
    """'time', 'rate', 'rtts' (in base RTTs) or None, by this file's rule."""
    low = name.lower()
    if low.endswith(RATE_SUFFIXES):
        return "rate"
    if name.endswith(TIME_SUFFIXES) or (doc and DOC_TIME.search(doc)
                                        and name not in NOT_A_TIME):
        return "time"
    if name.endswith("_rtts"):
        return "rtts"
    return None


def schema_docs() -> dict[str, str]:
    """{MRCConfig / EndpointConfig / scenario name: its schema documentation}."""
    docs = {}
    for table in ("fabric", "transport", "collective", "options", "mrc", "mrc.endpoint",
                  "mrc.qp"):
        docs.update({k: v.doc for k, v in schema.SCHEMA[table].items()})
    docs.update({f"nscc_{k}": v.doc for k, v in schema.MRC_NSCC.items()})
    return docs


def toml(value) -> str:
    return repr(value)


def scenario_text(k: float, explicit: bool) -> str:
    tables = EXPLICIT if explicit else {}
    fabric = {"planes": 2, "host_link_mbit": 100, "fabric_link_mbit": 50,
              **tables.get("fabric", {}), "time_scale": k}
    text = 'name = "cover"\n[fabric]\n' + "".join(f"{key} = {toml(v)}\n"
                                                   for key, v in fabric.items())
    for table in ("transport", "collective", "options", "mrc", "mrc.endpoint", "mrc.qp",
                  "mrc.nscc"):
        values = dict(tables.get(table, {}))
        if table == "collective":
            # 16 MiB an iteration: the traffic lasts long enough at line rate for FAULTS to land
            values = {"message_bytes": 16 << 20, "iterations": 10, **values}
        if table == "mrc.qp" and explicit:
            values.pop("roce_ack_timeout_ns")        # it wins over roce_ack_timeout: own world
        text += f"[{table}]\n" + "".join(f"{key} = {toml(v)}\n" for key, v in values.items())
    return text + (FAULTS if explicit else "")


def world(k: float, explicit: bool, tmp_path, *, text: str | None = None) -> dict:
    """{where.name: value} of everything time-like a run at time scale k is built from."""
    scn = S.parse(text or scenario_text(k, explicit))
    wall = T.wall_scenario(scn)
    wc = worker_config(wall, "mrc", tmp_path)
    flat: dict = {}
    data = wc.to_dict()
    mrc = data.pop("mrc")
    data.pop("tcp")
    flat.update({f"worker.{n}": v for n, v in data.items() if not isinstance(v, (list, dict))})
    flat.update({f"worker.fabric.{n}": v for n, v in data["fabric"].items()})
    comm_defaults = inspect.signature(MRCComm.__init__).parameters
    flat.update({f"worker.mrc.{n}": comm_defaults[n].default if v is None and n in comm_defaults
                 else v for n, v in mrc.items() if not isinstance(v, dict)})
    flat["worker.tcp.connect_timeout_s"] = wc.tcp.connect_timeout_s
    ep_cfg = EndpointConfig.from_dict({"host": 0, "fabric": wc.fabric,
                                       "goodput_interval_ms": wc.goodput_interval_ms,
                                       **mrc["endpoint"],
                                       "qp": {**mrc["qp"], "trimming": wc.trimming}})
    flat.update({f"endpoint.{f.name}": getattr(ep_cfg, f.name)
                 for f in dataclasses.fields(EndpointConfig) if f.name not in ("qp", "fabric")})
    ep = Endpoint(ep_cfg, ports={}, open_ports=False)
    if ep.delay_line is not None:        # the links' propagation delay each peer's frames wait
        flat.update({f"endpoint.delay_line.h{peer}_ns": d
                     for peer, d in ep.delay_line.delays_ns.items()})
    qcfg = ep.qp_config(BASE_RTT_NS * k)
    flat.update({f"qp.{f.name}": getattr(qcfg, f.name) for f in dataclasses.fields(MRCConfig)})
    flat["qp.roce_ack_interval_ns"] = qcfg.roce_ack_interval_ns
    flat.update({f"qp_timers.{n}": v for n, v in qp_timers(qcfg).items()})
    flat.update({f"qp_timers.roce.{n}": v for n, v in qp_timers(qcfg, "roce").items()})
    flat.update({f"scenario.{n}": getattr(wall, n)
                 for n in ("tcp_reconvergence_s", "roce_reconvergence_s")})
    for i, fault in enumerate(wall.faults):
        flat.update({f"faults[{i}].{n}": getattr(fault, n) for n in ("at_s", "after_s")})
        for j, command in enumerate(fault.commands):
            flat.update({f"faults[{i}].commands[{j}].{n}": v for n, v in command.items()
                         if isinstance(v, (int, float)) and not isinstance(v, bool)})
    flat.update(run_constants(k))
    return flat


def run_constants(k: float) -> dict:
    """The run's own time constants, at time scale k."""
    routes = [a for a in host_argvs(Topology(S.parse(scenario_text(k, False)).spec), 0, k)
              if "rto_min" in a]
    rto_min = float(routes[0][-1].rstrip("ms")) if routes else 200.0     # Linux TCP_RTO_MIN
    return {"path_monitor.period_s": path_monitor.monitor_period_s(k),
            "hostnet.tcp_rto_min_ms": rto_min}


def leaf(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def check(one: dict, four: dict) -> list[str]:
    """What does not scale by K between the two worlds."""
    docs = schema_docs()
    bad = []
    for key in sorted(set(one) | set(four)):
        name = leaf(key)
        a, b = one.get(key), four.get(key)
        what = kind(name, docs.get(name, ""))
        if what is None:
            if name not in NOT_A_TIME and SOUNDS_LIKE_TIME.search(name) and a != b:
                bad.append(f"{key}: sounds like a time, changed {a!r} -> {b!r}: scale it "
                           f"or declare it in NOT_A_TIME")
            elif name not in NOT_A_TIME and SOUNDS_LIKE_TIME.search(name):
                if not isinstance(a, bool) and a not in (None, 0):
                    bad.append(f"{key}: sounds like a time and stayed {a!r}: scale it, or "
                               f"declare it in NOT_A_TIME with why")
            continue
        if what == "rtts":
            if a != b:
                bad.append(f"{key}: in base RTTs, must stay the same, {a!r} -> {b!r}")
            continue
        if a in (None, 0) and b in (None, 0):
            continue                             # off, or derived where it is used
        if (a is None or b is None) and name in ONE_SIDED:
            continue
        if a is None or b is None:
            bad.append(f"{key} ({what}): {a!r} at k = 1, {b!r} at k = {K}")
            continue
        want = a * K if what == "time" else a / K
        # a time in whole ns may round by 1 ns; anything else must be exact to 1e-6
        if b != pytest.approx(want, rel=1e-6, abs=1 if isinstance(a, int) else 0):
            bad.append(f"{key} ({what}): {a!r} at k = 1, {b!r} at k = {K}, want {want!r}")
    return bad


@pytest.mark.parametrize("explicit", [True, False], ids=["set", "defaults"])
def test_every_time_of_the_run_scales_by_k(tmp_path, explicit):
    bad = check(world(1, explicit, tmp_path), world(K, explicit, tmp_path))
    assert not bad, "\n".join(bad)


def test_every_time_valued_scenario_key_is_set_in_the_walk():
    """A new time-valued scenario key must be added to EXPLICIT (and so be walked)."""
    docs = schema_docs()
    tables = {t: schema.SCHEMA[t] for t in ("fabric", "transport", "collective", "options",
                                             "mrc", "mrc.endpoint", "mrc.qp", "mrc.nscc")}
    missing = []
    for table, keys in tables.items():
        for key, spec in keys.items():
            name = f"nscc_{key}" if table == "mrc.nscc" else key
            if spec.kind in ("table", "array"):
                continue
            if kind(name, docs.get(name, spec.doc)) in ("time", "rate"):
                if key not in EXPLICIT.get(table, {}) and key not in EXPONENTS:
                    missing.append(f"[{table}] {key}")
    assert not missing, f"time-valued keys not walked: {', '.join(missing)}"


@pytest.mark.parametrize("exponent", sorted(EXPONENTS))
def test_an_exponent_becomes_its_time_x_k(exponent):
    """ack_timeout 12 = 1.024 us x 4096 = 4.194304 ms; roce_ack_timeout 14 = 4.096 us x
    16384 = 67.108864 ms: both x 4 in the wall world; RoCE's default (NCCL's 20, 4.294967296 s)
    too."""
    time_key, unit = EXPONENTS[exponent]
    n = 12 if exponent == "ack_timeout" else 14
    assert T.wall_qp({exponent: n}, K)[time_key] == K * unit * 2 ** n
    assert T.wall_qp({}, K)["roce_ack_timeout_ns"] == K * 4_294_967_296


def test_every_unscaled_time_says_why_and_its_bias():
    assert T.UNSCALED
    for entry in T.UNSCALED:
        assert entry.what and len(entry.why) > 20 and len(entry.bias) > 20, entry
