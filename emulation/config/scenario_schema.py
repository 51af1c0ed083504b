"""Every key a scenario file may hold: type, range, default and meaning, one table per TOML table,
and the checker that applies them with `file:line: [table] key: ...` messages.

Declared, not hand-checked, so no key slips through untyped: a key not in its table's schema is
an error naming it; every value is type- and range-checked before the fabric starts (a fractional
`mpr` would leave the sender a PSN window of less than one packet). Cross-key rules stay in
emulation/config/scenario.py, next to the model they build."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from emulation.cluster.placement import PLACEMENTS
from emulation.network.scheduling import DEFAULT_SCHEDULING, SCHEDULINGS
from emulation.network.switchqueue import MAX_BUFFER_BYTES, MIN_BUFFER_BYTES
from model.argtypes import print_to_pipe
from model.clip import clip_values
from model.topology import (MAX_GROUPS, MAX_HOSTS_PER_GROUP, MAX_PLANES, MAX_SPINES,
                            SCENARIO_MAX_LINK_DELAY_MS)
from model.events import TRANSPORTS
from model.timescale import MAX_SCALE
from traffic.nic.endpoint_support import MIN_PATH_PROBE_MS
from traffic.workload.worker_config import COLLECTIVES, ROUTINGS

LINK_SELECTORS = ("host", "fabric", "all")

# Generous ceilings that still reject what cannot be meant: times in ns up to 100 s, ratios of
# base RTTs up to 10^4, packet counts up to what a 24-bit PSN space or a 64-bit SACK bitmap holds.
NS_MAX = 100 * 10**9
RTTS_MAX = 10_000
PSN_SPACE = 1 << 24
MPR_UNIT = 128                      # MRC's MPR is in units of 128 PSNs (OCP)
SACK_BITMAP_BITS = 64
EV_COUNT_MAX = 4096                 # entropy space is 0x4000 values per (plane, spine)
# Floors of every period, interval and timeout: a timer shorter than these fires on every turn
# of the endpoint's loop (1e-300 would be accepted as "> 0" and spin it). Base RTTs: a hundredth
# of one; milliseconds: a tenth of one (also port_poll_ms's floor; the path prober's own are
# traffic/nic/endpoint_support.py's MIN_PATH_PROBE_MS); nanoseconds: a microsecond.
PERIOD_RTTS_MIN = 0.01
PERIOD_MS_MIN = 0.1
PERIOD_NS_MIN = 1000
TIME_SCALE_MAX = MAX_SCALE           # model/timescale.py's bound


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the file, line and key."""


@dataclass(frozen=True)
class Key:
    """One key of a table. kind: int | number | bool | str | strings (list of str) | ints |
    table | array (of tables). lo/hi bound numbers (inclusive; `above` makes lo exclusive),
    choices bound strings. default None: the key has no value unless the file sets it (the
    consumer's own default applies, e.g. MRCConfig's for [mrc.qp])."""
    kind: str
    default: object = None
    doc: str = ""
    lo: float | None = None
    hi: float | None = None
    above: bool = False
    choices: tuple | None = None
    off: bool = False           # 0 is also accepted: it turns the setting off


def _i(default, lo, hi, doc):
    return Key("int", default, doc, lo, hi)


def _n(default, lo, hi, doc, above=False):
    return Key("number", default, doc, lo, hi, above)


def _b(default, doc):
    return Key("bool", default, doc)


def _pos(default, doc, hi=RTTS_MAX):
    """A number that must be > 0 (a ratio: 0 would divide by zero)."""
    return Key("number", default, doc, 0, hi, True)


def _period(default, doc, lo=PERIOD_RTTS_MIN, hi=RTTS_MAX, off=False):
    """A period, interval or timeout: at least `lo` (PERIOD_RTTS_MIN, PERIOD_MS_MIN); `off`: 0
    also, meaning none."""
    return Key("number", default, doc, lo, hi, off=off)


TOP = {
    "name": Key("str", None, "run name (results/<name>-<stamp>); default: the file's stem"),
    "description": Key("str", "", "one paragraph: what the run shows"),
    "fabric": Key("table"), "transport": Key("table"), "collective": Key("table"),
    "options": Key("table"), "faults": Key("array"), "mrc": Key("table"), "short": Key("table"),
    "cluster": Key("table"),
}

