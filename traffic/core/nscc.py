"""NSCC congestion window and a per-plane pacer (pure: time is passed in).

NSCC is the Ultra Ethernet sender-side congestion control (UET 1.0, "Network Signal-based
Congestion Control"). The rules below follow UEC's reference model, ultraethernet/uet-htsim
htsim/sim/uec.cpp (UecSrc: updateCwndOnAck_NSCC, quick_adapt, fair_increase,
proportional_increase, fast_increase, multiplicative_decrease, fulfill_adjustment,
updateCwndOnNack_NSCC, mark_packet_for_retransmission, update_delay, update_base_rtt,
initNsccParams, initNscc); the knobs carry the names of OCP's mrc_ctl.h struct
mrc_ctl_cc_nscc_cfg.

Per ACK, with delay = rtt - base_rtt (the averaged delay when the ACK has no RTT sample):
  quick adapt first (below); if it ran, nothing else.
  no ECN, delay >= target : fair increase          inc += fi * acked
  no ECN, delay <  target : fast increase when delay < fast_delay for a whole window of
                            acked bytes: cwnd += fi_scale * acked at once; else
                            proportional increase   inc += alpha * acked * (target - delay)
  ECN,    delay >= target : multiplicative decrease on the AVERAGED delay d, at most once per
                            base RTT and only if d > target:
                            cwnd *= max(1 - gamma * (d - target) / d, 1 - max_md_jump)
  ECN,    delay <  target : no change (the sender moves off that EV: skip)
Increases are batched: cwnd += inc / cwnd once more than adjust_bytes_threshold bytes were
acked or adjust_period_threshold passed since the last eta; eta bytes are added at most once per
adjust_period_threshold. The proportional increase is additive: at delay d a window of ACKs
adds alpha * (target - d) = 4 MSS a b (1 - d / target) bytes, whatever the window.

Losses (only a trim tells congestion from failure, so only a trim is a congestion signal):
  trimmed NACK (on_trim_nack): the NACK path. It counts as one network RTT of delay in the
      average, arms quick adapt and, unless quick adapt runs (or ignores it), its bytes come
      off cwnd.
  timeout (on_timeout): one packet, the timed-out one, comes off cwnd.
  any other loss (a SACK gap, a NACK that is not a trim): no change to the window. htsim's
      sink NACKs trims only, and its SACK-gap recovery (SLEEK) is off by default.

Quick adapt (QA) measures the bytes acked over windows of base_rtt + target. At the first ACK
or trimmed NACK after a window ends, it cuts cwnd to the bytes that window achieved, but only
if a trimmed NACK was seen or the delay exceeds qa_threshold, AND the window achieved less
than max_cwnd >> qa_gate: a flow that still delivers more than an eighth of its ceiling keeps
its window and the trim only takes the trimmed bytes off it. After a QA, ECN-marked ACKs and
trims of the bytes then in flight change nothing (they describe the window just cut).

The averaged delay is htsim's EWMA (delay_alpha 0.0125): an unmarked sample above the target
counts as base_rtt / 4 (delay without ECN is not this flow's queue); a trimmed NACK counts as
one network RTT.

Constants of a connection (htsim initNsccParams, kept for the connection's life): the network
RTT is the base RTT the connection starts with (htsim: the fabric's unloaded RTT); from it
target = network RTT (0.75 x with trimming), qa_threshold = 4 x target, adjust_period_threshold
= network RTT, adjust_bytes_threshold = 8 MSS, a = network BDP / (100 Gbit/s x reference RTT),
b = target / reference RTT, alpha = 4 MSS a b / target, fi = 5 MSS a, eta = 0.15 MSS a,
fi_scale = 0.25 a, fast_delay = reference RTT / 12 (htsim: 1 us at its 12 us), qa_gate = 3,
gamma = 0.8, max_md_jump = 0.5, delay_alpha = 0.0125. What follows the measured base RTT (htsim
update_base_rtt): the BDP and max_cwnd = 1.5 BDP. The initial window is max_cwnd (htsim
initNscc: cwnd = _maxwnd).

The reference RTT is htsim's reference network's, 12 us (reference_rtt_ns = 12000 gives htsim's
numbers literally). Left unset it is the connection's own network RTT: the emulated fabric is
read as a time-scaled copy of htsim's reference network. Its RTTs are milliseconds (slow links,
9000-byte frames), so 12 us would make b hundreds: alpha would ask for tens of BDPs per RTT and
the 1 us fast-increase threshold would never be met. Scaled, b = target / network RTT (0.75
with trimming), as in htsim's own network, so at zero delay a window of ACKs adds 3 MSS x a
bytes, the reference's ramp (docs/fidelity-to-ocp.md).
"""
from __future__ import annotations

