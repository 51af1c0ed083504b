"""The endpoint's own probes, which no QP owns: the base RTT to a peer measured before its QPs
exist, the "do you have QPs to me yet?" READY probe, the path prober's probes (its per-hop
self-probes come back to this endpoint as they were sent: they are their own answer), and the
answers to every probe a peer sends.

Apart from traffic/nic/endpoint.py because they are one concept (EV probes on the endpoint's
reserved source QPs, RTT_PROBE_QP, READY_PROBE_QP, PATH_PROBE_QP) beside the loop, the sending
and the QP dispatch. A mixin of Endpoint: it uses the endpoint's send_message, _flush_tx,
run_once, clock, counters, log, ports and QPs, and its state is set by Endpoint.__init__.
Compiled with the endpoint (traffic/compiled.py).
"""
from __future__ import annotations

import time

from model.events import Event
from model.topology import make_ev
from traffic.core.messages import PROBE_ID_MASK, Probe
from traffic.core.path_prober import hop_tier

RTT_PROBE_QP = 0           # src_qp of the endpoint's own base-RTT probes (no QP owns them)
READY_PROBE_QP = 1         # src_qp of "do you have QPs to me yet?" probes (answered only then)
PATH_PROBE_QP = 3          # src_qp of the path prober's probes (2 is the EV probes' QP)