FABRIC = {
    "planes": _i(2, 1, MAX_PLANES, "parallel planes; every host has one NIC port per plane"),
    "groups": _i(2, 1, MAX_GROUPS, "T0 (leaf) groups per plane"),
    "spines": _i(2, 1, MAX_SPINES, "T1 (spine) switches per plane"),
    "hosts_per_group": _i(2, 1, MAX_HOSTS_PER_GROUP, "hosts under each T0"),
    "host_link_mbit": _n(100.0, 0.1, 10000, "host-T0 link rate, Mbit/s"),
    "fabric_link_mbit": _n(100.0, 0.1, 10000, "T0-T1 link rate, Mbit/s"),
    "routing": Key("str", "srv6", "routing mrc uses (roce and tcp always use ecmp)",
                   choices=ROUTINGS),
    "switch_buffer_kb": _i(None, -(-MIN_BUFFER_BYTES // 1024), MAX_BUFFER_BYTES // 1024,
                           "drop-tail buffer of every switch egress port, KiB (omit: HTB's "
                           "deep default)"),
    "mtu": _i(1500, 1280, 9000, "link MTU of every host and switch port"),
    "host_link_delay_ms": _n(0.0, 0.0, SCENARIO_MAX_LINK_DELAY_MS, "one-way propagation delay "
                             "of every host-T0 link, ms (emulated in the mrc and roce endpoints' "
                             "receive path; kernel tcp gets none: model/propagation.py)"),
    "fabric_link_delay_ms": _n(0.0, 0.0, SCENARIO_MAX_LINK_DELAY_MS, "one-way propagation "
                               "delay of every T0-T1 link, ms (as host_link_delay_ms); a path "
                               "across groups has two of each, a same-T0 path two host links"),
    "time_scale": Key("scale", "auto", "run the emulated world this many times slower than "
                      "the wall clock (link rates / k, times x k; "
                      "emulation/calibration/time_scale.py); \"auto\": the smallest k this "
                      "machine keeps up with, calibrated once per machine and fabric and cached "
                      "(mrclab calibrate)", 1, TIME_SCALE_MAX),
    "scheduling": Key("str", DEFAULT_SCHEDULING, "how the fabric's processes share the CPU: "
                      "\"hifi\" keeps the per-packet work (the endpoints' packet loops, "
                      "ovs-vswitchd) ahead of the bulk compute and bookkeeping with CPU cgroup "
                      "weights and nice, undone at stop (emulation/network/scheduling.py); "
                      "\"none\" changes nothing", choices=SCHEDULINGS),
}

TRANSPORT = {
    "names": Key("strings", list(TRANSPORTS), "what `--transport all` runs", choices=TRANSPORTS),
    "tcp_reconvergence_s": _n(2.0, 0.0, 600.0, "ECMP reconvergence delay after a fault, tcp"),
    "roce_reconvergence_s": _n(None, 0.0, 600.0, "the same for roce; omit: static ECMP"),
    "tcp_port": _i(47000, 1024, 65535, "TCP port of the accepting side"),
}

COLLECTIVE = {
    "kind": Key("str", "allreduce", "the collective", choices=COLLECTIVES),
    "message_bytes": _i(1 << 20, 4, 1 << 30, "per-rank buffer, a multiple of 4 (float32)"),
    "iterations": _i(20, 1, 100000, "timed iterations (after warmup)"),
    "iterations_after_faults": _i(None, 1, 100000, "end the traffic this many iterations after "
                                  "the one running when the last fault applies (at most iterations)"),
    "warmup": _i(2, 0, 1000, "untimed iterations first"),
    "qps_per_peer": _i(2, 1, 64, "queue pairs (or TCP connections) per peer"),
    "timeout_s": _n(60.0, 0.1, 3600.0, "per wait(): a stuck transport fails the worker"),
    "incast_target": Key("str", None, "incast only: the host every rank sends to"),
    "victim": Key("strings", None, "incast only: [src, dst] of an extra flow"),
    "victim_only": _b(False, "incast only: the victim's two hosts take no part in the incast "
                      "and the victim flow carries as much per iteration as the target receives"),
}

OPTIONS = {
    "trimming": _b(True, "in-fabric packet trimming and ECN marking"),
    "capture": _b(True, "tcpdump on every host port"),
    "goodput_interval_ms": _n(10.0, 1.0, 10000.0, "goodput sampling period, ms"),
    "metrics_port": _i(None, 1024, 65535, "serve the live counters (mrclab top's) in "
                       "Prometheus' text format on 127.0.0.1:<port>/metrics during the run"),
    "control_class": _b(True, "every port serves SACKs, NACKs and probes (DSCP_CONTROL) ahead "
                        "of data (false: one FIFO, acknowledgements wait behind data)"),
}

# emulation/cluster/placement.py: servers, placement rules, the explicit map [cluster.nodes]
CLUSTER = {
    "servers": Key("strings", None, "the servers the fabric is spread over, [user@]host; the "
                   "first is the machine mrclab runs on (mrclab run --servers overrides)"),
    "placement": Key("str", "plane", "which server holds each switch and host: plane, pod, or "
                     "explicit ([cluster.nodes] server = [nodes])", choices=PLACEMENTS),
    "nodes": Key("table"),
}

SHORT_ONLY = {
    "fault_time_factor": _n(1.0, 0.01, 1.0, "multiplies every fault's at_s, after_s and flap "
                            "period_s (at_iteration scales with the iterations)"),
    "fabric_time_scale": _n(None, 1, TIME_SCALE_MAX, "the short version's [fabric] time_scale "
                            "(a number: the tests run the short versions and never calibrate)"),
}
SHORT_RESERVED = {"time_scale": "renamed: use fault_time_factor (the factor on the fault "
                                "times); the short version's [fabric] time_scale is "
                                "fabric_time_scale"}

MRC = {
    "ring_bytes": _i(None, 4096, 1 << 30, "receive ring per QP"),
    "fragment_bytes": _i(None, 64, 1 << 29, "WRITE-with-IMM fragment, <= ring_bytes / 2"),
    "linger_s": _n(None, 0.0, 60.0, "answer peers after the last iteration until every rank is done, at most this long (default: one wait's limit)"),
    "connect_timeout_s": _n(None, 0.1, 3600.0, "QP connection set-up limit"),
    "endpoint": Key("table"), "qp": Key("table"), "nscc": Key("table"),
    "host_qp": Key("table"),    # [mrc.host_qp.<host>]: [mrc.qp] keys for one host's QPs
}
MRC_RESERVED = {"base_rtt_ns": "moved: use [mrc.endpoint] base_rtt_ns, the endpoint's fixed "
                               "base RTT"}

# traffic.nic.endpoint_support.EndpointConfig fields: the endpoint's own settings. host, fabric,
# routing, event_log and control_socket are set by the runner per host; the QPs' settings are
# [mrc.qp] (each has one name, MRCConfig's).
MRC_ENDPOINT = {
    "planes": Key("ints", None, "NIC ports (planes) to open; default all"),
    "port_rate_mbit": _pos(None, "pacing rate per port, Mbit/s (default: host_link_mbit)",
                           hi=100000.0),
    "pacing_fraction": _n(None, 0, 1.5, "pace at this fraction of the port rate", above=True),
    "pacing_burst_packets": _i(None, 1, 1024, "pacer burst"),
    "fast_path": _b(None, "receive through a PACKET_MMAP ring (false: one recv() per frame)"),
    "max_payload": _i(None, 64, 9000, "per-packet payload cap (the port MTU also caps it)"),
    "base_rtt_ns": _i(None, 1, NS_MAX, "fixed base RTT of every QP (omit: probed)"),
    "default_base_rtt_ns": _i(None, 1, NS_MAX, "base RTT if probing gets no answer"),
    "rtt_probe_count": _i(None, 1, 1000, "probes that measure the base RTT"),
    "min_base_rtt_ns": _i(None, 1, NS_MAX, "an optional floor of a QP's base RTT (and [mrc.qp] "
                           "nscc_min_base_rtt_ns defaults to it); unset: none, the timers start "
                           "from the probes' RTT plus a full frame's serialization"),
    "port_poll_ms": _n(None, 0.1, 10000.0, "port state poll period without link events, ms"),
    "port_poll_backstop_ms": _n(None, 0.1, 100000.0, "port state poll period beside the "
                                "kernel's link events (rtnetlink), ms"),
    "seed": _i(None, 0, (1 << 63) - 1, "EV choice seed (omit: from the clock)"),
    "path_probe_interval_ms": _period(None, "path prober: one probe per path to every "
                                 "peer this often, ms (0: off; on: the run's path monitor "
                                 "denies the lossy links it finds)", MIN_PATH_PROBE_MS,
                                      60000.0, off=True),
    "path_probe_timeout_ms": _period(None, "path prober: an unanswered probe is suspect after "
                                     "this, ms", MIN_PATH_PROBE_MS, 60000.0),
    "path_probe_margin_ms": _period(None, "path prober: a probe lost on a silent path is judged "
                                    "by the peer's answers to probes sent this much later on "
                                    "other paths, ms", PERIOD_MS_MIN, 600000.0),
    "ev_event_rate_per_s": _pos(None, "EV state-change events per second the endpoint offers "
                                "the controller (more are counted as dropped)", hi=1e6),
}
MRC_ENDPOINT_RESERVED = {
    "host": "set by the runner per host", "fabric": "comes from [fabric]",
    "routing": "comes from [fabric] routing", "event_log": "set by the runner",
    "time_scale": "comes from [fabric] time_scale",
    "control_socket": "set by the runner", "qp": "use the [mrc.qp] table",
    "goodput_interval_ms": "moved: use [options] goodput_interval_ms",
    **{key: f"moved: every QP setting is in [mrc.qp]; use [mrc.qp] {key}" for key in (
        "rto_rtts", "probe_period_rtts", "skip_rtts", "reorder_rtts", "probe_timeout_rtts",
        "reverse_probe_rtts", "ev_count", "ack_every", "ack_delay_rtts", "rto_ns",
        "probe_period_ns", "skip_ns", "fabric_delay_bound_ns", "first_packet_grace")},
    "loss_verdict_ms": "moved: every QP setting is in [mrc.qp]; use [mrc.qp] loss_verdict_ns "
                       "(in ns: 300 ms = 300000000)",
}

# traffic.core.qp_config.MRCConfig fields, over the endpoint's EMULATED_FABRIC_QP_DEFAULTS
# (traffic/nic/endpoint_support.py); the settings the endpoint derives are in MRC_QP_RESERVED.
MRC_QP = {
    "ev_count": _i(None, 1, EV_COUNT_MAX, "active EVs, equal per plane"), "evs_per_path": _i(
        None, 1, 64, "active EVs per (plane, spine) path when ev_count is omitted"),
    "ev_backup_count": _i(None, 0, EV_COUNT_MAX, "backup EVs, equal per plane"),
    "ev_min_active": _i(None, 0, EV_COUNT_MAX, "keep at least this many EVs (<= ev_count)"),
    "ev_pin_spine": _i(None, 0, MAX_SPINES - 1, "experiment: start ev_pin_count EVs of each "
                       "plane on this spine (T1), the rest on the other spines (omit: random)"),
    "ev_pin_count": _i(None, 1, EV_COUNT_MAX, "experiment: how many active EVs per plane start "
                       "on ev_pin_spine (<= ev_count / planes)"),
    "probe_k": _i(None, 1, 1000, "probe successes that return an EV to GOOD"),
    "probe_period_rtts": _period(None, "probe period of a bad EV, base RTTs"),
    "probe_timeout_rtts": _period(None, "unanswered probe timeout, base RTTs (propagation once)"),
    "probe_backoff_max": _i(None, 1, 1024, "failed probes double the period up to this factor"),
    "skip_rtts": _n(None, 0.0, RTTS_MAX, "ECN echo: skip the EV this long, base RTTs"),
    "skip_backoff_max": _i(None, 1, 1024, "marks soon after a skip double it up to this factor"),
    "mpr": _i(None, 1, PSN_SPACE // 2 // MPR_UNIT - 1, "max PSN range, units of 128 PSNs"),
    "start_psn": _i(None, 0, PSN_SPACE - 1, "initial PSN"),
    "rto_ns": _i(None, PERIOD_NS_MIN, NS_MAX, "fixed base RTO"),
    "rto_rtts": _period(None, "retransmission timeout, base RTTs (propagation counted once)"),
    "rto_min_ns": _i(None, PERIOD_NS_MIN, NS_MAX, "RTO floor"),
    "rto_max_ns": _i(None, 1, NS_MAX, "RTO ceiling (>= rto_min_ns)"),
    "max_wimm": _i(None, 1, 0xFFFF, "OCP max_wimm: WRITE-with-IMM messages in flight per QP"),
    "ack_timeout": _i(None, 0, 24, "OCP local ACK timeout, 1.024 us x 2^n (omit: from the RTT)"),
    "retry_linear_count": _i(None, 0, 7, "OCP linear (fixed interval) retries of one PSN"),
    "retry_exp_count": _i(None, 0, 25, "OCP exponential backoff retries after them; 25 = infinite"),
    "retry_fixed_interval": _b(None, "linear retries wait a fixed interval (OCP), not a growing one"),
    "reorder_rtts": _n(None, 0.0, RTTS_MAX, "SACK-gap loss window, base RTTs less propagation"),
    "adaptive_reorder": _b(None, "grow the reorder window with measured RTT variance"),
    "path_order_loss": _b(None, "a packet sent later on the same path arrived: loss (srv6 only)"),
    "congestion_grace_rtts": _n(None, 0.0, 1e6, "congestion evidence forgives a loss this long"),
    "congestion_delay_rtts": _n(None, 0.0, 1e6, "queueing delay that counts as congestion"),
    "congestion_forgive_rtts": _n(None, 0.0, 1e6, "how long a forgiven EV is remembered"),
    "ack_every": _i(None, 1, SACK_BITMAP_BITS, "receiver SACK coalescing"),
    "ack_delay_ns": _i(None, PERIOD_NS_MIN, NS_MAX, "delayed-SACK limit (over ack_delay_rtts)"),
    "ack_delay_rtts": _period(None, "delayed-SACK limit, base RTTs"),
    "nscc_enabled": _b(None, "NSCC congestion control"),
    "nscc_prop_gain": _pos(None, "NSCC proportional increase, times uet-htsim's alpha",
                           hi=100.0),
    "nscc_max_window_bdp": _pos(None, "NSCC window ceiling, BDPs", hi=100.0),
    "nscc_initial_window_bdp": _pos(None, "NSCC initial window, BDPs (omit: the ceiling)",
                                    hi=100.0),
    "nscc_reference_rtt_ns": _i(None, 1, NS_MAX, "uet-htsim's reference RTT (12 us there) "
                                "for NSCC's alpha and fast increase (omit: the network RTT)"),
    "fabric_delay_bound_ns": _i(None, 0, NS_MAX, "queueing bound of a trimming fabric"),
    "first_packet_grace": _b(None, "a fresh EV's first loss does not retire it"),
    "stall_burst_rtts": _n(None, 0.0, 1e6, "no stall excuse for a timeout when a packet sent "
                           "this many base RTTs before it was delivered"),
    "loss_verdict_ns": _i(None, 0, NS_MAX, "wait this long for evidence before retiring an EV"),
    "probe_period_ns": _i(None, PERIOD_NS_MIN, NS_MAX, "fixed probe period (wins over "
                          "probe_period_rtts)"),
    "skip_ns": _i(None, 1, NS_MAX, "fixed ECN skip time (wins over skip_rtts)"),
    "loss_policy": Key("str", None, "what an unexplained loss does to its EV: 'ocp' retires it "
                       "at once, 'tolerant' adds the emulator's verdict window and excuses "
                       "(traffic/core/loss_policy.py)", choices=("ocp", "tolerant")),
    "suspend_siblings": _b(None, "a path's unexplained loss suspends the other EVs on that path"),
    "nscc_min_base_rtt_ns": _i(None, 0, NS_MAX, "NSCC's BDP uses at least this RTT"),
    "nscc_frame_rtt_ns": _i(None, 0, NS_MAX, "what a full frame's serialization adds to NSCC's "
                            "base RTT (default: derived from the link rates and the MTU)"),
    "header_overhead": _i(None, 0, 1024, "header bytes the pacer counts per packet"),
    "reverse_evs_per_plane": _i(None, 1, 64, "receiver reverse-path EVs per plane"),
    "reverse_probe_rtts": _period(None, "reverse-EV probe period, base RTTs (propagation once)"),
    "reverse_probe_fail_limit": _i(None, 1, 1000, "failed reverse probes before a new EV"),
    "reverse_idle_rtts": _period(None, "stop reverse probing after this idle time",
                                 hi=1e6),
    "tail_sack_copy": _b(None, "a message's tail SACK also leaves over a second reverse path"),
    "tail_copy_wait_rtts": _period(None, "a delayed SACK's copy waits this long for data", hi=1e6),
    "roce_window_psns": _i(None, 1, PSN_SPACE // 2 - 1, "RoCE RC window, PSNs"),
    "roce_ack_timeout": _i(None, 0, 31, "RoCE's IB local ACK timeout, 4.096 us x 2^n, waited "
                           "before every retry: NCCL_IB_TIMEOUT (NCCL's default 20, 4.29 s)"),
    "roce_ack_timeout_ns": _i(None, PERIOD_NS_MIN, NS_MAX, "RoCE's ACK timeout itself, ns "
                              "(wins over roce_ack_timeout)"),
    "roce_retry_limit": _i(None, 1, 7, "RoCE retry_cnt (3 bits): NCCL_IB_RETRY_CNT (NCCL's "
                           "default 7)"),
}
# [mrc.nscc]: OCP mrc_ctl.h struct mrc_ctl_cc_nscc_cfg, each key under its name there; it
# reaches MRCConfig as nscc_<key> (traffic/core/qp_config.py, traffic/core/nscc.py for the rules and the
# uet-htsim defaults an omitted key takes).
MRC_NSCC = {
    "disable_qa": _b(None, "turn quick adapt off"),
    "adjust_bytes_threshold": _i(None, 0, 1 << 31, "apply the batched increase after this "
                                 "many bytes acked (default 8 MSS)"),
    "adjust_period_threshold": _i(None, 0, NS_MAX, "... or after this long, ns; eta is added "
                                  "once per period (default: base RTT)"),
    "eta": _n(None, 0.0, 1e9, "bytes added once per adjust period (default 0.15 MSS x a)"),
    "fi": _n(None, 0.0, 1e9, "fair increase, bytes per window acked (default 5 MSS x a)"),
    "fi_scale": _n(None, 0.0, 100.0, "fast increase per byte acked at near-zero delay "
                   "(default 0.25 x a)"),
    "gamma": _n(None, 0.0, 1.0, "multiplicative-decrease gain", above=True),
    "max_md_jump": _n(None, 0.0, 0.5, "largest decrease (factor >= 1 - this)", above=True),
    "max_cwnd": _i(None, 1, 1 << 31, "window ceiling, bytes (default 1.5 BDP)"),
    "qa_gate": _i(None, 0, 31, "quick adapt only if a window achieved < max_cwnd >> qa_gate"),
    "qa_threshold": _i(None, 0, NS_MAX, "queueing delay that triggers quick adapt, ns "
                       "(default 4 x target_delay)"),
    "target_delay": _i(None, 0, NS_MAX, "target queueing delay, ns (default: base RTT, "
                       "0.75 base RTT with trimming)"),
    "delay_alpha": _n(None, 0.0, 1.0, "EWMA gain of the averaged delay (uet-htsim; not in "
                      "mrc_ctl.h)", above=True),
}
MRC_NSCC_RESERVED = {"base_rtt": "measured by the endpoint; fix it with [mrc.endpoint] "
                                 "base_rtt_ns"}

MRC_QP_RESERVED = {
    **{old: f"moved: use [mrc.nscc] {new} (mrc_ctl_cc_nscc_cfg's name)" for old, new in (
        ("nscc_gamma", "gamma"), ("nscc_max_md", "max_md_jump"),
        ("nscc_fair_increase_mss", "fi (in bytes)"))},
    "base_rtt_ns": "measured by the endpoint; fix it with [mrc.endpoint] base_rtt_ns",
    "mtu": "renamed max_payload, set by the endpoint: use [mrc.endpoint] max_payload",
    "max_payload": "set by the endpoint from its ports' MTU: use [mrc.endpoint] max_payload",
    "port_rate_Bps": "set by the endpoint: use [mrc.endpoint] port_rate_mbit and "
                     "pacing_fraction",
    "pacer_burst_packets": "set by the endpoint: use [mrc.endpoint] pacing_burst_packets",
    "pacing_burst_packets": "set by the endpoint: use [mrc.endpoint] pacing_burst_packets",
    "trimming": "comes from [options] trimming",
    "fabric_reorder_bound_ns": "set by the endpoint from the trim thresholds ([options] "
                               "trimming)",
    "propagation_rtt_ns": "set by the endpoint from [fabric] host_link_delay_ms and "
                          "fabric_link_delay_ms",
    "rto_rtt_multiplier": "renamed: use rto_rtts",
    "reorder_window_frac": "renamed: use reorder_rtts (base RTTs)",
}

# [[faults]] timing and target keys; the action's own parameters are checked by
# controller.faults.validate, which owns them.
FAULT = {
    "at_s": _n(None, 0.0, 86400.0, "seconds after the timed iterations start"),
    "at_iteration": Key("int", None, "when any rank starts this timed iteration", 0),
    "after_s": _n(None, 0.0, 86400.0, "seconds after the previous entry was applied"),
    "action": Key("str", None, "controller fault action"),
    "a": Key("str", None, "link end (or the switch of a blackhole)"),
    "b": Key("str", None, "the other link end"),
    "node": Key("str", None, "the switch of a blackhole (same as a)"),
    "links": Key("str", None, "host | fabric | all | a switch: every such link"),
}

SCHEMA = {"": TOP, "fabric": FABRIC, "transport": TRANSPORT, "collective": COLLECTIVE,
          "options": OPTIONS, "mrc": MRC, "mrc.endpoint": MRC_ENDPOINT, "mrc.qp": MRC_QP,
          "mrc.nscc": MRC_NSCC, "cluster": CLUSTER}

_TYPE_NAMES = {"int": "an integer", "number": "a number", "bool": "true or false",
               "str": "a string", "strings": "a list of strings", "ints": "a list of integers",
               "table": "a table", "array": "an array of tables",
               "scale": "a number >= 1 or \"auto\""}


def type_error(key: Key, value) -> str | None:
    """Why `value` is not of the key's kind, or None. TOML's inf/nan are numbers to tomllib, so
    they are rejected here: no setting of this project means infinity."""
    k = key.kind
    if k == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif k == "number":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
    elif k == "scale":
        ok = value == "auto" or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                 and math.isfinite(value))
    elif k == "bool":
        ok = isinstance(value, bool)
    elif k == "str":
        ok = isinstance(value, str)
    elif k == "strings":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif k == "ints":
        ok = isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value)
    elif k == "table":
        ok = isinstance(value, dict)
    elif k == "array":
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    else:
        raise AssertionError(f"unknown key kind {k!r}")
    return None if ok else f"must be {_TYPE_NAMES[k]}, got {value!r}"


def range_error(key: Key, value, hi=None) -> str | None:
    """Why a value of the right type is out of range, or None. `hi` overrides the key's
    ceiling when it depends on another key (at_iteration < iterations)."""
    if key.choices is not None:
        bad = [v for v in (value if isinstance(value, list) else [value]) if v not in key.choices]
        if bad:
            return f"must be one of {', '.join(map(str, key.choices))}, got {bad[0]!r}"
        return None
    if key.kind not in ("int", "number", "scale") or isinstance(value, str):
        return None
    lo, hi = key.lo, key.hi if hi is None else hi
    if key.off and value == 0:
        return None
    low_bad = lo is not None and (value <= lo if key.above else value < lo)
    if low_bad or (hi is not None and value > hi):
        if key.above:
            return f"must be above {lo} and at most {hi}, got {value!r}"
        if key.off:
            return f"must be 0 (off) or between {lo} and {hi}, got {value!r}"
        if hi is None:
            return f"must be at least {lo}, got {value!r}"
        return f"must be between {lo} and {hi}, got {value!r}"
    return None


# ---------------------------------------------------------------- locating keys in the text


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY_PART = r"(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
# a key, dotted or not: `iterations =`, `collective.iterations =`, `"a".b =`
_KEY = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_KEY_PART})\s*=")