from enum import Enum

# htsim's reference network for scaling factors a and b: 100 Gbit/s x 12 us (initNsccParams).
REFERENCE_RATE_BPS = 100e9 / 8
HTSIM_REFERENCE_RTT_NS = 12_000
PROP_MSS = 4.0               # alpha = 4 MSS x a x b / target
FI_MSS = 5.0                 # fi = 5 MSS x a
ETA_MSS = 0.15               # eta = 0.15 MSS x a
FI_SCALE = 0.25              # fi_scale = 0.25 x a
QA_GATE = 3                  # main_uec.cpp: qa_gate -1 -> 3
DELAY_ALPHA = 0.0125
ADJUST_BYTES_MSS = 8         # adjust_bytes_threshold = 8 MTU
FAST_DELAY_PER_REFERENCE_RTT = 1 / 12  # htsim: delay < 1 us, its reference RTT 12 us


class NsccResponse(str, Enum):
    FAIR_INCREASE = "fair_increase"
    PROPORTIONAL_INCREASE = "proportional_increase"
    FAST_INCREASE = "fast_increase"
    MULTIPLICATIVE_DECREASE = "multiplicative_decrease"
    NO_CHANGE = "no_change"
    QUICK_ADAPT = "quick_adapt"
    IGNORED = "ignored_after_quick_adapt"


