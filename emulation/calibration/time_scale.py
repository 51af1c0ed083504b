"""The scenario in the wall world: `[fabric] time_scale = k` (model/timescale.py, the rule and
the arithmetic) applied to what a run is built from. `wall_scenario` turns the scenario as
declared (link rates and times of the emulated world) into the one the fabric and the endpoints
run. The way back, a run's files to the emulated world, is model/timescale.py too, applied where
analysis loads them (analysis/jsonl.py, analysis/pcap.py).

What of a scenario is a time (x k) or a rate (/ k), and why each:
  - link rates (HTB, the endpoints' pacing, the degrade/ECN fault rates): rates;
  - the links' propagation delays ([fabric] *_delay_ms, held in the endpoints' delay line):
    times;
  - fault times (at_s, after_s, a flap's period_s), ECMP reconvergence delays, the collective's
    and the connection set-up timeouts, the linger time, the goodput sampling period: times;
  - every absolute timer of the endpoints ([mrc.endpoint] *_ns / *_ms, the path prober's
    other-path margin included, every [mrc.qp] *_ns and the [mrc.nscc] times in ns, whether
    the file sets it or the endpoint's default applies): times. Timers in base RTTs (*_rtts)
    scale by themselves: the base RTT is taken from probes in the wall world;
  - the endpoints' EV event rate limit (events per second for the controller): a rate, so the
    limit holds per emulated second;
  - OCP's ack_timeout (1.024 us x 2^n) becomes the equivalent fixed rto_ns, a time, as 2^n
    cannot grow by a factor that is not a power of two; RoCE's roce_ack_timeout (NCCL_IB_TIMEOUT,
    4.096 us x 2^n) becomes roce_ack_timeout_ns the same way, its default included;
  - the switches' ECN and trim thresholds stay the same bytes (drain times of the declared
    rate, model/switchport.py): the fabric and the endpoints get `time_scale` for that;
  - kernel TCP's minimum RTO (200 ms, Linux TCP_RTO_MIN): a time, through its routes
    (emulation/network/hostnet.py); the run's path monitor polls every PATH_MONITOR_PERIOD_S
    of emulated time (emulation/network/path_monitor.py).
What no setting reaches is in UNSCALED, each with its reason and its bias in emulated time.
Byte counts (messages, buffers, MTU, windows in PSNs) do not change.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from model import faults, timescale
from model.timescale import TimeScaleError
from model.topology import FabricSpec
from traffic.core.qp_config import (ACK_TIMEOUT_UNIT_NS, NS_FIELDS_BY_OCP_NAME, MRCConfig,
                                    roce_ack_timeout_ns)
from traffic.nic.endpoint_support import EMULATED_FABRIC_QP_DEFAULTS, EndpointConfig
from traffic.workload.worker_config import ENDPOINT_KEYS_FROM_THE_CONFIG

AUTO = "auto"
# EndpointConfig fields the worker sets from the worker configuration (already in the wall world).
_ENDPOINT_FROM_THE_WORKER = frozenset(ENDPOINT_KEYS_FROM_THE_CONFIG)
# [mrc.endpoint] absolute times and rates: every EndpointConfig field whose name says so
# (model/timescale.kind_of); EndpointConfig's defaults apply when the file omits them.
ENDPOINT_TIME_KEYS = tuple(f.name for f in dataclasses.fields(EndpointConfig)
                           if timescale.kind_of(f.name) == timescale.TIME
                           and f.name not in _ENDPOINT_FROM_THE_WORKER)
ENDPOINT_RATE_KEYS = tuple(f.name for f in dataclasses.fields(EndpointConfig)
                           if timescale.kind_of(f.name) == timescale.RATE)
# [mrc.qp] absolute times: every MRCConfig *_ns field but the probed base RTT, and the fields
# in ns named after OCP's mrc_ctl.h (NSCC's period, target and quick-adapt threshold).
QP_TIME_KEYS = tuple(f.name for f in dataclasses.fields(MRCConfig)
                     if (f.name.endswith("_ns") or f.name in NS_FIELDS_BY_OCP_NAME)
                     and f.name != "base_rtt_ns")
# Defaults of mrc_comm.create() for the [mrc] keys that are times (traffic/workload/mrc_comm.py);
# None: scaled only when set (linger_s: unset, a run's workers linger until every rank is done,
# at most one wait of the wall world, emulation/run/runner.py worker_config, already scaled).
MRC_TIME_DEFAULTS = {"linger_s": None, "connect_timeout_s": 60.0}


class Unscaled(NamedTuple):
    """A time of the emulated world that the time scale cannot stretch."""
    what: str
    why: str
    bias: str           # what it does to the emulated world's figures


UNSCALED = (
    Unscaled("kernel TCP's delayed-ACK timer (Linux TCP_DELACK_MIN 40 ms, TCP_DELACK_MAX "
             "200 ms)",
             "a kernel constant: no per-route, per-namespace or sysctl setting changes it "
             "(`ip route` has `quickack`, which turns delayed ACKs off altogether, not a "
             "longer delay)",
             "a delayed ACK waits 40 ms / k of emulated time, k times less than a real "
             "kernel's: TCP's ACK clock looks faster at k > 1"),
    Unscaled("kernel TCP's initial RTO (Linux TCP_TIMEOUT_INIT 1 s) and its 3 s fallback "
             "(TCP_TIMEOUT_FALLBACK)",
             "no per-route or sysctl setting (`ip route` takes rto_min, not the initial RTO); "
             "only a BPF sock_ops program (BPF_SOCK_OPS_TIMEOUT_INIT) could set it",
             "a lost SYN is resent after 1 s / k of emulated time; the connections are set up "
             "before the timed iterations, so no measured figure contains it"),
    Unscaled("the run's own bookkeeping: the progress display, the CPU meter's samples, the "
             "endpoints' lateness log period, the connection set-up's probe and READY retries",
             "they measure or drive this machine, not the emulated fabric",
             "none on a measured figure: they act outside the timed iterations or only observe"),
)


def wall_spec(spec: FabricSpec, k: float) -> FabricSpec:
    """The fabric the machine builds: every link rate / k, every link's propagation delay x k."""
    return dataclasses.replace(
        spec, host_link_mbit=timescale.wall_rate(spec.host_link_mbit, k),
        fabric_link_mbit=timescale.wall_rate(spec.fabric_link_mbit, k),
        host_link_delay_ms=timescale.wall_time(spec.host_link_delay_ms, k),
        fabric_link_delay_ms=timescale.wall_time(spec.fabric_link_delay_ms, k))


