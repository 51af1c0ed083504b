"""Transport defaults that more than one package reads, stated once: the endpoint's and the
QP's config objects (traffic/nic/endpoint_support.py EndpointConfig, traffic/core/qp_config.py
MRCConfig) take their defaults from here, and the analysis that judges a run by them
(analysis/fidelity.py, analysis/retirements.py) reads the same values without importing the
transport.
"""
from __future__ import annotations

# The base RTT the fidelity monitor (analysis/fidelity.py) judges timer lateness against when
# no QP logged one (a kernel TCP run). The QPs themselves have no such floor: their timers start
# from the RTT the probes measure plus a full frame's serialization (traffic/core/rtt.py).
MIN_BASE_RTT_NS = 2_000_000
# The largest retransmission timeout of a QP (MRCConfig.rto_max_ns): no ACK timeout exceeds it.
RTO_MAX_NS = 1_000_000_000
