"""The scenario in the wall world: `[fabric] time_scale = k` (model/timescale.py, the rule and
the arithmetic) applied to what a run is built from. `wall_scenario` turns the scenario as
declared (link rates and times of the emulated world) into the one the fabric and the endpoints
run. The way back, a run's files to the emulated world, is model/timescale.py too, applied where
analysis loads them (analysis/jsonl.py, analysis/pcap.py).

What of a scenario is a time (x k) or a rate (/ k), and why each:
  - link rates (HTB, the endpoints' pacing, the degrade/ECN fault rates): rates;
  - fault times (at_s, after_s, a flap's period_s), ECMP reconvergence delays, the collective's
    and the connection set-up timeouts, the linger time, the goodput sampling period: times;
  - every absolute timer of the endpoints ([mrc.endpoint] *_ns / *_ms, every [mrc.qp] *_ns,
    whether the file sets it or the endpoint's default applies): times. Timers in base RTTs
    (*_rtts) scale by themselves: the base RTT is taken from probes in the wall world;
  - OCP's ack_timeout (1.024 us x 2^n) becomes the equivalent fixed rto_ns, a time, as 2^n
    cannot grow by a factor that is not a power of two;
  - the switches' ECN and trim thresholds stay the same bytes (drain times of the declared
    rate, model/switchport.py): the fabric and the endpoints get `time_scale` for that;
  - kernel TCP's minimum RTO (200 ms, Linux TCP_RTO_MIN): a time, through its routes
    (emulation/network/hostnet.py). TCP's delayed-ACK timer (40 ms minimum) has no per-route setting
    and stays unscaled.
Byte counts (messages, buffers, MTU, windows in PSNs) do not change.
"""
from __future__ import annotations

import dataclasses

from model import faults, timescale
from model.timescale import TimeScaleError
from model.topology import FabricSpec
from traffic.nic.endpoint_support import EMULATED_FABRIC_QP_DEFAULTS, EndpointConfig
from traffic.core.qp_config import MRCConfig

AUTO = "auto"
# [mrc.endpoint] absolute times; EndpointConfig's defaults apply when the file omits them.
ENDPOINT_TIME_KEYS = ("base_rtt_ns", "default_base_rtt_ns", "min_base_rtt_ns", "port_poll_ms",
                      "path_probe_interval_ms", "path_probe_timeout_ms")
# [mrc.qp] absolute times: every MRCConfig *_ns field but the measured base RTT.
QP_TIME_KEYS = tuple(f.name for f in dataclasses.fields(MRCConfig)
                     if f.name.endswith("_ns") and f.name != "base_rtt_ns")
# Defaults of mrc_comm.create() for the [mrc] keys that are times (traffic/workload/mrc_comm.py).
MRC_TIME_DEFAULTS = {"linger_s": 0.3, "connect_timeout_s": 60.0}
OCP_ACK_TIMEOUT_UNIT_NS = 1.024e3          # OCP mrc.h: local ACK timeout = 1.024 us x 2^n


def wall_spec(spec: FabricSpec, k: float) -> FabricSpec:
    """The fabric the machine builds: every link rate / k."""
    return dataclasses.replace(spec, host_link_mbit=timescale.wall_rate(spec.host_link_mbit, k),
                               fabric_link_mbit=timescale.wall_rate(spec.fabric_link_mbit, k))


def wall_endpoint(endpoint: dict, k: float) -> dict:
    """[mrc.endpoint] in the wall world: absolute times x k (EndpointConfig's defaults made
    explicit), the pacing rate / k, and `time_scale` itself (the trim thresholds' drain time)."""
    out = dict(endpoint)
    fields = EndpointConfig.__dataclass_fields__
    for key in ENDPOINT_TIME_KEYS:
        value = out.get(key, fields[key].default)
        if value:                               # None: measured; 0: off
            out[key] = (timescale.wall_ns(value, k) if key.endswith("_ns")
                        else timescale.wall_time(value, k))
    if out.get("port_rate_mbit") is not None:
        out["port_rate_mbit"] = timescale.wall_rate(out["port_rate_mbit"], k)
    out["time_scale"] = k
    return out


def wall_qp(qp: dict, k: float, defaults: bool = True) -> dict:
    """QP settings in the wall world: every absolute time x k. defaults: also the endpoint's
    defaults for the keys `qp` omits ([mrc.qp]; a host's table over it has them already)."""
    out = dict(qp)
    if out.get("ack_timeout") is not None:
        out["rto_ns"] = OCP_ACK_TIMEOUT_UNIT_NS * (1 << out.pop("ack_timeout"))
    fields = MRCConfig.__dataclass_fields__
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
        out[key] = timescale.wall_time(out[key] if out.get(key) is not None else default, k)
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
