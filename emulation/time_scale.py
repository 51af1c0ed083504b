"""Time dilation: `[fabric] time_scale = k` runs the emulated world k times slower than the
wall clock, so a machine too slow for the declared link rates still keeps up (the idea of
DieCast, Gupta et al., NSDI 2008).

This module is the one place a run enters the wall world: `wall_scenario` turns the scenario as
declared (link rates and times of the emulated world) into the one the fabric and the endpoints
run (every link rate divided by k, every time constant multiplied by k). The way back, wall
times of the run's files to emulated ones, is analysis/timescale.py, applied where a run's files
are loaded.

What scales, and why each:
  - link rates (HTB, the endpoints' pacing, the degrade/ECN fault rates): / k;
  - fault times (at_s, after_s, a flap's period_s), ECMP reconvergence delays, the collective's
    and the connection set-up timeouts, the linger time, the goodput sampling period: x k;
  - every absolute timer of the endpoints ([mrc.endpoint] *_ns / *_ms, every [mrc.qp] *_ns,
    whether the file sets it or the endpoint's default applies): x k. Timers in base RTTs
    (*_rtts) scale by themselves: the base RTT is taken from probes in the wall world;
  - OCP's ack_timeout (1.024 us x 2^n) becomes the equivalent fixed rto_ns x k, as 2^n cannot
    grow by a factor that is not a power of two;
  - the switches' ECN and trim thresholds stay the same bytes (drain times of the declared
    rate, model/switchport.py): the fabric and the endpoints get `time_scale` for that;
  - kernel TCP's minimum RTO (200 ms, Linux TCP_RTO_MIN): x k through its routes
    (emulation/hostnet.py). TCP's delayed-ACK timer (40 ms minimum) has no per-route setting
    and stays unscaled.
Byte counts (messages, buffers, MTU, windows in PSNs) do not change.
"""
from __future__ import annotations

import dataclasses
import math

from model.topology import FabricSpec
from traffic.endpoint_support import EMULATED_FABRIC_QP_DEFAULTS, EndpointConfig
from traffic.qp_config import MRCConfig

AUTO = "auto"
# A fault parameter that is a time (x k) or a rate (/ k); controller/faults.py owns the actions.
FAULT_TIME_PARAMS = ("period_s",)
FAULT_RATE_PARAMS = ("rate_mbit",)
# [mrc.endpoint] absolute times; EndpointConfig's defaults apply when the file omits them.
ENDPOINT_TIME_KEYS = ("base_rtt_ns", "default_base_rtt_ns", "min_base_rtt_ns", "port_poll_ms",
                      "path_probe_interval_ms", "path_probe_timeout_ms")
# [mrc.qp] absolute times: every MRCConfig *_ns field but the measured base RTT.
QP_TIME_KEYS = tuple(f.name for f in dataclasses.fields(MRCConfig)
                     if f.name.endswith("_ns") and f.name != "base_rtt_ns")
# Defaults of mrc_comm.create() for the [mrc] keys that are times (traffic/mrc_comm.py).
MRC_TIME_DEFAULTS = {"linger_s": 0.3, "connect_timeout_s": 60.0}
OCP_ACK_TIMEOUT_UNIT_NS = 1.024e3          # OCP mrc.h: local ACK timeout = 1.024 us x 2^n


class TimeScaleError(ValueError):
    """A time scale that cannot be applied; the message says what was wrong."""


def check(k) -> float:
    """k as a float, or a TimeScaleError (not a number, not finite, below 1)."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k):
        raise TimeScaleError(f"time_scale must be a number >= 1 (or \"auto\"), got {k!r}")
    if k < 1:
        raise TimeScaleError(f"time_scale must be >= 1 (the emulated world runs k times slower "
                             f"than the wall clock, never faster), got {k!r}")
    return float(k)


def _ns(value: float) -> int:
    return int(round(value))


def wall_spec(spec: FabricSpec, k: float) -> FabricSpec:
    """The fabric the machine builds: every link rate / k."""
    return dataclasses.replace(spec, host_link_mbit=spec.host_link_mbit / k,
                               fabric_link_mbit=spec.fabric_link_mbit / k)


def wall_endpoint(endpoint: dict, k: float) -> dict:
    """[mrc.endpoint] in the wall world: absolute times x k (EndpointConfig's defaults made
    explicit), the pacing rate / k, and `time_scale` itself (the trim thresholds' drain time)."""
    out = dict(endpoint)
    fields = EndpointConfig.__dataclass_fields__
    for key in ENDPOINT_TIME_KEYS:
        value = out.get(key, fields[key].default)
        if value:                               # None: measured; 0: off
            out[key] = _ns(value * k) if key.endswith("_ns") else value * k
    if out.get("port_rate_mbit") is not None:
        out["port_rate_mbit"] = out["port_rate_mbit"] / k
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
            out[key] = _ns(value * k)
    return out


def wall_mrc(mrc: dict, k: float) -> dict:
    """The scenario's [mrc] table in the wall world."""
    out = dict(mrc)
    for key, default in MRC_TIME_DEFAULTS.items():
        out[key] = (out[key] if out.get(key) is not None else default) * k
    out["endpoint"] = wall_endpoint(out.get("endpoint") or {}, k)
    out["qp"] = wall_qp(out.get("qp") or {}, k)
    if out.get("host_qp"):
        out["host_qp"] = {h: wall_qp(t, k, defaults=False) for h, t in out["host_qp"].items()}
    return out


def wall_command(command: dict, k: float) -> dict:
    """One fault command in the wall world."""
    out = dict(command)
    for key in FAULT_TIME_PARAMS:
        if out.get(key) is not None:
            out[key] = out[key] * k
    for key in FAULT_RATE_PARAMS:
        if out.get(key) is not None:
            out[key] = out[key] / k
    return out


def wall_scenario(scn):
    """The scenario the machine runs for `scn` (an emulation.scenario.Scenario with a numeric
    time_scale): the same object when k is 1, else a copy in the wall world."""
    if isinstance(scn.time_scale, str):
        raise TimeScaleError(f"time_scale = {scn.time_scale!r} must be resolved to a number "
                             f"before the run is built (mrclab calibrate)")
    k = check(scn.time_scale)
    if k == 1.0:
        return scn
    faults = [dataclasses.replace(
        f, at_s=None if f.at_s is None else f.at_s * k,
        after_s=None if f.after_s is None else f.after_s * k,
        commands=[wall_command(c, k) for c in f.commands], declared=f.when())
        for f in scn.faults]
    coll = dataclasses.replace(scn.collective, timeout_s=scn.collective.timeout_s * k)

    def later(seconds):
        return None if seconds is None else seconds * k

    return dataclasses.replace(
        scn, spec=wall_spec(scn.spec, k), faults=faults, collective=coll,
        tcp_reconvergence_s=later(scn.tcp_reconvergence_s),
        roce_reconvergence_s=later(scn.roce_reconvergence_s),
        goodput_interval_ms=scn.goodput_interval_ms * k, mrc=wall_mrc(scn.mrc, k))
