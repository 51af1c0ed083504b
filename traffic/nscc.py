"""NSCC congestion window and a per-plane pacer (pure: time is passed in).

NSCC is the Ultra Ethernet sender-side congestion control (UET 1.0, "Network Signal-based
Congestion Control"; reference model: ultraethernet/uet-htsim, UecSrc). Per ACK it looks at two
signals, ECN (the SACK's echo) and queueing delay = rtt - base_rtt compared with a target, and
picks one of four responses:

  no ECN, delay >= target : FAIR_INCREASE         cwnd += fi * mss * acked / cwnd
  no ECN, delay <  target : PROPORTIONAL_INCREASE cwnd += alpha * acked * (target - delay) / target
  ECN,    delay >= target : MULTIPLICATIVE_DECREASE, at most once per base RTT:
                            cwnd *= max(1 - gamma * (delay - target) / delay, 1 - max_md)
  ECN,    delay <  target : NO_CHANGE (the sender moves off that path: EV skip)

plus QUICK_ADAPT on loss/NACK (or delay above qa_threshold = 4 x target): at most once per base
RTT, cwnd falls to what was actually acknowledged during the last base RTT.

Constants (uet-htsim defaults): gamma = 0.8, MD bounded to factor 0.5, qa threshold = 4 x target,
fair-increase constant fi = 1 (htsim scales it by 0.25 at 400G; here fi is in MSS per RTT),
max window 1.5 x BDP, target = base RTT (0.75 x base RTT when the fabric trims). htsim's
proportional gain alpha is tied to 6 us / 4 KB MTU; here the emulated RTT is ~1 ms, so alpha is
expressed dimensionless (1.0: at zero queueing the window grows by the acked bytes, i.e. it can
double per RTT) and is configurable.
"""
from __future__ import annotations

from enum import Enum


class NsccResponse(str, Enum):
    FAIR_INCREASE = "fair_increase"
    PROPORTIONAL_INCREASE = "proportional_increase"
    MULTIPLICATIVE_DECREASE = "multiplicative_decrease"
    NO_CHANGE = "no_change"
    QUICK_ADAPT = "quick_adapt"


class Nscc:
    """Congestion window in bytes for one QP (all planes together)."""

    def __init__(self, *, base_rtt_ns: int, link_rate_Bps: float, mss: int,
                 gamma: float = 0.8, max_md: float = 0.5, fair_increase_mss: float = 1.0,
                 prop_gain: float = 1.0, max_window_bdp: float = 1.5,
                 initial_window_bdp: float = 1.0, target_frac: float = 1.0,
                 qa_threshold_targets: float = 4.0, min_window: int | None = None):
        if not 0 < max_md <= 0.5:
            raise ValueError(f"max_md must be in (0, 0.5] (decrease factor >= 0.5), got {max_md}")
        if base_rtt_ns <= 0 or link_rate_Bps <= 0 or mss <= 0:
            raise ValueError("base_rtt_ns, link_rate_Bps and mss must be positive")
        self.link_rate_Bps = float(link_rate_Bps)
        self.mss = mss
        self.gamma = gamma
        self.max_md = max_md
        self.fair_increase_mss = fair_increase_mss
        self.prop_gain = prop_gain
        self.max_window_bdp = max_window_bdp
        self.target_frac = target_frac
        self.qa_threshold_targets = qa_threshold_targets
        self.min_window = min_window if min_window is not None else mss
        self.base_rtt_ns = int(base_rtt_ns)
        self.cwnd = max(self.min_window, min(self.max_window, initial_window_bdp * self.bdp))
        self.last_md_ns: int | None = None
        self.qa_window_start: int | None = None
        self.acked_in_window = 0
        self.acked_prev_window = 0
        self._qa_until: int | None = None
        self.last_response: NsccResponse | None = None
        # How often each response was applied, and what triggered each quick adapt: the
        # counters event shows whether the window was cut by losses or by delay alone.
        self.counts = dict.fromkeys([r.value for r in NsccResponse]
                                    + ["quick_adapt_on_delay", "quick_adapt_on_loss"], 0)

    # ---------------------------------------------------------------- derived

    @property
    def bdp(self) -> float:
        return self.link_rate_Bps * self.base_rtt_ns / 1e9

    @property
    def max_window(self) -> float:
        return max(self.min_window, self.max_window_bdp * self.bdp)

    @property
    def target_ns(self) -> float:
        return self.target_frac * self.base_rtt_ns

    def set_base_rtt(self, base_rtt_ns: int) -> None:
        self.base_rtt_ns = max(1, int(base_rtt_ns))
        self.cwnd = min(self.cwnd, self.max_window)

    # ---------------------------------------------------------------- signals

    def on_ack(self, acked_bytes: int, rtt_ns: int | None, ecn: bool, now_ns: int) -> NsccResponse:
        """One SACK: `acked_bytes` newly acknowledged, its RTT sample (None if none), ECN echo."""
        self._account(acked_bytes, now_ns)
        delay = max(0, (rtt_ns - self.base_rtt_ns)) if rtt_ns is not None else 0
        target = self.target_ns
        if rtt_ns is not None and delay > self.qa_threshold_targets * target:
            if self._quick_adapt(now_ns):
                self.counts["quick_adapt_on_delay"] += 1
                return self._done(NsccResponse.QUICK_ADAPT)
        if not ecn:
            if delay >= target:
                self.cwnd += self.fair_increase_mss * self.mss * acked_bytes / self.cwnd
                resp = NsccResponse.FAIR_INCREASE
            else:
                self.cwnd += self.prop_gain * acked_bytes * (target - delay) / target
                resp = NsccResponse.PROPORTIONAL_INCREASE
        elif delay >= target:
            resp = NsccResponse.MULTIPLICATIVE_DECREASE
            if self.last_md_ns is None or now_ns - self.last_md_ns >= self.base_rtt_ns:
                factor = max(1.0 - self.gamma * (delay - target) / delay, 1.0 - self.max_md)
                self.cwnd *= factor
                self.last_md_ns = now_ns
        else:
            resp = NsccResponse.NO_CHANGE
        return self._done(resp)

    def on_loss(self, now_ns: int) -> bool:
        """Loss or NACK: quick adapt (at most once per base RTT). Returns True if applied."""
        applied = self._quick_adapt(now_ns)
        if applied:
            self.last_response = NsccResponse.QUICK_ADAPT
            self.counts[NsccResponse.QUICK_ADAPT.value] += 1
            self.counts["quick_adapt_on_loss"] += 1
        return applied

    # ---------------------------------------------------------------- internals

    def _account(self, acked_bytes: int, now_ns: int) -> None:
        if self.qa_window_start is None or now_ns - self.qa_window_start >= self.base_rtt_ns:
            self.qa_window_start = now_ns
            self.acked_prev_window = self.acked_in_window
            self.acked_in_window = 0
        self.acked_in_window += acked_bytes

    def _quick_adapt(self, now_ns: int) -> bool:
        if self.qa_window_start is None:
            self.qa_window_start = now_ns
            self.acked_in_window = 0
        if self._qa_until is not None and now_ns < self._qa_until:
            return False
        # What the path delivered in one base RTT: the last complete interval, or the current
        # one if it already did better (a partial interval alone would understate it).
        achieved = max(self.acked_prev_window, self.acked_in_window)
        self._qa_until = now_ns + self.base_rtt_ns
        if achieved < self.cwnd:
            self.cwnd = max(self.min_window, float(achieved))
        return True

    def _done(self, resp: NsccResponse) -> NsccResponse:
        self.cwnd = min(max(self.cwnd, self.min_window), self.max_window)
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