class Nscc:
    """Congestion window in bytes for one QP (all planes together).

    Knobs left None are derived as htsim does (module docstring); byte and ns knobs are
    mrc_ctl_cc_nscc_cfg's units. prop_gain multiplies htsim's alpha (1.0: the reference).
    """

    def __init__(self, *, base_rtt_ns: int, link_rate_Bps: float, mss: int,
                 gamma: float = 0.8, max_md_jump: float = 0.5, fi: float | None = None,
                 fi_scale: float | None = None, eta: float | None = None,
                 prop_gain: float = 1.0, max_window_bdp: float = 1.5,
                 max_cwnd: int | None = None, initial_window_bdp: float | None = None,
                 target_frac: float = 1.0, target_delay_ns: int | None = None,
                 qa_threshold_ns: int | None = None, qa_gate: int = QA_GATE,
                 disable_qa: bool = False, adjust_bytes_threshold: int | None = None,
                 adjust_period_ns: int | None = None, delay_alpha: float = DELAY_ALPHA,
                 min_window: int | None = None, reference_rtt_ns: int | None = None):
        if not 0 < max_md_jump <= 0.5:
            raise ValueError(f"max_md_jump must be in (0, 0.5] (decrease factor >= 0.5), "
                             f"got {max_md_jump}")
        if base_rtt_ns <= 0 or link_rate_Bps <= 0 or mss <= 0:
            raise ValueError("base_rtt_ns, link_rate_Bps and mss must be positive")
        if not 0 <= qa_gate <= 31:
            raise ValueError(f"qa_gate must be in 0..31 (a shift of max_cwnd), got {qa_gate}")
        if reference_rtt_ns is not None and not reference_rtt_ns > 0:
            raise ValueError(f"reference_rtt_ns must be positive or None, got {reference_rtt_ns}")
        self.link_rate_Bps = float(link_rate_Bps)
        self.mss = mss
        self.gamma = gamma
        self.max_md_jump = max_md_jump
        self.max_window_bdp = max_window_bdp
        self.qa_gate = qa_gate
        self.disable_qa = disable_qa
        self.delay_alpha = delay_alpha
        self.min_window = min_window if min_window is not None else mss
        self._max_cwnd = max_cwnd
        self._fix_constants(int(base_rtt_ns), prop_gain, fi, fi_scale, eta, target_frac,
                            target_delay_ns, qa_threshold_ns, adjust_bytes_threshold,
                            adjust_period_ns, reference_rtt_ns)
        self.base_rtt_ns = self.network_rtt_ns
        self._follow_base_rtt()
        self.cwnd = max(self.min_window, self.max_window if initial_window_bdp is None
                        else min(self.max_window, initial_window_bdp * self.bdp))
        self.avg_delay_ns = 0.0
        self.inc_bytes = 0.0          # batched increase, in bytes x bytes (applied / cwnd)
        self.received_bytes = 0       # acked since the last adjustment
        self.last_adjust_ns: int | None = None
        self.last_md_ns: int | None = None
        self.fi_count = 0             # bytes acked at near-zero delay in a row (fast increase)
        self.fast = False
        self.achieved_bytes = 0       # acked in the current quick-adapt window
        self.qa_end_ns: int | None = None
        self.trigger_qa = False
        self.bytes_to_ignore = 0
        self.bytes_ignored = 0
        self.last_response: NsccResponse | None = None
        # How often each response was applied, and what triggered each quick adapt: the
        # counters event shows whether the window was cut by trims or by delay alone.
        self.counts = dict.fromkeys([r.value for r in NsccResponse]
                                    + ["quick_adapt_on_delay", "quick_adapt_on_loss",
                                       "loss_bytes_off_cwnd"], 0)

    # ---------------------------------------------------------------- derived

    def _fix_constants(self, network_rtt_ns, prop_gain, fi, fi_scale, eta, target_frac,
                       target_delay_ns, qa_threshold_ns, adjust_bytes, adjust_period_ns,
                       reference_rtt_ns) -> None:
        """htsim initNsccParams: the constants of the connection, from its network RTT and
        BDP; a base RTT measured later does not change them."""
        self.network_rtt_ns = network_rtt_ns
        self.reference_rtt_ns = (reference_rtt_ns if reference_rtt_ns is not None
                                 else network_rtt_ns)
        a = (self.link_rate_Bps * network_rtt_ns
             / (REFERENCE_RATE_BPS * HTSIM_REFERENCE_RTT_NS))
        self.fi = fi if fi is not None else FI_MSS * self.mss * a
        self.fi_scale = fi_scale if fi_scale is not None else FI_SCALE * a
        self.eta = eta if eta is not None else ETA_MSS * self.mss * a
        self.target_ns = (target_delay_ns if target_delay_ns is not None
                          else target_frac * network_rtt_ns)
        b = self.target_ns / self.reference_rtt_ns
        # target 0: delay is never below it, so the proportional increase never applies
        self.alpha = (prop_gain * PROP_MSS * self.mss * a * b / self.target_ns
                      if self.target_ns > 0 else 0.0)
        self.qa_threshold_ns = (qa_threshold_ns if qa_threshold_ns is not None
                                else 4 * self.target_ns)
        self.adjust_bytes_threshold = (adjust_bytes if adjust_bytes is not None
                                       else ADJUST_BYTES_MSS * self.mss)
        self.adjust_period_ns = (adjust_period_ns if adjust_period_ns is not None
                                 else network_rtt_ns)
        self.fast_delay_ns = FAST_DELAY_PER_REFERENCE_RTT * self.reference_rtt_ns

    def _follow_base_rtt(self) -> None:
        """htsim update_base_rtt: the BDP and max_cwnd follow the measured base RTT."""
        self.bdp = self.link_rate_Bps * self.base_rtt_ns / 1e9
        self.max_window = max(self.min_window, self._max_cwnd if self._max_cwnd is not None
                              else self.max_window_bdp * self.bdp)
        self.qa_gate_bytes = int(self.max_window) >> self.qa_gate

    def set_base_rtt(self, base_rtt_ns: int) -> None:
        self.base_rtt_ns = max(1, int(base_rtt_ns))
        self._follow_base_rtt()
        self.cwnd = min(self.cwnd, self.max_window)

    # ---------------------------------------------------------------- signals

    def on_ack(self, acked_bytes: int, rtt_ns: int | None, ecn: bool, now_ns: int,
               inflight_bytes: int = 0) -> NsccResponse:
        """One SACK: `acked_bytes` newly acknowledged, its RTT sample (None if none), ECN echo,
        and the bytes in flight after it (what a quick adapt now leaves to ignore)."""
        self.achieved_bytes += acked_bytes
        self.received_bytes += acked_bytes
        self.bytes_ignored += acked_bytes
        if self.last_adjust_ns is None:
            self.last_adjust_ns = now_ns
        if rtt_ns is not None and rtt_ns >= self.base_rtt_ns:
            delay = rtt_ns - self.base_rtt_ns
            self._average(delay, ecn)
        else:
            delay = self.avg_delay_ns
        resp = self._quick_adapt(False, ecn, delay, now_ns, inflight_bytes)
        if resp is not None:
            return self._done(resp)
        target = self.target_ns
        if not ecn:
            if delay >= target:
                self.inc_bytes += self.fi * acked_bytes
                resp = NsccResponse.FAIR_INCREASE
            elif self._fast_increase(acked_bytes, delay):
                resp = NsccResponse.FAST_INCREASE
            else:
                self.inc_bytes += self.alpha * acked_bytes * (target - delay)
                resp = NsccResponse.PROPORTIONAL_INCREASE
        elif delay >= target:
            self._multiplicative_decrease(now_ns)
            resp = NsccResponse.MULTIPLICATIVE_DECREASE
        else:
            resp = NsccResponse.NO_CHANGE
        self._bound()
        if (self.received_bytes > self.adjust_bytes_threshold
                or now_ns - self.last_adjust_ns > self.adjust_period_ns):
            self._fulfill(now_ns)
        return self._done(resp)

    def on_trim_nack(self, now_ns: int, nacked_bytes: int, inflight_bytes: int = 0) -> bool:
        """A trimmed NACK of `nacked_bytes` (htsim updateCwndOnNack_NSCC): one network RTT of
        delay in the average, quick adapt armed; unless quick adapt runs (or ignores it), the
        NACKed bytes come off cwnd. Returns True if quick adapt ran."""
        self.bytes_ignored += nacked_bytes
        self._average(self.network_rtt_ns, True)
        self.trigger_qa = True
        resp = self._quick_adapt(True, True, 0.0, now_ns, inflight_bytes)
        if resp is NsccResponse.QUICK_ADAPT:
            self.last_response = resp
            self.counts[resp.value] += 1
            return True
        if resp is None:
            self._take_off(nacked_bytes)
        else:
            self.last_response = resp
            self.counts[resp.value] += 1
        return False

    def on_timeout(self, packet_bytes: int) -> None:
        """A retransmission timeout (htsim mark_packet_for_retransmission): the timed-out
        packet's bytes come off cwnd; nothing else changes."""
        self._take_off(packet_bytes)

    # ---------------------------------------------------------------- internals

    def _take_off(self, nbytes: int) -> None:
        self.cwnd -= nbytes
        self.counts["loss_bytes_off_cwnd"] += nbytes
        self._bound()

    def _average(self, delay: float, ecn: bool) -> None:
        """htsim update_delay: EWMA of the queueing delay (see the module docstring)."""
        if not ecn and delay > self.target_ns:
            delay = self.base_rtt_ns * 0.25
        self.avg_delay_ns += self.delay_alpha * (delay - self.avg_delay_ns)

    def _quick_adapt(self, is_loss: bool, ecn: bool, delay: float, now_ns: int,
                     inflight_bytes: int) -> NsccResponse | None:
        """QUICK_ADAPT if it cut the window, IGNORED if the signal falls in the bytes a
        quick adapt already answered, None otherwise (the caller's rule applies)."""
        if self.disable_qa:
            return None
        resp = None
        if self.bytes_ignored < self.bytes_to_ignore and ecn:
            resp = NsccResponse.IGNORED
        elif self.qa_end_ns is None or now_ns > self.qa_end_ns:
            if (self.qa_end_ns is not None
                    and (self.trigger_qa or is_loss or delay > self.qa_threshold_ns)
                    and self.achieved_bytes < self.qa_gate_bytes):
                self.counts["quick_adapt_on_loss" if self.trigger_qa or is_loss
                            else "quick_adapt_on_delay"] += 1
                self.cwnd = max(float(self.achieved_bytes), float(self.min_window))
                self.bytes_to_ignore = inflight_bytes
                self.bytes_ignored = 0
                self.trigger_qa = False
                resp = NsccResponse.QUICK_ADAPT
            self.achieved_bytes = 0
            self.qa_end_ns = now_ns + self.base_rtt_ns + int(self.target_ns)
        if resp is not None:
            self.inc_bytes = 0.0
            self.received_bytes = 0
        return resp

    def _fast_increase(self, acked_bytes: int, delay: float) -> bool:
        if delay < self.fast_delay_ns:
            self.fi_count += acked_bytes
            if self.fi_count > self.cwnd or self.fast:
                self.cwnd += acked_bytes * self.fi_scale
                self.fast = True
                return True
        else:
            self.fi_count = 0
        self.fast = False
        return False

    def _multiplicative_decrease(self, now_ns: int) -> None:
        self.fast = False
        self.fi_count = 0
        avg = self.avg_delay_ns
        target = self.target_ns
        if avg > target and (self.last_md_ns is None
                             or now_ns - self.last_md_ns >= self.base_rtt_ns):
            self.cwnd *= max(1.0 - self.gamma * (avg - target) / avg, 1.0 - self.max_md_jump)
            self.last_md_ns = now_ns

    def _fulfill(self, now_ns: int) -> None:
        self.cwnd += self.inc_bytes / self.cwnd
        if now_ns - self.last_adjust_ns >= self.adjust_period_ns:
            self.cwnd += self.eta
            self.last_adjust_ns = now_ns
        self.inc_bytes = 0.0
        self.received_bytes = 0
        self._bound()

    def _bound(self) -> None:
        self.cwnd = min(max(self.cwnd, float(self.min_window)), self.max_window)

    def _done(self, resp: NsccResponse) -> NsccResponse:
        self._bound()
        self.last_response = resp
        self.counts[resp.value] += 1
        return resp


