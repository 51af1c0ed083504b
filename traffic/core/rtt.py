"""RTT estimation of a sending QP and the timers derived from it (pure: samples are passed in).

base RTT = the smallest RTT sample seen; until the first sample, MRCConfig.base_rtt_ns (what the
probes measured) plus nscc_frame_rtt_ns: the probes are small packets, while a data frame is
stored and forwarded whole on every link, so no full frame comes back sooner than that. The
first data packets' timers then start from a round trip they can make, not from a probe's;
SACK samples of data frames replace it;
srtt / rttvar as RFC 6298 (gains 1/8 and 1/4; the first rttvar is half the first sample's
variable part, below).

Propagation is counted once. A base RTT is the path's propagation both ways
(MRCConfig.propagation_rtt_ns, a constant of the fabric) plus a variable part (serialization,
switching, the host's jitter). The margins in base RTTs (rto_rtts, probe_timeout_rtts,
reverse_probe_rtts, reorder_rtts) are margins for what varies, so they multiply the variable
part only: a wait for an answer is propagation + n x the variable part (wait_ns), and the
reorder window, a difference between packets of one QP whose paths all have the same
propagation, is n x the variable part alone. With no propagation both are n base RTTs.

  * RTO(t), t = timeouts the PSN already had (OCP mrc.h retry scheme, MRCConfig): retries
    1..retry_linear_count are the linear phase, the next retry_exp_count the exponential one.
    Linear, t <= retry_linear_count: base_rto with retry_fixed_interval (OCP's fixed interval),
    else base_rto * (t + 1). Exponential, i = t - retry_linear_count >= 1: the last linear
    interval * 2^i. Capped at max(rto_max_ns, base_rto).
    base_rto = OCP's 1.024 us x 2^ack_timeout when ack_timeout is set (a fixed interval: nothing
    below changes it), else rto_ns if set, else
    max(rto_min_ns, wait_ns(rto_rtts), srtt + 4 rttvar): OCP's timeouts are sized for NIC RTTs
    of microseconds, the emulated fabric has RTTs around 1 ms.
  * The SACK-gap reorder window: max(reorder_rtts x the variable part, srtt + 4 rttvar - base
    RTT, the queueing peak), so per-path queueing differences under load, which the samples
    measure, are not taken for failures. A packet can arrive after one sent later by at most
    the queueing its path holds beyond the other's, so by at most the most queueing any path
    holds: the queueing peak is the largest sample - base RTT, taken at once when a sample
    exceeds it and forgotten at srtt's gain (1/8 per smaller sample). The mean and variance
    alone miss one congested path among several idle ones.
With a trimming fabric (fabric_delay_bound_ns set) the RTO is at least base RTT + the bound: a
data packet that is not trimmed waits at most the bound in the fabric's queues, and its SACK
rides the control class, served ahead of queued data, so one bound covers the round trip. The
reorder window does not hold the bound: a window as long as the bound (longer than a collective
step on a slow fabric) leaves nothing sent late enough to show a loss, so every loss would wait
for the RTO; the queueing that does differ between paths shows in the samples.
"""
from __future__ import annotations

from model.propagation import variable_rtt_ns
from traffic.core.qp_config import MRCConfig


def wait_ns(n: float, base_rtt_ns: int, propagation_rtt_ns: int) -> int:
    """A timer that waits for an answer, sized as n base RTTs: the propagation once plus n x
    the variable part (at least 1 ns). n = 1 gives the base RTT itself."""
    var = variable_rtt_ns(base_rtt_ns, propagation_rtt_ns)
    return max(1, int(base_rtt_ns - var + n * var))


