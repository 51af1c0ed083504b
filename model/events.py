"""The names in the project's JSONL logs, shared by the code that writes a log and the code that
reads it, so a renamed or misspelt name fails at import instead of silently matching nothing.

Endpoint and worker logs (traffic/endpoint_support.EventLog): one object per line,
{"t_ns", "host", "event": <an Event name>, ...}; a PHASE event carries "phase": <a Phase name>.
The controller's fault log (controller/fault_log.py): {"t_ns", "action": <a fault action of
model/faults.py or a ControllerLog name>, ...}.

tests/house/test_event_names.py fails when an event name is written as a string literal where a
log is written or read anywhere else.
"""
from __future__ import annotations

# The transports a run compares: a run directory's sub-directory and the worker config's
# "transport" (traffic/workload/worker_config.py), read back by the analysis.
TRANSPORTS = ("mrc", "roce", "tcp")


class Event:
    """The "event" of an endpoint or worker log line."""

    # EV set of a QP (traffic/core/evs.py, traffic/core/reverse_paths.py)
    EV_STATE = "ev_state"          # an EV changed state (old, new, reason)
    EV_SKIP = "ev_skip"            # an EV is passed over until until_ns (ECN, NACK)
    EV_SUSPECT = "ev_suspect"      # a loss the loss policy has not judged yet
    EV_CLEARED = "ev_cleared"      # a suspect EV's loss was explained (evidence)
    PROBE = "probe"                # an EV probe answered or timed out
    # sender, receiver and the RoCE baseline
    PORT = "port"                  # a NIC port went up or down
    RETRANSMIT = "retransmit"      # a packet sent again (reason)
    COMPLETION = "completion"      # a work request completed
    QP_ERROR = "qp_error"          # a QP gave up (retries exhausted)
    # the endpoint process (traffic/nic/endpoint.py)
    QP = "qp"                      # a QP was created (peer, peer_qp)
    DENYLIST = "denylist"          # the controller pushed a path denylist
    TX_ERROR = "tx_error"
    RX_ERROR = "rx_error"
    BASE_RTT = "base_rtt"          # the probed base RTT of a peer
    # how late the loop ran behind schedule so far (cumulative lateness histograms: "timer",
    # the QPs' deadlines; "rx", frames waiting in the receive ring); analysis/fidelity.py
    LATENESS = "lateness"
    # endpoint and worker (traffic/workload/worker.py)
    GOODPUT = "goodput"            # cumulative rx/tx bytes, every goodput interval
    COUNTERS = "counters"          # final counters at exit
    PHASE = "phase"                # the worker reached a Phase
    ITERATION = "iteration"        # one timed collective iteration (start_ns, end_ns, verified)
    ERROR = "error"                # the worker failed (reason)

    ALL = frozenset({EV_STATE, EV_SKIP, EV_SUSPECT, EV_CLEARED, PROBE, PORT, RETRANSMIT,
                     COMPLETION, QP_ERROR, QP, DENYLIST, TX_ERROR, RX_ERROR, BASE_RTT, LATENESS, GOODPUT,
                     COUNTERS, PHASE, ITERATION, ERROR})


# The fields of an endpoint or worker log line that hold a time of the writer's CLOCK_MONOTONIC
# (every other *_ns field is a duration): what moves when a server's log is put on another
# machine's clock (model/retime.py).
CLOCK_FIELDS = ("t_ns", "start_ns", "end_ns", "until_ns")


class Phase:
    """The "phase" of a worker's PHASE event, in the order a worker reaches them."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    WARMUP_DONE = "warmup_done"    # the timed iterations start here
    DONE = "done"

    ALL = (CONNECTING, CONNECTED, WARMUP_DONE, DONE)


class ControllerLog:
    """The "action" of a controller fault-log entry that is not a fault the API was asked for."""

    PORT_STATUS = "port_status"    # a switch reported a port up or down
    RECONVERGE = "reconverge"      # ECMP routes recomputed after a port change
    FLAP_STEP = "flap_step"        # one down/up step of a flap
    FLAP_ERROR = "flap_error"
    DENY = "deny"                  # a path denied to the endpoints (controller/denylist.py)
    ALLOW = "allow"
    EV_EVENT = "ev_event"          # an endpoint's EV state change (traffic/core/ev_events.py)

    ALL = frozenset({PORT_STATUS, RECONVERGE, FLAP_STEP, FLAP_ERROR, DENY, ALLOW, EV_EVENT})
