"""The MRC endpoint: one process per host, ONE event loop for all its QPs.

The pure QP objects (traffic/core/reliability.py for MRC, traffic/core/roce_rc.py for the RoCE baseline)
decide what to send and when; this module only moves their messages between them and the NIC
ports: codec (traffic/core/codec.py) + AF_PACKET sockets (traffic/nic/packet_io.py) + timers + pacing.

Loop (run_once): wait in poll() until a frame arrives, a QP deadline, the pacer, the port
poll tick or the goodput tick; read every pending frame (fast path: straight from the port's
PACKET_MMAP ring, no system call per frame; reference path, EndpointConfig.fast_path = false:
one recv_into per frame into a preallocated buffer), decode and hand it to its QP; ask the
QPs that are due for their messages (each QP's next deadline is kept between turns and
recomputed only after something happened to the QP, traffic/core/deadline_queue.py); send them
through the per-port pacer. A frame that fails to decode, names an unknown QP or comes from the
wrong peer is counted by reason and dropped; nothing a peer sends can raise out of the loop.

Timers scale with the emulated RTT: at QP creation the endpoint measures the base RTT to the
peer with EV probes (endpoint requests on QP 2 with src_qp 0, answered by the peer endpoint
itself) and derives RTO, probe period and skip time from it (Endpoint.qp_config).

Run as a process:  python -m traffic.nic.endpoint_cli --config FILE   (serves traffic/nic/control.py).
The QP glue is traffic/nic/queue_pair.py; the endpoint's own probes (base RTT, READY, path prober)
are traffic/nic/endpoint_probes.py; each piece of protocol logic lives in its own pure module.
"""
from __future__ import annotations

import collections
import gc
import random
import time

from model.events import Event
from model.topology import Topology, ev_entropy, ev_plane, ev_spine, host_intf, make_ev
from traffic.core import roce_rc
from traffic.core.codec import Codec, DecodeError
from traffic.core.deadline_queue import DeadlineQueue
from traffic.core.denylist import Denylist
from traffic.nic.endpoint_support import (
    MAX_DATA_OVERHEAD,
    Counters,
    DelayLine,
    EndpointConfig,
    EMULATED_FABRIC_QP_DEFAULTS,
    EndpointError,
    EventLog,
    LatenessHistogram,
    Pacer,
    path_timing,
    peer_delays_ns,
    qp_timers,
    rx_buffer_bytes,
    socket_drops,
    trimming_bounds,
)
from traffic.nic.endpoint_probes import EndpointProbes
from traffic.core.ev_events import EvEventQueue
from traffic.core.evs import PathInfo
from traffic.core.messages import DataPacket, Nack, Probe, Sack
from traffic.core.nscc import PlanePacer
from traffic.core.path_prober import PathProber
from traffic.nic.queue_pair import QueuePair
from traffic.nic.link_events import LinkEvents
from traffic.nic.readiness import Readiness
from traffic.core.reliability import MemoryRegistry, MRCConfig, QPError, ReceiverQP, SenderQP

RX_BATCH = 256             # frames read per port per loop turn (bounds the turn's latency)
RX_ROUND = 16              # frames read from one port before the next port's turn
# The lateness histograms go to the log this often (cumulative): often enough that the timed
# part of a run can be cut out of them, rarely enough to cost nothing.
LATENESS_LOG_INTERVAL_NS = 1_000_000_000


def port_class_for(config: EndpointConfig):
    """The NIC port type of the data path: a PACKET_MMAP ring (fast) or one recv() per frame."""
    from traffic.nic.packet_io import PacketPort, RingPort  # deferred: opens AF_PACKET sockets (root)
    return RingPort if config.fast_path else PacketPort