class Locator:
    """Line numbers of tables and keys (tomllib gives values, not positions), indexed in one pass
    so that looking up a key costs a dict access however large the file."""

    def __init__(self, text: str):
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        seen: dict[str, int] = {}
        table, occurrence = "", 0
        in_string = None
        for lineno, line in enumerate(text.splitlines(), start=1):
            if in_string:                       # inside a multi-line string value
                if line.count(in_string) % 2:
                    in_string = None
                continue
            header = _HEADER.match(line)
            if header:
                table = re.sub(r"\s*\.\s*", ".", header.group(2)).replace('"', "")
                occurrence = seen.get(table, 0)
                seen[table] = occurrence + 1
                self.tables.setdefault((table, occurrence), lineno)
                continue
            key = _KEY.match(line)
            if key:
                # a dotted key a.b.c = v is key c of table <table>.a.b, and defines a and b
                parts = [p.strip().strip("\"'") for p in
                         re.findall(_KEY_PART, key.group(1))]
                where = table
                for part in parts:
                    self.keys.setdefault((where, occurrence, part), lineno)
                    where = f"{where}.{part}" if where else part
                # keys of an inline table on this line: x = { a = 1, b = 2 }
                rest = line[key.end():]
                for inner in _INLINE_KEY.findall(rest):
                    self.keys.setdefault((where, occurrence, inner.strip("\"'")), lineno)
            for quote in ('"""', "'''"):
                if line.count(quote) % 2:
                    in_string = quote
                    break

    def table(self, name: str, occurrence: int = 0) -> int | None:
        return self.tables.get((name, occurrence))

    def key(self, table: str, key: str, occurrence: int = 0) -> int | None:
        """The key's line; else its table's line (a key of an inline table); else None."""
        line = self.keys.get((table, occurrence, key))
        if line is None and "." in table:     # [mrc] endpoint = {...} or mrc.endpoint.x = ...
            parent, _, child = table.rpartition(".")
            line = self.keys.get((parent, occurrence, child))
        return line or self.table(table, occurrence)


