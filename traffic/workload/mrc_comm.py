"""Communicator over the MRC endpoint (transport "mrc") or the RoCE RC baseline ("roce").

The worker process embeds one Endpoint (traffic/nic/endpoint.py); there is no background thread:
wait()/test() drive endpoint.run_once. Messages travel as RDMA WRITE-with-IMM into a receive
ring, the way RDMA collective libraries do it (sender-managed remote buffers):

* QPs: `qps_per_peer` per peer. QP k between ranks a and b is qpn(a, b, k) on a and
  qpn(b, a, k) on b; both numbers are congruent to k modulo 64, so a RoCE QP's fixed plane
  (qpn % planes) is the same at both ends.
* Receive ring: every QP has a registered region of `ring_bytes` (rkey = the local qpn, va 0)
  that only the peer's sender writes. The sender allocates ring space in message order
  (a fragment that does not fit before the end wraps to offset 0) and frees it when the
  WRITE's send completion arrives (all its PSNs acknowledged => the receiver already had the
  whole message and copied it out, see below). The receiver mirrors the same allocation from
  the byte counts of its WRITE-with-IMM completions, which arrive in message order.
* Fragment: one WRITE-with-IMM = FRAG header (tag, message length, fragment offset) + data;
  a message larger than `fragment_bytes` is split. The immediate carries the tag too.
* The receiver copies every fragment out of the ring as soon as its completion is popped,
  right after each endpoint turn, before the loop reads another frame: the ring space can
  only be reused after a SACK that is sent after that point.
* irecv matches by (peer, tag), in order; unexpected messages are buffered.
* Connect: base RTT measured once per peer (endpoint probes, retried until the peer's
  endpoint answers), QPs created, then READY probes until every peer has its QPs too.
"""
from __future__ import annotations

import struct
import time
from collections import defaultdict, deque

from traffic.workload.comm import (RELEASED, CommError, CommTimeout, Communicator, Handle, QPFailed,
                                   as_bytes, pending_summary)
from traffic.nic.control import ControlServer
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, EndpointError
from traffic.workload.worker_config import WorkerConfig

FRAG = struct.Struct("!IIII")          # tag, message length, fragment offset, fragment length
QPN_BASE = 0x1000
QPS_PER_PEER_MAX = 64
DEFAULT_RING_BYTES = 4 << 20
DEFAULT_FRAGMENT_BYTES = 256 << 10


def qpn(local: int, peer: int, k: int) -> int:
    """Local QP number of QP k from rank `local` to rank `peer` (the peer's is qpn(peer, local, k))."""
    del local
    return QPN_BASE + peer * QPS_PER_PEER_MAX + k


class _Fragment:
    __slots__ = ("handle", "data", "offset", "size", "msn", "done")

    def __init__(self, handle, data, size):
        self.handle = handle
        self.data = data          # header + payload (kept alive until the send completion)
        self.size = size
        self.offset = None
        self.msn = None
        self.done = False


class _SendRing:
    """Sender-side view of the peer's receive ring of one QP."""

    def __init__(self, size: int):
        self.size = size
        self.head = 0
        self.outstanding: deque[_Fragment] = deque()   # posted, in MSN order

    def place(self, nbytes: int) -> int:
        return self.head if self.head + nbytes <= self.size else 0

    def fits(self, nbytes: int) -> bool:
        off = self.place(nbytes)
        end = off + nbytes
        return all(end <= f.offset or off >= f.offset + f.size for f in self.outstanding)

    def take(self, frag: _Fragment) -> None:
        frag.offset = self.place(frag.size)
        self.head = frag.offset + frag.size
        self.outstanding.append(frag)

    def release_done(self) -> None:
        while self.outstanding and self.outstanding[0].done:
            self.outstanding.popleft()


class _Incoming:
    """A message being reassembled (matched to an irecv handle or buffered as unexpected)."""

    __slots__ = ("tag", "length", "buf", "got", "handle")

    def __init__(self, tag, length, handle):
        self.tag = tag
        self.length = length
        self.buf = bytearray(length)
        self.got = 0
        self.handle = handle


class _QPState:
    def __init__(self, peer: int, k: int, local_qpn: int, peer_qpn: int, ring_bytes: int,
                 ring_buf: bytearray):
        self.peer = peer
        self.k = k
        self.qpn = local_qpn
        self.peer_qpn = peer_qpn
        self.send_ring = _SendRing(ring_bytes)
        self.pending: deque[_Fragment] = deque()        # not yet posted (ring full)
        self.by_msn: dict[int, _Fragment] = {}
        self.recv_ring = ring_buf
        self.recv_head = 0
        self.incoming: _Incoming | None = None           # message whose fragments are arriving


