"""Configuration of an MRC QP (every knob of the transport) and 24-bit PSN arithmetic.

Pure data: the sender (traffic/core/sender.py), receiver (traffic/core/receiver.py), loss policies
(traffic/core/loss_policy.py) and the RoCE baseline (traffic/core/roce_rc.py) all read one MRCConfig.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from model.transport_defaults import RTO_MAX_NS
from traffic.core.messages import PSN_MASK

PSN_SPACE = PSN_MASK + 1
MPR_UNIT = 128          # MPR is in units of 128 PSNs (OCP)
# OCP mrc.h, struct mrc_qp_attr: timeout exponent and retry counter ranges.
ACK_TIMEOUT_UNIT_NS = 1.024e3           # local ACK timeout = 1.024 us x 2^timeout
ACK_TIMEOUT_MAX = 24                    # 17.18 s
RETRY_LINEAR_MAX = 7
RETRY_EXP_MAX = 25
RETRY_EXP_INFINITE = 25                 # exp_cnt 25: retry forever
LOSS_POLICIES = ("ocp", "tolerant")
# InfiniBand's local ACK timeout (IBTA, QP attribute `timeout`): 4.096 us x 2^n, n in 0..31.
IB_ACK_TIMEOUT_UNIT_NS = 4096
IB_ACK_TIMEOUT_MAX = 31
ROCE_ACK_TIMEOUT_NCCL = 20              # NCCL_IB_TIMEOUT's default
ROCE_RETRY_CNT_NCCL = 7                 # NCCL_IB_RETRY_CNT's default
# MRCConfig fields that are times in ns although their names (mrc_ctl.h's, after nscc_) do not
# end in _ns: the time scale (emulation/calibration/time_scale.py) scales them with the *_ns ones.
NS_FIELDS_BY_OCP_NAME = ("nscc_adjust_period_threshold", "nscc_qa_threshold",
                         "nscc_target_delay")


@dataclass
class MRCConfig:
    """Every knob of the MRC transport, each under the one name a scenario's [mrc.qp] table
    uses too. Defaults are the pure model's (RTT ~1 ms, 100 Mbit/s ports; OCP/UET values quoted
    where they exist); an endpoint starts its QPs from EMULATED_FABRIC_QP_DEFAULTS
    (traffic/nic/endpoint_support.py) instead where the userspace fabric needs other values, and
    derives base_rtt_ns, max_payload, port_rate_Bps and pacing_burst_packets itself."""

    # EV set (traffic/core/evs.py; OCP examples: 128-256 EVs, ev_min_active = ev_count/4). None:
    # evs_per_path EVs on each distinct path to the peer (planes x spines; the paper's EVs each
    # name a path, and OCP's counts exceed the paths), and as many backups. Under OCP's loss
    # rule every loss without trim retires the EV it travelled on: with a single EV per path, random
    # loss retires a plane's EVs faster than probes return them, and a plane with none carries
    # nothing; several per path keep both planes in use, as OCP's 128-256 EVs do.
    ev_count: int | None = None          # active EVs, equal per plane
    evs_per_path: int = 4                # active EVs per path when ev_count is None
    ev_backup_count: int | None = None   # backup EVs, equal per plane (state UNKNOWN until used)
    ev_min_active: int | None = None     # None -> ev_count // 4
    probe_k: int = 3                     # consecutive probe successes to return to GOOD
    probe_period_rtts: float = 5.0       # probe period of an ASSUMED_BAD EV, in base RTTs
    probe_timeout_rtts: float = 4.0      # a probe unanswered this long failed
    probe_backoff_max: int = 8           # failed probes double the period, up to this factor
    skip_rtts: float = 2.0               # ECN echo: skip the EV for this many base RTTs
    skip_backoff_max: int = 32           # marks soon after a skip double it, up to this factor
    probe_period_ns: int | None = None   # fixed probe period; wins over probe_period_rtts
    skip_ns: int | None = None           # fixed ECN skip time; wins over skip_rtts
    # Experiment knob (traffic/core/evs.py "Pinning"): start ev_pin_count of each plane's active EVs
    # on spine ev_pin_spine, the rest on the other spines, so QPs are forced onto one path.
    ev_pin_spine: int | None = None
    ev_pin_count: int = 0
    # reliability
    max_payload: int = 1024              # payload bytes per packet (the endpoint: what fits its ports)
    mpr: int = 8                         # max PSN range, units of 128 PSNs (OCP example 8)
    start_psn: int = 0                   # initial PSN (both ends must agree)
    base_rtt_ns: int = 1_000_000         # base RTT until an RTT sample (then the smallest seen)
    rto_ns: int | None = None            # fixed base RTO; None -> derived from RTT
    rto_rtts: float = 4.0                # base RTO in base RTTs (when rto_ns and ack_timeout are unset)
    rto_min_ns: int = 1_000_000
    rto_max_ns: int = RTO_MAX_NS
    # Retries of one PSN, as OCP's struct mrc_qp_attr (mrc.h): `timeout` is the local ACK
    # timeout, 1.024 us x 2^timeout (max 24, 17.18 s); retry.linear_cnt (max 7) retries wait a
    # fixed interval, then retry.exp_cnt (max 25; 25 = never give up) retries double it; once
    # both are spent the next timeout puts the QP in error, which flushes its work requests.
    # ack_timeout None: the base interval is the RTO derived from the RTT samples (OCP's
    # timeouts are sized for NIC RTTs of microseconds, the emulated fabric's RTT is ~1 ms).
    # Defaults: OCP's examples/mrc_qp.md (linear_cnt 7, exp_cnt 25 = infinite), fixed linear
    # interval. The doubling phase (capped at rto_max_ns) rides out the userspace switches
    # holding packets for up to 250 ms; a peer that never answers fails the collective's
    # timeout_s instead of the QP. retry_fixed_interval False: the linear phase waits one more
    # base interval per retry (1x .. 8x) instead (the emulator's former default).
    # OCP mrc.h struct mrc_qp_attr wimm.max_wimm: WRITE-with-IMM messages in flight as
    # requestor (examples/mrc_qp.md: 128); a message starts only while fewer are incomplete.
    max_wimm: int = 128
    ack_timeout: int | None = None
    retry_linear_count: int = 7
    retry_exp_count: int = 25
    retry_fixed_interval: bool = True
    reorder_rtts: float = 0.5            # SACK-gap loss: sent this many base RTTs later arrived
    # Under load the per-path queueing delay differs by far more than a base RTT; the reorder
    # window also grows to srtt + 4 rttvar - base RTT (RACK-like), from the samples, so a slower
    # queue on one path is not taken for a failed path.
    adaptive_reorder: bool = True
    # Loss by path order (traffic/core/path_order.py): a packet sent later on the same path
    # (plane, spine) arrived. Only where the EV names its path (source routing): the endpoint
    # turns it off on a hash-routed (ECMP) fabric.
    path_order_loss: bool = True
    # A loss without trim on an EV that ITSELF signalled congestion (ECN echo, trimmed NACK, or
    # an RTT sample with queueing delay >= congestion_delay_rtts base RTTs) in the last
    # congestion_grace_rtts (or 8 srtt, if longer) is retransmitted without retiring the EV: in
    # the emulator a CPU-starved userspace switch drops packets of busy paths that a real
    # trimming switch would not. One piece of evidence forgives one loss: a second loss with
    # no newer evidence on that EV retires it. Congestion on OTHER EVs never forgives (a
    # black-holed path echoes nothing). congestion_forgive_rtts bounds how long a forgiven EV
    # stays remembered. 0 grace disables forgiveness.
    congestion_grace_rtts: float = 8.0
    congestion_delay_rtts: float = 1.0
    congestion_forgive_rtts: float = 64.0
    ack_every: int = 1                   # receiver SACK coalescing (1 = SACK every packet)
    # Delayed SACK: a coalesced SACK leaves at the latest this long after the first unacked
    # packet arrived (None -> ack_delay_rtts x base RTT).
    ack_delay_ns: int | None = None
    ack_delay_rtts: float = 0.25
    # congestion control (UET NSCC, traffic/core/nscc.py). nscc_<name>: OCP mrc_ctl.h struct
    # mrc_ctl_cc_nscc_cfg's <name> (a scenario's [mrc.nscc] <name>); None -> uet-htsim's value
    # derived from the BDP and base RTT (traffic/core/nscc.py says how).
    nscc_enabled: bool = True
    nscc_disable_qa: bool = False
    nscc_adjust_bytes_threshold: int | None = None     # bytes (htsim: 8 MTU)
    nscc_adjust_period_threshold: int | None = None    # ns (htsim: base RTT)
    nscc_eta: float | None = None                      # bytes (htsim: 0.15 MSS x a)
    nscc_fi: float | None = None                       # bytes (htsim: 5 MSS x a)
    nscc_fi_scale: float | None = None                 # htsim: 0.25 x a
    nscc_gamma: float = 0.8
    nscc_max_md_jump: float = 0.5        # decrease factor never below 1 - 0.5
    nscc_max_cwnd: int | None = None                   # bytes (htsim: 1.5 BDP)
    nscc_qa_gate: int = 3                              # htsim main_uec.cpp: -1 -> 3
    nscc_qa_threshold: int | None = None               # ns (htsim: 4 x target)
    nscc_target_delay: int | None = None               # ns (htsim: base RTT; 0.75 trimming)
    nscc_delay_alpha: float = 0.0125     # htsim's EWMA gain of the averaged delay
    nscc_prop_gain: float = 1.0          # multiplies htsim's alpha (1.0: the reference)
    nscc_max_window_bdp: float = 1.5
    nscc_initial_window_bdp: float | None = None       # None: max_cwnd (htsim: _maxwnd)
    # htsim's reference network RTT (12 us there), for b = target / it and the fast-increase
    # threshold it / 12; None: the connection's own network RTT (traffic/core/nscc.py says why).
    nscc_reference_rtt_ns: int | None = None
    trimming: bool = False               # fabric trims -> target 0.75 x base RTT
    # Upper bound on the extra (queueing) delay a data packet can see on one path through a
    # TRIMMING fabric: every switch queue trims above its threshold, so a packet that is not
    # trimmed waited at most (hops x trim threshold drain time). 0 = unknown (no trimming).
    # When set, the RTO is at least base RTT + the bound and the reverse-probe timeout the
    # same: the data waits at most the bound, its SACK (or a probe's answer) rides the control
    # class ahead of queued data, so no timeout fires for a packet that is only late, while a
    # dead path is still found within a base RTT + the bound. The reorder window does not hold
    # it (traffic/core/rtt.py says why). The endpoint derives it from the trim thresholds.
    fabric_delay_bound_ns: int = 0
    # How far one path of a QP can lag another on a trimming fabric: one port's full trimming
    # queue (the largest on the path), the lag of a path through one full port beside a path
    # through none. The SACK-gap reorder window is at least this (traffic/core/rtt.py): queues
    # fill within a round trip (an incast's first burst), before any sample can show them.
    # 0: no trimming. The endpoint derives it from the trim thresholds.
    fabric_reorder_bound_ns: int = 0
    # The loss of the first packet an EV ever carried does not retire it (the next loss does):
    # in a fabric of userspace OVS the first packet of a new EV takes the slow path (upcall).
    # The endpoint turns it on (EMULATED_FABRIC_QP_DEFAULTS); off in the pure model.
    first_packet_grace: bool = False
    # Loss verdict (0 = judge at once, as OCP). A loss without trim puts its EV out of use at
    # once (the packets that follow take other EVs) but the EV is only retired (ASSUMED_BAD)
    # if, within loss_verdict_ns, no later evidence explains the loss: a trimmed NACK of that
    # very transmission (the packet met congestion; its header was just slow) or its late
    # delivery (a SACK echoing its timestamp, or an ACK before its retransmission could have
    # made the round trip). In the emulated fabric the CPU-starved userspace switches hold
    # packets before the egress trimmer, outside any trim bound, so such evidence can come
    # late. A black hole explains nothing, so it is retired loss_verdict_ns later than at
    # once; no packet goes to it in between.
    loss_verdict_ns: int = 0
    # The tolerant policy's stall excuse (a timeout with nothing sent later delivered: the peer
    # or its CPU may have stalled) does not apply when a packet sent at most this many base RTTs
    # before the lost one was delivered: the peer answered the same burst, so a message's last
    # packet lost into a dead path is judged at its first timeout, not its second. 0 = off.
    stall_burst_rtts: float = 0.0
    # Which rule turns a loss into a verdict on its path (traffic/core/loss_policy.py): "ocp", OCP's
    # rule, retires the EV at the first loss a trim does not explain, and ignores
    # first_packet_grace, loss_verdict_ns and the congestion forgiveness knobs. "tolerant" applies
    # them and excuses a timeout with nothing later delivered: the choice for a machine that
    # cannot keep up (fidelity not "ok"), whose CPU-starved userspace switches hold packets
    # long enough to look lost.
    loss_policy: str = "ocp"
    # A loss the policy holds against its path (RETIRE or SUSPEND) also suspends every other EV
    # of the same (plane, spine) path, and backups on that path are not drawn as replacements
    # while it is suspected; the EV layout names each EV's path (emulation/topology.py), so
    # the siblings need not each lose a packet of their own. The suspicion ends when an EV of
    # the path is probed back to GOOD, or its loss is explained or followed by a delivery.
    suspend_siblings: bool = False
    # A floor of NSCC's base RTT (its BDP and delay target), for a fabric whose unloaded RTT the
    # probes and nscc_frame_rtt_ns do not capture; 0: none (the timers never read it).
    nscc_min_base_rtt_ns: int = 0
    # What one full data frame adds to an unloaded round trip over the longest path: its
    # store-and-forward serialization on every link (host-T0-T1-T0-host). NSCC's delay is the
    # RTT of data frames less the base RTT, so the base must be a full frame's unloaded RTT
    # (UET's base RTT), while the probes' base comes from small packets. The term is a frame's
    # size over each link's rate: negligible at NIC rates, milliseconds at the emulated fabric's
    # Mbit/s rates. NSCC's base RTT is at least the QP's base RTT plus this, and so is the RTT
    # the QP's timers start from until a data frame's SACK gives a sample (traffic/core/rtt.py);
    # the endpoint derives it from the fabric's link rates and its frame size.
    nscc_frame_rtt_ns: int = 0
    # The path's propagation delay both ways (model/propagation.py; the endpoints' delay lines
    # emulate it), part of every base RTT. It is constant, so the margins in base RTTs multiply
    # only the rest of the RTT and the propagation is added once (traffic/core/rtt.py wait_ns);
    # 0: unknown, the margins multiply the whole base RTT. The endpoint derives it per peer.
    propagation_rtt_ns: int = 0
    # pacing (userspace OVS drops bursts). The endpoint derives the rate from its port rate
    # (Mbit/s) x pacing_fraction and hands its own pacing_burst_packets.
    port_rate_Bps: float = 12_500_000.0  # per plane (100 Mbit/s, the fabric's default host link)
    pacing_burst_packets: int = 4
    header_overhead: int = 120           # bytes of headers counted by the pacer per packet
    # receiver reverse path
    reverse_evs_per_plane: int = 2
    reverse_probe_rtts: float = 1.0      # one reverse-EV probe per base RTT while data flows
    reverse_probe_fail_limit: int = 2
    reverse_idle_rtts: float = 100.0     # stop probing after this long without data
    # The SACK answering an AckReq packet (a message's last packet, a retransmission), and a
    # coalesced SACK whose delay ran out (data stopped coming), also leaves over a second reverse
    # path (reverse_paths.second_reply_path: another plane). No later SACK re-acknowledges a
    # burst's tail, so a tail SACK lost on a dead reverse path costs the sender a whole RTO and
    # the EVs its timeouts retire; a SACK of a retransmission lost the same way costs a second.
    tail_sack_copy: bool = True
    # A coalesced SACK whose delay ran out is a tail only if no data follows it: its copy leaves
    # when no packet came for this many frame base RTTs after it, without the echoed timestamp
    # (its round trip would count the wait). While the sender streams, the next SACK covers it;
    # copying each one at once would double the SACKs whenever packets come further apart than
    # the coalescing delay (each costs three switches and work at both ends).
    tail_copy_wait_rtts: float = 1.0
    # RoCE RC baseline (traffic/core/roce_rc.py), its QP attributes as NCCL sets them for its
    # IB/RoCE connections (NCCL's environment variables,
    # https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html):
    # roce_ack_timeout is NCCL_IB_TIMEOUT, the IB local ACK timeout 4.096 us x 2^n (NCCL's
    # default 20: 4.29 s), waited afresh before every retry; roce_retry_limit is
    # NCCL_IB_RETRY_CNT (NCCL's default 7, the 3-bit retry_cnt's maximum).
    # roce_ack_timeout_ns, when set, is that interval itself and wins over the exponent: the
    # time scale sets it (the interval x k), as 2^n cannot grow by a factor that is not a power
    # of two.
    roce_window_psns: int = 1024
    roce_ack_timeout: int = ROCE_ACK_TIMEOUT_NCCL
    roce_ack_timeout_ns: int | None = None
    roce_retry_limit: int = ROCE_RETRY_CNT_NCCL

    def __post_init__(self) -> None:
        if self.ev_count is not None and (isinstance(self.ev_count, bool)
                                          or not self.ev_count > 0):
            raise ValueError(f"MRCConfig.ev_count must be positive, got {self.ev_count!r}")
        if isinstance(self.max_wimm, bool) or not 1 <= self.max_wimm <= 0xFFFF:
            raise ValueError(f"MRCConfig.max_wimm must be an integer in 1..65535 (OCP mrc.h "
                             f"uint16_t), got {self.max_wimm!r}")
        positive = ("probe_k", "evs_per_path", "max_payload", "mpr", "base_rtt_ns", "rto_min_ns",
                    "rto_max_ns", "ack_every", "port_rate_Bps",
                    "pacing_burst_packets", "reverse_evs_per_plane", "reverse_probe_fail_limit",
                    "roce_window_psns", "roce_retry_limit", "probe_period_rtts",
                    "probe_timeout_rtts", "reverse_probe_rtts", "reverse_idle_rtts", "rto_rtts",
                    "ack_delay_rtts", "tail_copy_wait_rtts", "skip_backoff_max")
        for name in ("probe_period_ns", "skip_ns"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value <= 0):
                raise ValueError(f"MRCConfig.{name} must be a positive integer (ns) or None, "
                                 f"got {value!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in positive and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"MRCConfig.{f.name} must be positive, got {value!r}")
        if self.ev_pin_spine is not None and (isinstance(self.ev_pin_spine, bool)
                                              or not isinstance(self.ev_pin_spine, int)
                                              or self.ev_pin_spine < 0):
            raise ValueError(f"MRCConfig.ev_pin_spine must be a spine index >= 0 or None, "
                             f"got {self.ev_pin_spine!r}")
        if self.ev_pin_count and self.ev_pin_spine is None:
            raise ValueError("MRCConfig.ev_pin_count needs ev_pin_spine (which spine to pin to)")
        if self.ev_pin_spine is not None and not 1 <= self.ev_pin_count <= (
                self.ev_count or self.ev_pin_count):
            raise ValueError(f"MRCConfig.ev_pin_count must be in 1..ev_count with ev_pin_spine "
                             f"set, got {self.ev_pin_count!r}")
        if self.ev_backup_count is not None and self.ev_backup_count < 0:
            raise ValueError(f"MRCConfig.ev_backup_count must be >= 0, got {self.ev_backup_count!r}")
        for name in ("skip_rtts", "header_overhead",
                     "reorder_rtts", "congestion_grace_rtts", "congestion_delay_rtts",
                     "congestion_forgive_rtts", "fabric_delay_bound_ns", "loss_verdict_ns",
                     "fabric_reorder_bound_ns",
                     "nscc_frame_rtt_ns", "propagation_rtt_ns", "stall_burst_rtts"):
            if getattr(self, name) < 0:
                raise ValueError(f"MRCConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.mpr * MPR_UNIT >= PSN_SPACE // 2:
            raise ValueError(f"MRCConfig.mpr {self.mpr} too large for 24-bit PSNs")
        if not 0 <= self.start_psn <= PSN_MASK:
            raise ValueError(f"MRCConfig.start_psn must fit 24 bits, got {self.start_psn}")
        if self.ev_min_active is not None and not 0 <= self.ev_min_active <= (
                self.ev_count or self.ev_min_active):
            raise ValueError(f"MRCConfig.ev_min_active must be in 0..ev_count, got {self.ev_min_active}")
        for name, hi in (("retry_linear_count", RETRY_LINEAR_MAX),
                         ("retry_exp_count", RETRY_EXP_MAX)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= hi:
                raise ValueError(f"MRCConfig.{name} must be an integer in 0..{hi} (OCP mrc.h), "
                                 f"got {value!r}")
        if self.ack_timeout is not None:
            if (isinstance(self.ack_timeout, bool) or not isinstance(self.ack_timeout, int)
                    or not 0 <= self.ack_timeout <= ACK_TIMEOUT_MAX):
                raise ValueError(f"MRCConfig.ack_timeout must be an integer in "
                                 f"0..{ACK_TIMEOUT_MAX} (1.024 us x 2^timeout, OCP mrc.h), "
                                 f"got {self.ack_timeout!r}")
            if self.rto_ns is not None:
                raise ValueError("MRCConfig: set ack_timeout or rto_ns, not both (both fix "
                                 "the base retransmission timeout)")
        if (isinstance(self.roce_ack_timeout, bool) or not isinstance(self.roce_ack_timeout, int)
                or not 0 <= self.roce_ack_timeout <= IB_ACK_TIMEOUT_MAX):
            raise ValueError(f"MRCConfig.roce_ack_timeout must be an integer in "
                             f"0..{IB_ACK_TIMEOUT_MAX} (NCCL_IB_TIMEOUT: 4.096 us x 2^n), "
                             f"got {self.roce_ack_timeout!r}")
        if self.roce_ack_timeout_ns is not None and (
                isinstance(self.roce_ack_timeout_ns, bool)
                or not isinstance(self.roce_ack_timeout_ns, int) or self.roce_ack_timeout_ns <= 0):
            raise ValueError(f"MRCConfig.roce_ack_timeout_ns must be a positive integer (ns) or "
                             f"None, got {self.roce_ack_timeout_ns!r}")
        if self.loss_policy not in LOSS_POLICIES:
            raise ValueError(f"MRCConfig.loss_policy must be one of {', '.join(LOSS_POLICIES)}, "
                             f"got {self.loss_policy!r}")
        if not 0 < self.nscc_max_md_jump <= 0.5:
            raise ValueError("MRCConfig.nscc_max_md_jump must be in (0, 0.5] (MD factor >= 0.5)")
        if isinstance(self.nscc_qa_gate, bool) or not 0 <= self.nscc_qa_gate <= 31:
            raise ValueError(f"MRCConfig.nscc_qa_gate must be an integer in 0..31 (a shift of "
                             f"max_cwnd), got {self.nscc_qa_gate!r}")
        if self.nscc_reference_rtt_ns is not None and (
                isinstance(self.nscc_reference_rtt_ns, bool)
                or not isinstance(self.nscc_reference_rtt_ns, int)
                or self.nscc_reference_rtt_ns <= 0):
            raise ValueError(f"MRCConfig.nscc_reference_rtt_ns must be a positive integer (ns) "
                             f"or None, got {self.nscc_reference_rtt_ns!r}")
        if not 0 < self.nscc_delay_alpha <= 1:
            raise ValueError(f"MRCConfig.nscc_delay_alpha must be in (0, 1], "
                             f"got {self.nscc_delay_alpha!r}")
        for name in ("nscc_adjust_bytes_threshold", "nscc_adjust_period_threshold", "nscc_eta",
                     "nscc_fi", "nscc_fi_scale", "nscc_max_cwnd", "nscc_qa_threshold",
                     "nscc_target_delay"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value >= 0):
                raise ValueError(f"MRCConfig.{name} must be >= 0 or None, got {value!r}")

    @property
    def frame_base_rtt_ns(self) -> int:
        """A full data frame's unloaded round trip: the probes' base RTT plus the frame's
        store-and-forward serialization (nscc_frame_rtt_ns). The timers of both QP halves count
        in it: a probe's RTT alone is mostly the switches' forwarding work, which a time scale
        does not stretch, so timers in probe RTTs would shrink in emulated time as k grows."""
        return self.base_rtt_ns + self.nscc_frame_rtt_ns

    def frame_rtts_ns(self, n: float) -> int:
        """n full data frames' base RTTs in ns (at least 1)."""
        return max(1, int(n * self.frame_base_rtt_ns))

    @property
    def mpr_window(self) -> int:
        return self.mpr * MPR_UNIT

    @property
    def retries_infinite(self) -> bool:
        return self.retry_exp_count == RETRY_EXP_INFINITE

    @property
    def retry_budget(self) -> int | None:
        """Retries of one PSN before the QP goes to error; None: retry forever."""
        return None if self.retries_infinite else self.retry_linear_count + self.retry_exp_count

    @property
    def roce_ack_interval_ns(self) -> int:
        """The RoCE QP's ACK timeout in ns: roce_ack_timeout_ns, else 4.096 us x
        2^roce_ack_timeout."""
        if self.roce_ack_timeout_ns is not None:
            return self.roce_ack_timeout_ns
        return roce_ack_timeout_ns(self.roce_ack_timeout)

    @property
    def ack_timeout_ns(self) -> int | None:
        """OCP's local ACK timeout in ns (None: derived from the RTT)."""
        if self.ack_timeout is None:
            return None
        return round(ACK_TIMEOUT_UNIT_NS * (1 << self.ack_timeout))


def roce_ack_timeout_ns(exponent: int) -> int:
    """InfiniBand's local ACK timeout for the exponent n (NCCL_IB_TIMEOUT): 4.096 us x 2^n."""
    return IB_ACK_TIMEOUT_UNIT_NS << exponent


def unwrap(psn: int, ref: int) -> int:
    """Absolute sequence number of a 24-bit PSN: the one nearest to the absolute `ref`."""
    diff = (psn - ref) & PSN_MASK
    if diff >= PSN_SPACE // 2:
        diff -= PSN_SPACE
    return ref + diff