class Checker:
    """Applies the schema to one parsed file. Errors are collected as `source:line: where:
    message` lines so that one pass reports every problem of the file: `note` records one and
    checking goes on (the key is left out and its default used); `fail` records one and stops
    (what follows cannot be checked without it); `raise_errors` stops if any were recorded."""

    def __init__(self, source: str, text: str):
        self.source = source
        self.loc = Locator(text)
        self.errors: list[str] = []

    def note(self, where: str, message: str, line: int | None = None) -> None:
        at = f"{self.source}:{line}" if line else self.source
        self.errors.append(clip_values(f"{at}: {where[:120]}: {message}"))

    def fail(self, where: str, message: str, line: int | None = None):
        self.note(where, message, line)
        self.raise_errors()

    def raise_errors(self) -> None:
        if self.errors:
            raise ScenarioError("\n".join(self.errors))

    def table(self, data: dict, name: str, schema: dict, *, parent: str = "",
              reserved: dict | None = None) -> dict:
        """The table `name` of `data` checked against `schema`: {key: typed value} for the keys
        present (numbers of kind "number" as float); {} if absent."""
        full = f"{parent}.{name}" if parent else name
        if name not in data:
            return {}
        value = data[name]
        if not isinstance(value, dict):
            where = f"[{parent}] {name}" if parent else name
            self.fail(where, f"must be a table ([{full}]), got {value!r}",
                      self.loc.key(parent, name))
        return self.keys(value, full, schema, reserved=reserved)

    def keys(self, values: dict, table: str, schema: dict, *, occurrence: int = 0,
             where: str | None = None, reserved: dict | None = None, his: dict | None = None,
             extra: tuple = ()) -> dict:
        """Type- and range-check every key of one table. Keys in `extra` pass unchecked (a
        fault's action parameters). his: per-key ceilings that depend on other keys."""
        prefix = where or f"[{table}]"
        out = {}
        for key, value in values.items():
            line = self.loc.key(table, key, occurrence)
            if key not in schema:
                if key in extra:
                    out[key] = value
                    continue
                if reserved and key in reserved:
                    self.note(f"{prefix} {key}", f"unknown key here ({reserved[key]})", line)
                    continue
                known = ", ".join(list(schema) + list(extra))
                self.note(f"{prefix} {key}", f"unknown key; known keys: {known}", line)
                continue
            spec = schema[key]
            problem = type_error(spec, value) or range_error(spec, value, (his or {}).get(key))
            if problem:
                self.note(f"{prefix} {key}", problem, line)
                continue
            out[key] = (float(value) if spec.kind == "number" or (
                spec.kind == "scale" and not isinstance(value, str)) else value)
        return out