class MRCComm(Communicator):
    """Communicator on an Endpoint; rank r is host r of the fabric."""

    def __init__(self, rank: int, world_size: int, endpoint: Endpoint, transport: str = "mrc",
                 qps_per_peer: int = 1, *, ring_bytes: int = DEFAULT_RING_BYTES,
                 fragment_bytes: int = DEFAULT_FRAGMENT_BYTES, connect_timeout_s: float = 60.0,
                 base_rtt_ns: int | None = None, hosts: list[int] | None = None,
                 linger_s: float = 0.3):
        super().__init__(rank, world_size, qps_per_peer)
        if transport not in ("mrc", "roce"):
            raise ValueError(f"MRCComm transport must be 'mrc' or 'roce', got {transport!r}")
        if qps_per_peer > QPS_PER_PEER_MAX:
            raise ValueError(f"qps_per_peer {qps_per_peer} > {QPS_PER_PEER_MAX}")
        if not FRAG.size < fragment_bytes <= ring_bytes // 2:
            raise ValueError(f"fragment_bytes {fragment_bytes} must be in "
                             f"({FRAG.size}, ring_bytes/2 = {ring_bytes // 2}]")
        self.ep = endpoint
        self.linger_s = linger_s
        self.transport = transport
        self.hosts = hosts if hosts is not None else list(range(world_size))
        if len(self.hosts) != world_size or self.hosts[rank] != endpoint.host:
            raise ValueError(f"rank {rank} must be host {endpoint.host} in hosts {self.hosts}")
        self.ring_bytes = ring_bytes
        self.max_data = fragment_bytes - FRAG.size
        self.qps: dict[tuple[int, int], _QPState] = {}
        self.by_qpn: dict[int, _QPState] = {}
        self.posted: dict[tuple[int, int], deque[Handle]] = defaultdict(deque)
        self.unexpected: dict[tuple[int, int], deque[bytes]] = defaultdict(deque)
        self.partial_unmatched: dict[tuple[int, int], deque[_Incoming]] = defaultdict(deque)
        self.error: str | None = None
        self.qp_failed = False
        self.closed = False
        self.base_rtt_ns: dict[int, int] = {}
        self._connect(connect_timeout_s, base_rtt_ns)

    # ------------------------------------------------------------------ connect

    def _connect(self, timeout_s: float, base_rtt_ns: int | None) -> None:
        deadline = time.monotonic() + timeout_s
        peers = [p for p in range(self.world_size) if p != self.rank]
        # a fixed endpoint base RTT means no probe is ever sent: waiting for samples would hang
        base_rtt_ns = base_rtt_ns or self.ep.config.base_rtt_ns
        for peer in peers:
            host = self.hosts[peer]
            if base_rtt_ns is not None:
                self.base_rtt_ns[peer] = base_rtt_ns
                continue
            while True:
                rtt = self.ep.measure_base_rtt(host, timeout_s=0.2)
                if self.ep.rtt_samples.get(host):
                    self.base_rtt_ns[peer] = rtt
                    break
                if time.monotonic() > deadline:
                    raise CommTimeout(f"rank {self.rank}: peer rank {peer} (h{host}) did not answer "
                                      f"probes within {timeout_s} s")
        # every QP of every peer before the next loop turn: a READY answer means all exist
        for peer in peers:
            for k in range(self.qps_per_peer):
                local, remote = qpn(self.rank, peer, k), qpn(peer, self.rank, k)
                ring = bytearray(self.ring_bytes)
                try:
                    self.ep.register_mr(ring, rkey=local, va=0)
                    self.ep.create_qp(local, self.hosts[peer], remote, transport=self.transport,
                                      base_rtt_ns=self.base_rtt_ns[peer])
                except EndpointError as e:
                    raise CommError(f"rank {self.rank}: cannot set up QP {k} to rank {peer}: {e}") from None
                st = _QPState(peer, k, local, remote, self.ring_bytes, ring)
                self.qps[(peer, k)] = st
                self.by_qpn[local] = st
        waiting = {self.hosts[p] for p in peers}
        next_probe = 0.0
        while waiting - self.ep.ready_peers:
            if time.monotonic() > deadline:
                raise CommTimeout(f"rank {self.rank}: hosts {sorted(waiting - self.ep.ready_peers)} "
                                  f"did not create their QPs within {timeout_s} s")
            if time.monotonic() >= next_probe:
                for host in waiting - self.ep.ready_peers:
                    self.ep.send_ready_probe(host)
                next_probe = time.monotonic() + 0.05
            self.ep.run_once(0.005)
            self._progress()

    # ------------------------------------------------------------------ interface

    def isend(self, peer, data, tag=0, *, qp=None):
        k = self._check_args(peer, tag, qp)
        self._raise_if_failed()
        view = as_bytes(data)
        n = view.nbytes
        handle = Handle("send", peer, tag, n, k)
        st = self.qps[(peer, k)]
        frags = []
        off = 0
        while True:
            take = min(self.max_data, n - off)
            buf = bytearray(FRAG.size + take)
            FRAG.pack_into(buf, 0, tag, n, off, take)
            buf[FRAG.size:] = view[off:off + take]
            frags.append(_Fragment(handle, buf, len(buf)))
            off += take
            if off >= n:
                break
        handle.data = len(frags)              # fragments not yet completed
        st.pending.extend(frags)
        self._post_pending(st)
        return handle

    def irecv(self, peer, nbytes, tag=0, *, qp=None):
        k = self._check_recv_args(peer, nbytes, tag, qp)
        handle = Handle("recv", peer, tag, nbytes, k)
        key = (peer, tag)
        if self.unexpected.get(key):
            handle.complete(self.rank, self.unexpected[key].popleft())
        elif self.partial_unmatched.get(key):
            inc = self.partial_unmatched[key].popleft()
            inc.handle = handle
        else:
            self.posted[key].append(handle)
        return handle

    def test(self, handle):
        if not handle.done and handle.error is None:
            self.ep.run_once(0)
            self._progress()
        if handle.error:
            raise CommError(handle.error)
        return handle.done

    def wait(self, handles, timeout_s=None):
        handles = list(handles)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._progress()
        while True:
            for h in handles:
                if h.error:
                    raise CommError(h.error)
            if all(h.done for h in handles):
                return
            self._raise_if_failed()
            if deadline is not None and time.monotonic() >= deadline:
                raise CommTimeout(f"rank {self.rank} ({self.transport}): wait timed out after "
                                  f"{timeout_s} s; pending: {pending_summary(handles)}")
            self.ep.run_once(0.01)
            self._progress()

    def stats(self):
        c = self.ep.counters
        return {"rx_bytes": c.rx_bytes, "tx_bytes": c.tx_bytes, "rx_packets": c.rx_packets,
                "tx_packets": c.tx_packets, "retransmits": c.retransmitted}

    def close(self):
        """Linger before closing until every rank is done (comm.RELEASED), at most linger_s: a
        peer whose last ACKs from us were lost retransmits, and only a live endpoint can
        re-acknowledge (else its QP would fail after its retries)."""
        if self.closed:
            return
        self.closed = True
        try:
            end = time.monotonic() + self.linger_s
            while time.monotonic() < end and not RELEASED.is_set():
                self.ep.run_once(0.01)
                self._progress()
        finally:
            server = getattr(self.ep, "control_server", None)
            if server is not None:
                server.close()
            self.ep.close()

    # ------------------------------------------------------------------ progress

    def _raise_if_failed(self) -> None:
        """CommError for a failure of the communicator; QPFailed, at once, for a QP in error."""
        if self.error is None:
            for st in self.qps.values():
                qp = self.ep.qps.get(st.qpn)
                if qp is not None and qp.error:
                    self.error = (f"QP error: rank {self.rank} ({self.transport}) QP {st.k} to "
                                  f"rank {st.peer}: {qp.error}")
                    self.qp_failed = True
                    break
        if self.error:
            raise (QPFailed if self.qp_failed else CommError)(self.error)

    def _post_pending(self, st: _QPState) -> None:
        while st.pending and st.send_ring.fits(st.pending[0].size):
            frag = st.pending.popleft()
            st.send_ring.take(frag)
            try:
                msn = self.ep.post_write(st.qpn, frag.data, frag.offset, st.peer_qpn,
                                         imm=frag.handle.tag)
            except EndpointError as e:
                self.error = f"rank {self.rank}: post to rank {st.peer} failed: {e}"
                raise CommError(self.error) from None
            frag.msn = msn
            st.by_msn[msn] = frag

    def _progress(self) -> None:
        """Consume the endpoint's completions: copy received fragments out of the rings, retire
        sent ones, post what now fits."""
        for st in self.qps.values():
            qp = self.ep.qps.get(st.qpn)
            if qp is None:
                continue
            if qp.recv_completions:
                comps, qp.recv_completions = qp.recv_completions, []
                for comp in comps:
                    self._on_recv_fragment(st, comp)
            if qp.send_completions:
                comps, qp.send_completions = qp.send_completions, []
                for comp in comps:
                    if comp.status != "success":
                        continue    # flushed by a QP error, which _raise_if_failed reports
                    frag = st.by_msn.pop(comp.msn, None)
                    if frag is None:
                        continue
                    frag.done = True
                    frag.data = None
                    h = frag.handle
                    h.data -= 1
                    if h.data == 0:
                        h.data = None
                        h.done = True
                st.send_ring.release_done()
            if st.pending:
                self._post_pending(st)

    def _on_recv_fragment(self, st: _QPState, comp) -> None:
        size = comp.bytes
        off = st.recv_head if st.recv_head + size <= self.ring_bytes else 0
        st.recv_head = off + size
        if size < FRAG.size:
            self.error = f"rank {self.rank}: runt fragment ({size} B) from rank {st.peer}"
            return
        tag, length, frag_off, frag_len = FRAG.unpack_from(st.recv_ring, off)
        if frag_len != size - FRAG.size or frag_off + frag_len > length or tag != comp.imm:
            self.error = (f"rank {self.rank}: corrupt fragment from rank {st.peer} QP {st.k}: "
                          f"tag {tag} imm {comp.imm} len {length} off {frag_off} frag {frag_len}")
            return
        inc = st.incoming
        if inc is None or frag_off == 0:
            key = (st.peer, tag)
            posted = self.posted.get(key)
            handle = posted.popleft() if posted else None
            inc = _Incoming(tag, length, handle)
            if handle is None:
                self.partial_unmatched[key].append(inc)
            st.incoming = inc
        if inc.tag != tag or frag_off != inc.got:
            self.error = (f"rank {self.rank}: fragment out of order from rank {st.peer}: tag "
                          f"{tag} offset {frag_off}, expected tag {inc.tag} offset {inc.got}")
            return
        body = off + FRAG.size
        inc.buf[frag_off:frag_off + frag_len] = st.recv_ring[body:body + frag_len]
        inc.got += frag_len
        if inc.got < inc.length:
            return
        st.incoming = None
        key = (st.peer, tag)
        if inc.handle is not None:
            inc.handle.complete(self.rank, inc.buf)     # a wrong length stays in handle.error
        else:
            self.partial_unmatched[key].remove(inc)
            self.unexpected[key].append(inc.buf)