class PlanePacer:
    """Token bucket per plane so an endpoint never sends faster than its NIC port rate.

    Userspace OVS drops bursts it cannot absorb, so pacing is not optional here.
    Tokens are bytes; each plane refills at `rate_Bps` up to `burst_bytes`.
    """

    def __init__(self, planes, rate_Bps: float, burst_bytes: int):
        if rate_Bps <= 0 or burst_bytes <= 0:
            raise ValueError("pacer rate_Bps and burst_bytes must be positive")
        self.rate_Bps = float(rate_Bps)
        self.burst = float(burst_bytes)
        self.tokens = {p: float(burst_bytes) for p in planes}
        self.stamp: dict[int, int | None] = {p: None for p in planes}

    def _refill(self, plane: int, now_ns: int) -> None:
        last = self.stamp[plane]
        if last is not None and now_ns > last:
            self.tokens[plane] = min(self.burst,
                                     self.tokens[plane] + (now_ns - last) * self.rate_Bps / 1e9)
        self.stamp[plane] = now_ns if last is None or now_ns > last else last

    def can_send(self, plane: int, now_ns: int) -> bool:
        """True if the plane has tokens (a packet may overdraw them: the deficit is paid later)."""
        self._refill(plane, now_ns)
        return self.tokens[plane] > 0

    def consume(self, plane: int, nbytes: int, now_ns: int) -> None:
        self._refill(plane, now_ns)
        self.tokens[plane] -= nbytes

    def next_send_ns(self, plane: int, now_ns: int) -> int:
        """Earliest time the plane has tokens again."""
        self._refill(plane, now_ns)
        if self.tokens[plane] > 0:
            return now_ns
        return now_ns + int((-self.tokens[plane]) * 1e9 / self.rate_Bps) + 1