def wall_endpoint(endpoint: dict, k: float) -> dict:
    """[mrc.endpoint] in the wall world: absolute times x k (EndpointConfig's defaults made
    explicit), the pacing rate / k, and `time_scale` itself (the trim thresholds' drain time)."""
    out = dict(endpoint)
    fields = EndpointConfig.__dataclass_fields__
    for key in ENDPOINT_TIME_KEYS:
        value = out.get(key, fields[key].default)
        if value:                               # None: probed; 0: off
            out[key] = (timescale.wall_ns(value, k) if key.endswith("_ns")
                        else timescale.wall_time(value, k))
    for key in ENDPOINT_RATE_KEYS:
        value = out.get(key, fields[key].default)
        if value is not None:                   # None: the fabric's (already / k)
            out[key] = timescale.wall_rate(value, k)
    out["time_scale"] = k
    return out


def wall_qp(qp: dict, k: float, defaults: bool = True) -> dict:
    """QP settings in the wall world: every absolute time x k. defaults: also the endpoint's
    defaults for the keys `qp` omits ([mrc.qp]; a host's table over it has them already)."""
    out = dict(qp)
    if out.get("ack_timeout") is not None:
        out["rto_ns"] = ACK_TIMEOUT_UNIT_NS * (1 << out.pop("ack_timeout"))
    fields = MRCConfig.__dataclass_fields__
    exponent = out.pop("roce_ack_timeout", None)
    if "roce_ack_timeout_ns" not in out and (exponent is not None or defaults):
        out["roce_ack_timeout_ns"] = roce_ack_timeout_ns(
            fields["roce_ack_timeout"].default if exponent is None else exponent)
    for key in QP_TIME_KEYS:
        if key in out:
            value = out[key]
        elif defaults:
            value = EMULATED_FABRIC_QP_DEFAULTS.get(key, fields[key].default)
        else:
            continue
        if value:                               # None or 0: derived by the endpoint
            out[key] = timescale.wall_ns(value, k)
    return out


def wall_mrc(mrc: dict, k: float) -> dict:
    """The scenario's [mrc] table in the wall world."""
    out = dict(mrc)
    for key, default in MRC_TIME_DEFAULTS.items():
        value = out[key] if out.get(key) is not None else default
        if value is not None:
            out[key] = timescale.wall_time(value, k)
    out["endpoint"] = wall_endpoint(out.get("endpoint") or {}, k)
    out["qp"] = wall_qp(out.get("qp") or {}, k)
    if out.get("host_qp"):
        out["host_qp"] = {h: wall_qp(t, k, defaults=False) for h, t in out["host_qp"].items()}
    return out


def wall_command(command: dict, k: float) -> dict:
    """One fault command in the wall world: the times and rates its kind declares
    (model/faults.py), by model/timescale's rule."""
    return timescale.scale_params(command, k, time_params=faults.time_params_of(command),
                                  rate_params=faults.rate_params_of(command))


def wall_scenario(scn):
    """The scenario the machine runs for `scn` (an emulation.config.scenario.Scenario with a numeric
    time_scale): the same object when k is 1, else a copy in the wall world."""
    if isinstance(scn.time_scale, str):
        raise TimeScaleError(f"time_scale = {scn.time_scale!r} must be resolved to a number "
                             f"before the run is built (mrclab calibrate)")
    k = timescale.check(scn.time_scale)
    if k == 1.0:
        return scn

    def later(t):
        return timescale.wall_time(t, k)

    faults = [dataclasses.replace(
        f, at_s=later(f.at_s), after_s=later(f.after_s),
        commands=[wall_command(c, k) for c in f.commands], declared=f.when())
        for f in scn.faults]
    coll = dataclasses.replace(scn.collective, timeout_s=later(scn.collective.timeout_s))
    return dataclasses.replace(
        scn, spec=wall_spec(scn.spec, k), faults=faults, collective=coll,
        tcp_reconvergence_s=later(scn.tcp_reconvergence_s),
        roce_reconvergence_s=later(scn.roce_reconvergence_s),
        goodput_interval_ms=later(scn.goodput_interval_ms), mrc=wall_mrc(scn.mrc, k))