def open_port(config: EndpointConfig, intf: str, plane: int):
    """One NIC port of the data path (port_class_for's), its receive buffer sized to hold a
    BDP of full frames from every peer (endpoint_support.rx_buffer_bytes)."""
    from traffic.nic import packet_io  # deferred: opens AF_PACKET sockets (root)
    size = rx_buffer_bytes(config.spec, packet_io.ring_geometry(config.spec.mtu)[2])
    if config.fast_path:
        return packet_io.RingPort(intf, plane, ring_bytes=size)
    return packet_io.PacketPort(intf, plane, rcvbuf=size)


class Endpoint(EndpointProbes):
    """All QPs of one host. `ports` maps plane -> port object (RingPort with drain(handle, n),
    PacketPort or a test double with send(frame), recv() -> n into .buf, fileno(), is_up())."""

    def __init__(self, config: EndpointConfig, ports: dict | None = None,
                 clock=time.monotonic_ns, open_ports: bool = True):
        self.config = config
        self.clock = clock
        self.host = config.host
        self.topo = Topology(config.spec)
        self.codec = Codec(self.topo)
        self.log = EventLog(config.event_log, f"h{self.host}", clock)
        # EV state changes for the controller once it subscribes (control socket
        # "ev_subscribe", "ev_events")
        self.ev_events = EvEventQueue(rate_per_s=config.ev_event_rate_per_s)
        self.counters = Counters()
        # the ports' link changes as the kernel announces them, for ports opened here
        self._link_events = None
        if ports is None and open_ports:
            ports = {p: open_port(config, host_intf(self.host, p), p) for p in config.planes}
            self._link_events = LinkEvents.open()
        self.ports = ports or {}
        now = clock()
        rate_bps = config.port_rate_mbit * 1e6     # QPs pace below this; this is a safety net
        frame_bytes = config.max_payload + MAX_DATA_OVERHEAD + 4     # + Ethernet FCS
        self.pacers = {p: Pacer(rate_bps, (config.pacing_burst_packets + 2) * frame_bytes, now)
                       for p in self.ports}
        self.txq = {p: collections.deque() for p in self.ports}      # data frames, paced
        # SACKs, NACKs and probes: sent ahead of queued data (see _flush_tx)
        self.ctrlq = {p: collections.deque() for p in self.ports}
        self._qp_pacer = None       # the QPs' shared per-port token bucket (create_qp)
        self.port_up = {p: True for p in self.ports}
        for p, port in self.ports.items():
            self.port_up[p] = bool(port.is_up())
        self.qps: dict[int, QueuePair] = {}
        self.deadlines = DeadlineQueue(lambda qp, now: qp.next_deadline(now))
        self.timer_lateness = LatenessHistogram()
        self.rx_lateness = LatenessHistogram()
        self.deadlines.lateness = self.timer_lateness
        for port in self.ports.values():
            if hasattr(port, "rx_lateness"):
                port.rx_lateness = self.rx_lateness
        self.registry = MemoryRegistry()
        self._seed = config.seed if config.seed is not None else time.monotonic_ns()
        self._rtt_probe_seq = 0
        self._rtt_probes: dict[int, int] = {}      # seq -> sent_ns
        self.rtt_samples: dict[int, list[int]] = collections.defaultdict(list)  # peer -> ns
        self.ready_peers: set[int] = set()         # peers that answered a READY probe
        self._next_goodput = now
        self._next_lateness_log = now + LATENESS_LOG_INTERVAL_NS
        self._next_port_poll = now
        self._readiness = Readiness()
        self._fd_plane = {}
        for p, port in self.ports.items():
            self._readiness.register(port.fileno())
            self._fd_plane[port.fileno()] = p
        self._extra_fds: dict[int, callable] = {}
        if self._link_events is not None:
            self.add_fd(self._link_events.fileno(), self._on_link_event)
        self.on_turn = None                         # callable run after every loop turn
        self.max_payload = self._max_payload()
        self.denylist = Denylist(self.topo)
        self.prober = None
        if config.path_probe_interval_ms > 0:
            self.prober = PathProber(self.topo, self.host,
                                     int(config.path_probe_interval_ms * 1e6),
                                     int(config.path_probe_timeout_ms * 1e6),
                                     other_path_margin_ns=int(config.path_probe_margin_ms * 1e6),
                                     hop_probes=config.routing == "srv6")
        self._prober_peers = 0
        # The links' propagation delay, emulated here: every received frame waits out its path's
        # one-way delay before the endpoint sees it (model/propagation.py). None: no delay.
        delays = peer_delays_ns(config.spec, self.host)
        self.delay_line = DelayLine(delays) if any(delays.values()) else None
        self.closed = False

    # ------------------------------------------------------------------ setup

    def _max_payload(self) -> int:
        cap = self.config.max_payload
        for port in self.ports.values():
            mtu = getattr(port, "mtu", None)
            if callable(mtu):
                try:
                    cap = min(cap, mtu() + 14 - MAX_DATA_OVERHEAD)
                except OSError:
                    pass
        return max(64, cap)

    def register_mr(self, buf, rkey: int | None = None, va: int = 0):
        """Register a writable buffer (bytearray, numpy array) for remote WRITEs at va..va+len."""
        if isinstance(buf, int):
            buf = bytearray(buf)
        try:
            return self.registry.register(buf, va=va, rkey=rkey)
        except (ValueError, TypeError) as e:
            raise EndpointError(f"cannot register memory region: {e}") from None

    def qp_config(self, base_rtt_ns: int, overrides: dict | None = None,
                  across_groups: bool = True) -> MRCConfig:
        """MRCConfig for a new QP: what the endpoint derives (base RTT, payload, pacing, header
        bytes, delay bound, a full frame's serialization on the path to the peer), over
        EMULATED_FABRIC_QP_DEFAULTS, under config.qp, under `overrides`."""
        cfg = self.config
        header = MAX_DATA_OVERHEAD - (40 if cfg.routing == "ecmp" else 0) + 24
        values = {**EMULATED_FABRIC_QP_DEFAULTS,
                  "nscc_min_base_rtt_ns": cfg.min_base_rtt_ns or 0, "header_overhead": header,
                  **path_timing(cfg.spec, self.max_payload + header, across_groups),
                  **cfg.qp,
                  "base_rtt_ns": base_rtt_ns, "max_payload": self.max_payload,
                  "port_rate_Bps": cfg.port_rate_mbit * 1e6 / 8 * cfg.pacing_fraction,
                  "pacing_burst_packets": cfg.pacing_burst_packets,
                  # the EV names its path only when source-routed (traffic/core/path_order.py)
                  "path_order_loss": cfg.routing == "srv6" and cfg.qp.get("path_order_loss", True),
                  **(overrides or {})}
        values = {**trimming_bounds(cfg.spec, cfg.time_scale, bool(values.get("trimming"))),
                  **values}
        try:
            return MRCConfig(**values)
        except (TypeError, ValueError) as e:
            raise EndpointError(f"bad QP setting: {e}") from None

    def create_qp(self, qpn: int, peer: int, peer_qpn: int, transport: str = "mrc",
                  base_rtt_ns: int | None = None, qp_overrides: dict | None = None) -> QueuePair:
        """A QP to `peer` (host number); both ends must use matching (qpn, peer_qpn)."""
        if qpn in self.qps:
            raise EndpointError(f"QP {qpn:#x} already exists")
        if not 0x10 <= qpn <= 0xFFFFFF or not 0x10 <= peer_qpn <= 0xFFFFFF:
            raise EndpointError(f"QP numbers must be 0x10..0xffffff (low ones are reserved), "
                                f"got {qpn:#x}/{peer_qpn:#x}")
        try:
            self.topo.host(peer)
        except KeyError as e:
            raise EndpointError(str(e)) from None
        if peer == self.host:
            raise EndpointError("a QP to the endpoint's own host is not supported")
        if transport not in ("mrc", "roce"):
            raise EndpointError(f"transport must be 'mrc' or 'roce', got {transport!r}")
        if base_rtt_ns is None:
            base_rtt_ns = self.measure_base_rtt(peer)
        if self.config.min_base_rtt_ns:
            base_rtt_ns = max(base_rtt_ns, self.config.min_base_rtt_ns)
        qcfg = self.qp_config(base_rtt_ns, qp_overrides, across_groups=(
            self.topo.host(peer).group != self.topo.host(self.host).group))
        planes = tuple(p for p in sorted(self.ports))
        paths = PathInfo(planes=planes, spines=self.topo.spec.spines)
        rng = random.Random(self._seed ^ (qpn << 8) ^ peer)

        def emit(event: dict) -> None:
            event = dict(event)
            t = event.pop("t_ns", None)
            name = event.pop("event")
            self.log.emit(name, t_ns=t, **event)
            if name == Event.EV_STATE and event.get("direction") != "reverse":
                self.ev_events.push({"t_ns": t, "peer": peer, **event},
                                    self.clock() if t is None else t)

        if transport == "mrc":
            sender = SenderQP(qpn, peer_qpn, qcfg, paths, rng, emit)
            receiver = ReceiverQP(qpn, peer_qpn, qcfg, paths, rng, self.registry, emit)
        else:
            sender, receiver = roce_rc.make_qp_halves(qpn, peer_qpn, qcfg, paths, rng,
                                                      self.registry, emit)
        # Every QP of the host paces against one token bucket per NIC port, as QPs share a
        # NIC port's line rate. With a bucket each, two QPs on a port would offer twice its
        # rate: the excess would wait in the endpoint's transmit queue, SACKs behind it, and
        # every packet's RTT sample would count that wait as fabric delay, which NSCC answers
        # by cutting the window.
        if self._qp_pacer is None:
            self._qp_pacer = PlanePacer(planes, qcfg.port_rate_Bps,
                                        qcfg.pacing_burst_packets
                                        * (qcfg.max_payload + qcfg.header_overhead))
        sender.pacer = self._qp_pacer
        qp = QueuePair(qpn, peer, peer_qpn, transport, sender, receiver, base_rtt_ns,
                       changed=self.deadlines.changed)
        self.deadlines.changed(qp)
        now = self.clock()
        for plane, up in self.port_up.items():
            if not up:
                qp.set_local_port(plane, False, now)
        self.qps[qpn] = qp
        self.log.emit(Event.QP, t_ns=now, qp=qpn, peer=f"h{peer}", peer_qp=peer_qpn,
                      transport=transport, **qp_timers(qcfg, transport))
        if self.denylist.rules:
            self._apply_denylist(qp, now)
        # Move everything built so far (topology, codec tables, EV sets, buffers) out of the
        # cyclic GC's view: full collections then scan only what the traffic allocates, so
        # they stay short instead of stalling the loop for milliseconds mid-transfer.
        gc.freeze()
        return qp

    def post_write(self, qpn: int, data, remote_va: int, rkey: int, imm: int | None = None) -> int:
        """Queue an RDMA WRITE(-with-IMM); returns the MSN. `data` must stay unchanged until
        the send completion (it is referenced, not copied)."""
        qp = self.qps.get(qpn)
        if qp is None:
            raise EndpointError(f"no QP {qpn:#x}")
        try:
            return qp.post_write(data, remote_va, rkey, imm)
        except (QPError, ValueError, TypeError) as e:
            raise EndpointError(f"QP {qpn:#x}: {e}") from None

    # ------------------------------------------------------------------ denylist

    def set_denylist(self, rules) -> dict:
        """Make `rules` (traffic/core/denylist.py rules, as dicts) the paths no QP may use: EVs they
        name become DENIED at once (never sent on, never probed), EVs no longer named are allowed
        (probed back before use). Raises DenyRuleError, changing nothing, on a bad rule."""
        fresh = Denylist(self.topo, rules)
        self.denylist = fresh
        now = self.clock()
        denied = allowed = 0
        for qp in self.qps.values():
            d, a = self._apply_denylist(qp, now)
            denied, allowed = denied + d, allowed + a
        in_force = sum(len(qp.sender.evs.denied()) for qp in self.qps.values()
                       if getattr(qp.sender, "evs", None) is not None)
        self.log.emit(Event.DENYLIST, t_ns=now, rules=fresh.to_list(), denied=denied,
                      allowed=allowed, evs_denied=in_force)
        return {"rules": fresh.to_list(), "newly_denied": denied, "newly_allowed": allowed,
                "evs_denied": in_force}

    def _apply_denylist(self, qp: "QueuePair", now: int) -> tuple[int, int]:
        """The endpoint's rules applied to one QP (QueuePair.apply_denylist)."""
        denylist, src, dst = self.denylist, self.host, qp.peer

        def denies(ev: int) -> bool:
            return denylist.denies(src, dst, ev)
        return qp.apply_denylist(denies, now)

    def add_fd(self, fd: int, callback) -> None:
        """Watch another fd (control socket) in the same loop; callback() when readable."""
        self._extra_fds[fd] = callback
        self._readiness.register(fd)

    def remove_fd(self, fd: int) -> None:
        if self._extra_fds.pop(fd, None) is not None:
            self._readiness.unregister(fd)

    def local_port_status(self) -> int:
        bits = 0
        for p, up in self.port_up.items():
            if up:
                bits |= 1 << p
        return bits

    # ------------------------------------------------------------------ sending

    def send_message(self, msg, plane: int, peer: int) -> bool:
        """Encode one message to `peer` on `plane` and queue it on that port's pacer."""
        if plane not in self.ports:
            self.counters.drop("tx_no_port")
            return False
        ev = getattr(msg, "path_ev", 0) if not isinstance(msg, DataPacket) else msg.ev
        if not ev:
            ev = msg.ev
        if not ev or ev_plane(ev) != plane:
            ev = make_ev(plane, ev_spine(ev) % self.topo.spec.spines if ev else 0,
                         ev_entropy(ev) or 1)
        try:
            frame = self.codec.encoder(self.host, peer, plane, self.config.routing).encode(msg, ev=ev)
        except ValueError as e:
            self.counters.drop("tx_encode_error")
            self.log.emit(Event.TX_ERROR, qp=getattr(msg, "dest_qp", 0), reason=str(e))
            return False
        if isinstance(msg, DataPacket):
            self.txq[plane].append(frame)
            self.counters.tx_packets += 1
            self.counters.tx_bytes += len(msg.payload)
            if msg.retransmit:
                self.counters.retransmitted += 1
        else:
            self.ctrlq[plane].append(frame)
        return True

    def _flush_tx(self, now: int) -> None:
        """Control frames first and without waiting for tokens (they still consume them: a
        NIC's ACKs share the wire but do not queue behind its data), then data while the
        port's pacer allows."""
        for plane, q in self.ctrlq.items():
            while q:
                self._send_frame(plane, q.popleft())
        for plane, q in self.txq.items():
            if not q:
                continue
            pacer = self.pacers[plane]
            while q and pacer.can_send(now):
                self._send_frame(plane, q.popleft())

    def _send_frame(self, plane: int, frame) -> None:
        """One frame onto the wire of `plane`, paid for in the port pacer's tokens (+ FCS)."""
        self.pacers[plane].consume(len(frame) + 4)
        if self.ports[plane].send(frame):
            self.counters.sent += 1
        else:
            self.counters.send_failed += 1

    # ------------------------------------------------------------------ receiving

    def handle_frame(self, plane: int, frame, now: int | None = None) -> None:
        """Receive path for one frame (bytes or a memoryview of the receive buffer).

        Never raises: every reason to drop is counted in counters.dropped. With a propagation
        delay the decoded message waits in the delay line (its own copy of the frame: the
        receive buffer is the port's again when this returns) until arrival + its path's delay.
        """
        now = self.clock() if now is None else now
        line = self.delay_line
        if line is not None:
            frame = memoryview(bytes(frame))
        try:
            msg, meta = self.codec.decode(frame)
        except DecodeError as e:
            self.counters.drop(e.reason)
            return
        if line is not None:
            delay = line.delay_of(meta.src_host)
            if delay:
                line.push(now + delay, (plane, msg, meta))
                return
        self._deliver(plane, msg, meta, now)

    def _deliver(self, plane: int, msg, meta, now: int) -> None:
        try:
            self._dispatch(plane, msg, meta, now)
        except Exception as e:  # noqa: BLE001 - a peer's packet must never kill the endpoint
            self.counters.drop("qp_rejected")
            self.log.emit(Event.RX_ERROR, t_ns=now, reason=f"{type(e).__name__}: {e}")

    def _release_delayed(self, now: int) -> None:
        """Hand on what the delay line holds that is due; how late each comes out of it is
        timer lateness (the loop woke after the release time)."""
        lateness = self.timer_lateness
        for release, (plane, msg, meta) in self.delay_line.pop_due(now):
            lateness.record(now - release)
            self._deliver(plane, msg, meta, now)

    def _dispatch(self, plane: int, msg, meta, now: int) -> None:
        if meta.dst_host != self.host:
            self.counters.drop("not_for_us")
            return
        if meta.src_plane != meta.dst_plane or meta.dst_plane != plane:
            self.counters.drop("wrong_plane")
            return
        self.counters.received += 1
        if isinstance(msg, Probe):
            self._on_probe(plane, msg, meta, now)
            return
        qp = self.qps.get(msg.dest_qp)
        if qp is None:
            self.counters.drop("unknown_qp")
            return
        if meta.src_host != qp.peer:
            self.counters.drop("foreign_peer")
            return
        if isinstance(msg, DataPacket):
            self.counters.rx_packets += 1
            if qp.on_data(msg, plane, now):
                self.counters.rx_bytes += len(msg.payload)
        elif isinstance(msg, Sack):
            qp.on_sack(msg, plane, now)
        elif isinstance(msg, Nack):
            qp.on_nack(msg, plane, now)
        else:
            self.counters.drop("unexpected_message")

    # ------------------------------------------------------------------ loop

    def _poll_ports(self, now: int) -> None:
        for plane, port in self.ports.items():
            up = bool(port.is_up())
            if up != self.port_up[plane]:
                self.port_up[plane] = up
                self.log.emit(Event.PORT, t_ns=now, plane=plane, up=up)
                for qp in self.qps.values():
                    qp.set_local_port(plane, up, now)

    def _on_link_event(self) -> None:
        if self._link_events.drain():
            self._next_port_poll = 0              # read the ports in this turn

    def _emit_goodput(self, now: int) -> None:
        c = self.counters
        self.log.emit(Event.GOODPUT, t_ns=now, rx_bytes=c.rx_bytes, tx_bytes=c.tx_bytes,
                      rx_packets=c.rx_packets, tx_packets=c.tx_packets,
                      retransmits=c.retransmitted)

    def _emit_lateness(self, now: int) -> None:
        self.log.emit(Event.LATENESS, t_ns=now, timer=self.timer_lateness.sparse(),
                      rx=self.rx_lateness.sparse())

    def _queued(self) -> int:
        return sum(len(q) for q in self.txq.values()) + sum(len(q) for q in self.ctrlq.values())

    def _pump_qps(self, now: int) -> None:
        """Ask the QPs that are due for their messages (only those: self.deadlines). The QPs
        pace against one shared PlanePacer per port (create_qp) at the port rate; the endpoint's
        per-port Pacer is the safety net behind it."""
        for qp in self.deadlines.pop_due(now):
            for msg, plane in qp.poll(now):
                self.send_message(msg, plane, qp.peer)

    def _next_wakeup(self, now: int) -> int:
        wake = min(self._next_goodput, self._next_port_poll)
        for plane, q in self.txq.items():
            if q:
                wake = min(wake, self.pacers[plane].next_send_ns(now))
        d = self.deadlines.earliest(now)
        if d is not None and d < wake:
            wake = d
        if self.prober is not None and self.qps:
            d = self.prober.next_deadline()
            if d is not None and d < wake:
                wake = d
        if self.delay_line is not None:
            d = self.delay_line.next_release()
            if d is not None and d < wake:
                wake = d
        return wake

    def run_once(self, max_wait_s: float = 0.01) -> None:
        now = self.clock()
        wake = min(self._next_wakeup(now), now + int(max_wait_s * 1e9))
        ready = []
        for fd in self._readiness.wait((wake - now) / 1e9):
            plane = self._fd_plane.get(fd)
            if plane is None:
                cb = self._extra_fds.get(fd)
                if cb is not None:
                    cb()
                continue
            ready.append(plane)
        self._drain_ports(ready)
        now = self.clock()
        if self.delay_line is not None:
            self._release_delayed(now)
        if now >= self._next_port_poll:
            self._next_port_poll = now + int(1e6 * (self.config.port_poll_ms if
                                                    self._link_events is None else
                                                    self.config.port_poll_backstop_ms))
            self._poll_ports(now)
        self._pump_qps(now)
        if self.prober is not None and self.qps:
            self._pump_prober(now)
        self._flush_tx(now)
        if now >= self._next_goodput:
            self._next_goodput = now + int(self.config.goodput_interval_ms * 1e6)
            self._emit_goodput(now)
            if now >= self._next_lateness_log:
                self._next_lateness_log = now + LATENESS_LOG_INTERVAL_NS
                self._emit_lateness(now)
        if self.on_turn is not None:
            self.on_turn()

    def _drain_ports(self, ready: list) -> None:
        """Read what the ready ports hold, RX_ROUND frames per port in turn, until they are
        empty or RX_BATCH frames per port were read. Reading port by port in big batches
        would hand the QPs the SACKs of one plane long before older ones of the other plane
        (after a CPU stall both sockets hold many), which looks like reordering and would feed
        false SACK-gap losses; timers run only after the drain (in _pump_qps)."""
        budget = RX_BATCH * max(1, len(ready))
        while ready and budget > 0:
            more = []
            for plane in ready:
                port = self.ports[plane]
                drain = getattr(port, "drain", None)
                if drain is not None:       # a ring port: no system call per frame
                    handle, clock = self.handle_frame, self.clock
                    got = drain(lambda frame: handle(plane, frame, clock()), RX_ROUND)
                    budget -= got
                    if got == RX_ROUND:
                        more.append(plane)
                    continue
                for _ in range(RX_ROUND):
                    n = port.recv()
                    if not n:
                        break
                    budget -= 1
                    self.handle_frame(plane, port.view[:n], self.clock())
                else:
                    more.append(plane)
            ready = more

    def run_until(self, predicate, timeout_s: float | None = None) -> bool:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not predicate():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self.run_once(0.01)
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        now = self.clock()
        self._emit_goodput(now)
        self._emit_lateness(now)
        final = self.counters.as_dict()
        final["socket_drops"] = socket_drops(self.ports)
        if self.delay_line is not None:
            final["delay_line_held_max"] = self.delay_line.held_max
        final["qps"] = {qpn: qp.stats() for qpn, qp in self.qps.items()}
        self.log.emit(Event.COUNTERS, t_ns=now, **final)
        self.log.close()
        for port in (*self.ports.values(), self._link_events):
            close = getattr(port, "close", None)
            if close:
                close()


