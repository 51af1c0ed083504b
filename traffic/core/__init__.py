"""The sans-I/O MRC transport core and the RoCE RC baseline: pure state machines driven by
messages and now_ns (aioquic's shape), unit-tested with a fake clock and a simulated lossy
channel. The per-packet modules may run compiled (traffic/compiled.py).

    codec, messages          frames <-> message objects (wire layout: model/wire.py)
    sender, receiver         the two halves of an MRC QP; reliability re-exports them
    evs, loss_policy         EV set and path health; what a loss does to its path
    nscc, rtt                congestion control; base RTT, RTO and the timers from it
    reverse_paths            the receiver's EVs for SACKs and NACKs
    work_requests, memory    posted WRITEs, completions, registered memory
    qp_config                every knob of a QP; PSN arithmetic
    roce_rc                  single-path RoCE RC with go-back-N
    deadline_queue           the earliest timer over many QPs
    ev_events, path_prober, denylist   what the control plane sees and imposes
    clock                    a fake clock for tests and simulations
"""
from traffic import compiled as _compiled

__path__ = _compiled.search_path(__path__, __name__)