class RttEstimator:
    """Base RTT, srtt and rttvar of one QP, and the RTO / reorder window they give."""

    # _rto_base / _reorder: the last values of rto_base_ns() / reorder_window_ns(), None once a
    # sample changed what they derive from. The sender arms a timer per packet sent and checks
    # the reorder window per SACK, while RTT samples come once per SACK at most.
    __slots__ = ("cfg", "base_rtt_ns", "measured", "srtt_ns", "rttvar_ns", "queue_peak_ns",
                 "_rto_base", "_reorder")

    def __init__(self, config: MRCConfig):
        self.cfg = config
        self.base_rtt_ns = config.frame_base_rtt_ns
        self.measured = False               # base_rtt_ns is still the configured guess
        self.srtt_ns: float | None = None
        self.rttvar_ns = 0.0
        self.queue_peak_ns = 0.0            # the largest queueing the samples show (below)
        self._rto_base: int | None = None
        self._reorder: int | None = None

    def rtts(self, n: float) -> int:
        """n base RTTs in ns (at least 1)."""
        return max(1, int(n * self.base_rtt_ns))

    @property
    def variable_ns(self) -> int:
        """The part of the base RTT that is not propagation (variable_rtt_ns)."""
        return variable_rtt_ns(self.base_rtt_ns, self.cfg.propagation_rtt_ns)

    def wait_ns(self, n: float) -> int:
        """A wait for an answer, sized as n base RTTs (wait_ns: propagation once)."""
        return wait_ns(n, self.base_rtt_ns, self.cfg.propagation_rtt_ns)

    def queued(self, rtt_ns: int) -> bool:
        """The sample shows queueing delay of at least congestion_delay_rtts base RTTs (only
        once a base RTT was measured: the configured guess may be far off)."""
        return (self.measured
                and rtt_ns - self.base_rtt_ns >= self.cfg.congestion_delay_rtts * self.base_rtt_ns)

    def update(self, rtt_ns: int) -> bool:
        """Account one RTT sample (> 0); returns True if it set a new base RTT."""
        self._rto_base = self._reorder = None
        new_base = not self.measured or rtt_ns < self.base_rtt_ns
        if new_base:
            self.measured = True
            self.base_rtt_ns = rtt_ns
        if self.srtt_ns is None:
            # RFC 6298's first rttvar, R / 2, of the part of R that can vary
            var = variable_rtt_ns(rtt_ns, self.cfg.propagation_rtt_ns)
            self.srtt_ns, self.rttvar_ns = float(rtt_ns), var / 2.0
        else:
            self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * abs(self.srtt_ns - rtt_ns)
            self.srtt_ns = 0.875 * self.srtt_ns + 0.125 * rtt_ns
        queueing = rtt_ns - self.base_rtt_ns
        peak = self.queue_peak_ns
        self.queue_peak_ns = queueing if queueing >= peak else peak + 0.125 * (queueing - peak)
        return new_base

    def rto_base_ns(self) -> int:
        rto = self._rto_base
        if rto is None:
            rto = self._rto_base = self._rto_base_now()
        return rto

    def _rto_base_now(self) -> int:
        cfg = self.cfg
        if cfg.ack_timeout is not None:
            return cfg.ack_timeout_ns
        if cfg.rto_ns is not None:
            return cfg.rto_ns
        rto = max(cfg.rto_min_ns, self.wait_ns(cfg.rto_rtts))
        if self.srtt_ns is not None:
            rto = max(rto, self.srtt_ns + 4 * self.rttvar_ns)
        if cfg.fabric_delay_bound_ns:
            rto = max(rto, self.base_rtt_ns + cfg.fabric_delay_bound_ns)
        return int(rto)

    def rto_ns(self, timeouts: int) -> int:
        """The ACK timeout of a transmission whose PSN already timed out `timeouts` times."""
        base = self.rto_base_ns()
        cfg = self.cfg
        lin = cfg.retry_linear_count
        last_linear = base if cfg.retry_fixed_interval else base * (min(timeouts, lin) + 1)
        rto = last_linear if timeouts <= lin else last_linear * 2 ** (timeouts - lin)
        return int(min(rto, max(cfg.rto_max_ns, base)))

    def path_reorder_ns(self) -> int:
        """How much later a packet sent on the SAME path must have arrived to show a loss
        (traffic/core/path_order.py): reorder_rtts x the variable part, for the host's jitter.
        None of the queueing spread between paths the reorder window holds: one path is FIFO."""
        return max(1, int(self.cfg.reorder_rtts * self.variable_ns))

    def reorder_window_ns(self) -> int:
        window = self._reorder
        if window is None:
            window = self._reorder = self._reorder_window_now()
        return window

    def _reorder_window_now(self) -> int:
        cfg = self.cfg
        window = int(cfg.reorder_rtts * self.variable_ns)
        if cfg.adaptive_reorder and self.srtt_ns is not None:
            window = max(window, int(self.srtt_ns + 4 * self.rttvar_ns - self.base_rtt_ns),
                         int(self.queue_peak_ns))
        return max(window, cfg.fabric_reorder_bound_ns)
