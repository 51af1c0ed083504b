"""A switch egress port's congestion policy: when the in-fabric program marks CE and when it trims.

Shared by the fabric (emulation/network/trimming.py loads it into the BPF program's per-port map;
emulation/network/vqueue.py models the program) and the endpoints (traffic/nic/endpoint_support.py bounds the
queueing an untrimmed packet can meet from the same thresholds).
"""
from __future__ import annotations

from dataclasses import dataclass

from model import timescale

U32_MAX = (1 << 32) - 1
MAX_RATE_BYTES_PER_S = 12_500_000_000  # 100 Gbit/s keeps rate * (ns < 1e9) inside 64 bits


class ConfigError(ValueError):
    """A port configuration the virtual queue cannot run with; the message names the field."""


@dataclass(frozen=True)
class PortConfig:
    """Per-port parameters of the virtual queue. Byte thresholds; rate in Mbit/s.

    drop_bytes=None disables the hard drop threshold (the real HTB queue still drops).
    """

    rate_mbit: float
    ecn_min_bytes: int
    ecn_max_bytes: int
    trim_bytes: int
    last_hop: bool
    mark: bool = True
    trim: bool = True
    drop_bytes: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.rate_mbit, bool) or not isinstance(self.rate_mbit, (int, float)):
            raise ConfigError(f"rate_mbit must be a number, got {self.rate_mbit!r}")
        if not 0 < self.rate_bytes_per_s <= MAX_RATE_BYTES_PER_S:
            raise ConfigError(f"rate_mbit must be > 0 and <= 100000, got {self.rate_mbit}")
        for name in ("ecn_min_bytes", "ecn_max_bytes", "trim_bytes", "drop_bytes"):
            value = getattr(self, name)
            if name == "drop_bytes" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < U32_MAX:
                raise ConfigError(f"{name} must be an integer 0..{U32_MAX - 1}, got {value!r}")
        if self.ecn_min_bytes > self.ecn_max_bytes:
            raise ConfigError(f"ecn_min_bytes ({self.ecn_min_bytes}) must not exceed "
                              f"ecn_max_bytes ({self.ecn_max_bytes})")
        for name in ("last_hop", "mark", "trim"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def rate_bytes_per_s(self) -> int:
        return int(self.rate_mbit * 1_000_000) // 8

    @property
    def drop_threshold(self) -> int:
        return U32_MAX if self.drop_bytes is None else self.drop_bytes


# Floors of the default thresholds in whole MTU-sized frames: ECN starts marking only once two
# full frames wait, ramps over at least two more, and trimming starts at ten. A queue of one or
# two frames is normal burstiness of a busy port, not congestion; at a 9000-byte MTU byte floors
# sized for 1500-byte frames would mark a single jumbo frame and trim the second.
ECN_MIN_FLOOR_FRAMES = 2
ECN_RAMP_FLOOR_FRAMES = 2
TRIM_FLOOR_FRAMES = 10
DEFAULT_FRAME_MTU = 1500
# UEC's reference simulator marks ECN from 0.2 to 0.8 of the BDP (htsim/sim/datacenter/
# main_uec.cpp, ecn_low / ecn_high = bdp_pkt x 0.2 / 0.8) and trims at a full queue, which holds
# at least ecn_high; here a full queue is one BDP.
BDP_ECN_MIN = 0.2
BDP_ECN_MAX = 0.8
BDP_TRIM = 1.0


def default_port_config(rate_mbit: float, last_hop: bool, mark: bool = True,
                        trim: bool = True, mtu: int = DEFAULT_FRAME_MTU,
                        time_scale: float = 1.0, bdp_bytes: int = 0) -> PortConfig:
    """Thresholds as drain times of the port (0.5 ms / 2 ms ECN, 4 ms trim), never below the
    frame floors above (in units of the fabric's MTU), and never below UEC's reference
    thresholds in the port's bandwidth-delay product `bdp_bytes` (BDP_ECN_MIN, BDP_ECN_MAX,
    BDP_TRIM; model/propagation.py port_bdp_bytes).

    The drain times are a project choice for the ~1 ms RTT of a fabric without propagation
    delay; the BDP fractions take over once the fabric has propagation delay. Without them a
    long round trip leaves NSCC's target delay (a fraction of that round trip) beyond the trim
    threshold: the queue never reaches the target, so the multiplicative decrease that shares
    a link fairly never runs, and ECN marks below the target only freeze windows. Scenarios
    may pass their own. The drain times are the emulated world's: under a time scale
    (model/timescale.py) rate_mbit is the port's wall rate, the thresholds are drain times of
    its declared rate (the same bytes take time_scale times longer to drain on the wall clock).
    `bdp_bytes` is the same in both worlds (rates / k, times x k).
    """
    if isinstance(mtu, bool) or not isinstance(mtu, int) or mtu <= 0:
        raise ConfigError(f"mtu must be a positive integer number of bytes, got {mtu!r}")
    if isinstance(bdp_bytes, bool) or not isinstance(bdp_bytes, int) or bdp_bytes < 0:
        raise ConfigError(f"bdp_bytes must be a non-negative integer, got {bdp_bytes!r}")
    per_ms = int(timescale.emulated_rate(rate_mbit, time_scale) * 1000) // 8
    ecn_min = max(ECN_MIN_FLOOR_FRAMES * mtu, per_ms // 2, int(bdp_bytes * BDP_ECN_MIN))
    ecn_max = max(ecn_min + ECN_RAMP_FLOOR_FRAMES * mtu, 2 * per_ms, int(bdp_bytes * BDP_ECN_MAX))
    trim_bytes = max(ecn_max, 4 * per_ms, TRIM_FLOOR_FRAMES * mtu, int(bdp_bytes * BDP_TRIM))
    return PortConfig(rate_mbit, ecn_min, ecn_max, trim_bytes, last_hop, mark, trim)