def with_defaults(values: dict, schema: dict) -> dict:
    """values plus every absent key's default."""
    return {**{k: s.default for k, s in schema.items() if s.kind not in ("table", "array")},
            **values}


def _range_text(key: Key) -> str:
    if key.choices:
        return ", ".join(map(str, key.choices))
    if key.lo is None and key.hi is None:
        return ""
    low = "" if key.lo is None else f"{'>' if key.above else ''}{key.lo}"
    return f"{'0 or ' if key.off else ''}{low}..{'' if key.hi is None else key.hi}"


def reference() -> str:
    """Every key as a Markdown table per TOML table (`python -m emulation.config.scenario_schema`)."""
    out = []
    tables = dict(SCHEMA, **{"[faults]": FAULT, "short": SHORT_ONLY})
    for name, table in tables.items():
        rows = [(k, v) for k, v in table.items() if v.kind not in ("table", "array")]
        if not rows:
            continue
        title = "top level" if not name else (name if name.startswith("[") else f"[{name}]")
        out += [f"### {title}", "", "| key | type | range | default | meaning |",
                "| --- | --- | --- | --- | --- |"]
        for key, spec in rows:
            default = "" if spec.default is None else repr(spec.default).replace("'", '"')
            out.append(f"| {key} | {spec.kind} | {_range_text(spec)} | {default} | {spec.doc} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(print_to_pipe(reference()))
