"""The endpoint's record of one QP: the pure sender and receiver halves, its peer, and the
completions they produced.

Apart from traffic/nic/endpoint.py because it is the glue between one QP's two halves, not the
endpoint's loop or I/O: every call into the halves goes through here so the endpoint learns
which QP changed (its kept deadline, traffic/core/deadline_queue.py) without knowing the halves.
Compiled with the endpoint (traffic/compiled.py): every received packet passes through it.
"""
from __future__ import annotations


class QueuePair:
    """Endpoint record of one QP: the pure sender + receiver halves, its peer, completions.

    For transport "mrc" the halves are reliability.SenderQP/ReceiverQP; for "roce" the
    traffic/core/roce_rc.py ones (one fixed EV, go-back-N). Both halves share the QP number: data
    and SACKs for this QP both arrive with dest_qp == qpn.

    Every call into the halves goes through a method here that reports the QP to
    `changed(qp)`: the endpoint keeps each QP's next deadline (traffic/core/deadline_queue.py) and
    recomputes it only after such a call.
    """

    def __init__(self, qpn: int, peer: int, peer_qpn: int, transport: str, sender, receiver,
                 base_rtt_ns: int, changed=None):
        self.qpn = qpn
        self.peer = peer
        self.peer_qpn = peer_qpn
        self.transport = transport
        self.sender = sender
        self.receiver = receiver
        self.base_rtt_ns = base_rtt_ns
        self.send_completions: list = []
        self.recv_completions: list = []
        self.out: list = []                 # (message, plane) produced by on_data
        self.changed = changed or (lambda qp: None)

    @property
    def error(self) -> str | None:
        return self.sender.error

    def on_data(self, msg, plane: int, now: int) -> bool:
        self.changed(self)
        before = self.receiver.counters["placed_bytes"]
        self.out.extend(self.receiver.on_data(msg, now, plane))
        comps = self.receiver.pop_completions()
        if comps:
            self.recv_completions.extend(comps)
        return self.receiver.counters["placed_bytes"] != before

    def on_sack(self, msg, plane: int, now: int) -> None:
        self.changed(self)
        self.sender.on_sack(msg, now)
        # Our data reached the peer on msg.ev: that path works from us to the peer, which is the
        # direction our own SACKs take (the paper: reverse EVs refreshed from data SACKs).
        # RoCE's receiver has one fixed path and no reverse EVs.
        reverse = getattr(self.receiver, "reverse_paths", None)
        if reverse is not None:
            reverse.confirm(msg.ev, now)
        self._collect()

    def on_nack(self, msg, plane: int, now: int) -> None:
        self.changed(self)
        self.sender.on_nack(msg, now)
        self._collect()

    def on_probe_response(self, msg, plane: int, now: int) -> None:
        self.changed(self)
        pending = getattr(getattr(self.sender, "evs", None), "pending_probes", {})
        p = pending.get(msg.seq)
        if p is not None and p.ev == msg.ev:
            self.sender.on_probe_response(msg, now)
        else:
            self.receiver.on_probe_response(msg, now)

    def _collect(self) -> None:
        comps = self.sender.pop_completions()
        if comps:
            self.send_completions.extend(comps)

    def set_local_port(self, plane: int, up: bool, now: int) -> None:
        self.changed(self)
        self.sender.set_local_port(plane, up, now)
        self.receiver.set_local_port(plane, up, now)

    def post_write(self, data, remote_va: int, rkey: int, imm: int | None) -> int:
        self.changed(self)
        return self.sender.post_write(data, remote_va, rkey, imm)

    def apply_denylist(self, denies, now: int) -> tuple[int, int]:
        """Deny the QP's forward EVs and its receiver's reverse EVs (SACKs and NACKs leave
        this host for the same peer, so the same rules name them); the counts are forward."""
        self.changed(self)
        reverse = getattr(self.receiver, "reverse_paths", None)
        if reverse is not None:
            reverse.apply_denylist(denies, now)
        evs = getattr(self.sender, "evs", None)
        if evs is None or not hasattr(evs, "apply_denylist"):
            return 0, 0
        return evs.apply_denylist(denies, now)

    def poll(self, now: int) -> list:
        self.changed(self)
        out, self.out = self.out, []
        d = self.sender.next_deadline(now)
        if d is not None and d <= now:
            out.extend(self.sender.poll(now))
            self._collect()
        d = self.receiver.next_deadline(now)
        if d is not None and d <= now:
            out.extend(self.receiver.poll(now))
        return out

    def next_deadline(self, now: int) -> int | None:
        if self.out:
            return now
        a = self.sender.next_deadline(now)
        b = self.receiver.next_deadline(now)
        if a is None:
            return b
        return a if b is None else min(a, b)

    def stats(self) -> dict:
        out = {"peer": self.peer, "transport": self.transport, "error": self.error,
               "sender": dict(self.sender.counters), "receiver": dict(self.receiver.counters)}
        nscc = getattr(self.sender, "nscc", None)
        if nscc is not None:
            out["nscc"] = dict(nscc.counts)
        by_path = getattr(self.sender, "sent_packets_by_path", None)
        if by_path is not None:
            out["sent_packets_by_path"] = by_path()
        return out