class EndpointProbes:
    """Probe handling of Endpoint (mixed into it; see the module docstring)."""

    def _on_probe(self, plane: int, msg: Probe, meta, now: int) -> None:
        if meta.src_host == self.host:
            # one of our hop probes, back from where it turned (traffic/core/path_prober.py)
            if (msg.response or msg.src_qp != PATH_PROBE_QP or self.prober is None
                    or not self.prober.on_response(msg.seq, now)):
                self.counters.drop("stale_probe")
            return
        if not msg.response:
            if msg.src_qp == READY_PROBE_QP and not any(
                    qp.peer == meta.src_host for qp in self.qps.values()):
                self.counters.drop("not_ready")
                return
            reply = Probe(ev=msg.ev, seq=msg.seq, timestamp=msg.timestamp, response=True,
                          src_qp=msg.src_qp, port_status=self.local_port_status(),
                          path_ev=msg.path_ev)
            self.send_message(reply, plane, meta.src_host)
            return
        if msg.src_qp == RTT_PROBE_QP:
            sent = self._rtt_probes.pop(msg.seq, None)
            if sent is None:
                self.counters.drop("stale_probe")
                return
            self.rtt_samples[meta.src_host].append(now - sent)
            return
        if msg.src_qp == READY_PROBE_QP:
            self.ready_peers.add(meta.src_host)
            return
        if msg.src_qp == PATH_PROBE_QP:
            if self.prober is None or not self.prober.on_response(msg.seq, now):
                self.counters.drop("stale_probe")
            return
        qp = self.qps.get(msg.src_qp)
        if qp is None or meta.src_host != qp.peer:
            self.counters.drop("stale_probe")
            return
        qp.on_probe_response(msg, plane, now)

    def measure_base_rtt(self, peer: int, timeout_s: float = 0.5) -> int:
        """Min RTT of a few probes to `peer` over every up plane (spread over spines).

        Falls back to config.default_base_rtt_ns plus the path's propagation both ways when
        nothing answers (peer not up yet): the timers are then conservative, never zero.
        """
        if self.config.base_rtt_ns:
            return self.config.base_rtt_ns
        # The links' propagation both ways (the delay line's, model/propagation.py) is part of
        # every round trip: the fallback, the plausible bound and the wait per round add it.
        prop = 2 * (self.delay_line.delay_of(peer) if self.delay_line is not None else 0)
        timeout_s = max(timeout_s, 4 * prop / 1e9)
        samples = self.rtt_samples[peer]
        start = len(samples)
        planes = [p for p, up in self.port_up.items() if up] or list(self.ports)
        n = self.config.rtt_probe_count
        # Several rounds: the first packets of a flow through userspace OVS take the slow
        # (upcall) path and can be 100x slower than the steady state; the min is what counts.
        # More rounds (up to 10) while the min is still implausibly slow: on a busy machine a
        # whole round can come back slow, and the QP's receiver timers (SACK delay, reverse
        # probes) are sized on this min, so a slow one slows every iteration of the run.
        # (implausible: above 4x the fallback base RTT, or 4x the floor when one is set, plus
        # the propagation)
        plausible = 4 * (self.config.min_base_rtt_ns or self.config.default_base_rtt_ns) + prop
        for _round in range(10):
            if _round >= 3 and (len(samples) == start or min(samples[start:]) <= plausible):
                break           # nothing answers (peer not up: fall back), or a sane min
            want = len(samples) + n
            for i in range(n):
                plane = planes[i % len(planes)]
                spine = (i // len(planes)) % self.topo.spec.spines
                ev = make_ev(plane, spine, 0x100 + i)
                self._rtt_probe_seq = (self._rtt_probe_seq + 1) & PROBE_ID_MASK
                now = self.clock()
                self._rtt_probes[self._rtt_probe_seq] = now
                self.send_message(Probe(ev=ev, seq=self._rtt_probe_seq, timestamp=now,
                                        src_qp=RTT_PROBE_QP, path_ev=ev), plane, peer)
                self._flush_tx(self.clock())
            deadline = time.monotonic() + timeout_s
            while len(samples) < want and time.monotonic() < deadline:
                self.run_once(0.002)
        got = samples[start:]
        if not got:
            used = self.config.default_base_rtt_ns + prop
            self.log.emit(Event.BASE_RTT, peer=peer, rtt_ns=None, samples=0, used_ns=used)
            return used
        rtt = min(got)
        self.log.emit(Event.BASE_RTT, peer=peer, rtt_ns=rtt, samples=len(got), used_ns=rtt)
        return rtt

    def send_ready_probe(self, peer: int) -> None:
        """Ask `peer` whether it has created its QPs to us: it answers a READY probe only once
        it has (see _on_probe); the answer adds peer to ready_peers. Lets a communicator hold
        its first WRITE until the peer's QPs exist (a WRITE to a missing QP is lost and would
        retire a healthy EV)."""
        planes = [p for p, up in self.port_up.items() if up] or list(self.ports)
        for i, plane in enumerate(planes):
            ev = make_ev(plane, i % self.topo.spec.spines, 0x200 + i)
            self._rtt_probe_seq = (self._rtt_probe_seq + 1) & PROBE_ID_MASK
            self.send_message(Probe(ev=ev, seq=self._rtt_probe_seq, timestamp=self.clock(),
                                    src_qp=READY_PROBE_QP, path_ev=ev), plane, peer)
        self._flush_tx(self.clock())

    def _pump_prober(self, now: int) -> None:
        prober = self.prober
        if len(self.qps) != self._prober_peers:
            self._prober_peers = len(self.qps)
            prober.set_peers({qp.peer for qp in self.qps.values()}, now)
        prober.expire(now)
        for peer, plane, ev, seq in prober.due(now):
            probe = Probe(ev=ev, seq=seq, timestamp=now, src_qp=PATH_PROBE_QP, path_ev=ev)
            if peer == self.host:
                self._send_hop_probe(probe, plane)
            else:
                self.send_message(probe, plane, peer)

    def _send_hop_probe(self, probe: Probe, plane: int) -> None:
        """A self-probe on the control queue of `plane`, turning where its EV says."""
        if plane not in self.ports:
            self.counters.drop("tx_no_port")
            return
        try:
            frame = self.codec.hop_encoder(self.host, plane, hop_tier(probe.ev)).encode(probe)
        except ValueError as e:
            self.counters.drop("tx_encode_error")
            self.log.emit(Event.TX_ERROR, qp=PATH_PROBE_QP, reason=str(e))
            return
        self.ctrlq[plane].append(frame)

    def path_stats(self) -> dict:
        """The prober's per-path counts ({} when it is off)."""
        return self.prober.stats() if self.prober is not None else {}