def create(transport: str, rank: int, config: WorkerConfig, *,
           ports: dict | None = None) -> MRCComm:
    """Factory used by traffic.workload.comm.create_communicator, from the worker config's world_size,
    hosts, qps_per_peer, fabric, routing, trimming, log_dir, goodput_interval_ms, control_dir
    and mrc settings (ring_bytes, fragment_bytes, linger_s, connect_timeout_s; endpoint and qp:
    EndpointConfig and MRCConfig fields). `ports` replaces the NIC sockets (tests)."""
    mrc = config.mrc
    hosts = [int(h.lstrip("h")) for h in config.hosts]
    ep_cfg = {"host": hosts[rank], "fabric": config.fabric, "routing": config.routing,
              "event_log": f"{config.log_dir}/endpoint-h{hosts[rank]}.jsonl",
              "goodput_interval_ms": config.goodput_interval_ms}
    ep_cfg.update(mrc.endpoint)
    # [mrc.qp], this host's [mrc.host_qp.<host>] over it, and [options] trimming
    ep_cfg["qp"] = {**mrc.qp, **mrc.host_qp.get(f"h{hosts[rank]}", {}),
                    "trimming": config.trimming}
    if config.control_dir:
        # the runner's control plane (denylist, path prober counts) reaches the endpoint here
        ep_cfg["control_socket"] = f"{config.control_dir}/h{hosts[rank]}.sock"
    endpoint = Endpoint(EndpointConfig.from_dict(ep_cfg), ports=ports)
    if ep_cfg.get("control_socket"):
        endpoint.control_server = ControlServer(endpoint, ep_cfg["control_socket"])
    try:
        return MRCComm(rank, config.world_size, endpoint, transport, config.qps_per_peer,
                       ring_bytes=_or(mrc.ring_bytes, DEFAULT_RING_BYTES),
                       fragment_bytes=_or(mrc.fragment_bytes, DEFAULT_FRAGMENT_BYTES),
                       connect_timeout_s=_or(mrc.connect_timeout_s, 60.0),
                       hosts=hosts,
                       linger_s=_or(mrc.linger_s, 0.3))
    except BaseException:
        if ep_cfg.get("control_socket"):
            endpoint.control_server.close()
        endpoint.close()
        raise


def _or(value, default):
    """A setting the worker config leaves unset (None) takes the communicator's default."""
    return default if value is None else value
