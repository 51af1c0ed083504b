"""The transport interface the collectives are written against, plus an in-memory transport.

One interface, several transports (in-memory for tests, kernel TCP, MRC, RoCE-like RC), so
the same collective code runs over each and the comparison is about the transport only.

Semantics (every implementation keeps them):
- Messages are matched by (peer, tag). Messages with the same (peer, tag) complete in the
  order they were sent when they travel on the same QP; collectives use a distinct tag per
  segment so they never rely on ordering across QPs.
- `qp` (keyword, optional) picks one of the `qps_per_peer` connections to the peer;
  default `tag % qps_per_peer`. Transports with a single connection ignore it.
- irecv(peer, nbytes, tag) expects exactly `nbytes`; a different length is an error of the
  wait() that completes it (it names peer, tag and both lengths).
- wait() drives the transport's progress (there is no background thread); it raises
  CommTimeout when the handles are not done within timeout_s, CommError on a QP error.
- test() reports completion without blocking (it may drive a bounded amount of progress).
"""
from __future__ import annotations

import importlib
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from typing import Iterable

from traffic.workload.worker_config import WorkerConfig

MAX_TAG = 0xFFFFFFFF
# Set when the runner has seen every rank finish (the worker's SIGUSR1): a communicator whose
# endpoint must keep acknowledging peers after its own last iteration (a peer whose last ACKs
# were lost retransmits, and only a live endpoint can answer it) lingers until then, at most
# its linger time.
RELEASED = threading.Event()


class CommError(RuntimeError):
    """A transport failed (connection reset, QP error, length mismatch)."""


class CommTimeout(CommError):
    """wait() gave up; the message names what was still pending."""


class QPFailed(CommError):
    """A queue pair went to error (its retries ran out, or the peer refused an access): what
    an RDMA job sees as a work completion with an error status. The collective fails at once,
    as NCCL's does on such a completion; waiting for it could only time out."""


class Handle:
    """One outstanding isend/irecv. `data` holds the received bytes once a recv is done."""

    __slots__ = ("kind", "peer", "tag", "nbytes", "qp", "done", "data", "error")

    def __init__(self, kind: str, peer: int, tag: int, nbytes: int, qp: int):
        self.kind = kind            # "send" | "recv"
        self.peer = peer
        self.tag = tag
        self.nbytes = nbytes
        self.qp = qp
        self.done = False
        self.data = None            # bytes-like for a completed recv
        self.error: str | None = None

    def complete(self, rank: int, data) -> bool:
        """Hand a received message to this recv (posted by `rank`). A length other than the one
        posted means the ranks disagree on the collective's layout: recorded in `error`, and
        False returned for the transport to raise or report."""
        if len(data) != self.nbytes:
            self.error = (f"rank {rank}: message from {self.peer} tag {self.tag} has "
                          f"{len(data)} bytes, receiver expected {self.nbytes}")
            return False
        self.data = data
        self.done = True
        return True

    def __repr__(self) -> str:
        state = "done" if self.done else ("error" if self.error else "pending")
        return f"<{self.kind} peer={self.peer} tag={self.tag} bytes={self.nbytes} qp={self.qp} {state}>"


class Communicator(ABC):
    """Point-to-point messaging among `world_size` ranks; see the module docstring."""

    def __init__(self, rank: int, world_size: int, qps_per_peer: int = 1):
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} out of range 0..{world_size - 1}")
        if qps_per_peer < 1:
            raise ValueError(f"qps_per_peer must be >= 1, got {qps_per_peer}")
        self.rank = rank
        self.world_size = world_size
        self.qps_per_peer = qps_per_peer

    # -- the interface

    @abstractmethod
    def isend(self, peer: int, data, tag: int = 0, *, qp: int | None = None) -> Handle: ...

    @abstractmethod
    def irecv(self, peer: int, nbytes: int, tag: int = 0, *, qp: int | None = None) -> Handle: ...

    @abstractmethod
    def wait(self, handles: Iterable[Handle], timeout_s: float | None = None) -> None: ...

    @abstractmethod
    def test(self, handle: Handle) -> bool: ...

    def close(self) -> None:
        """Release sockets/QPs. Idempotent."""

    def stats(self) -> dict:
        """Cumulative counters for goodput events: rx_bytes, tx_bytes (payload), rx_packets,
        tx_packets (packets, or messages for transports that do not see packets), retransmits."""
        return {"rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0, "retransmits": 0}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- helpers for implementations

    def _check_args(self, peer: int, tag: int, qp: int | None) -> int:
        if not 0 <= peer < self.world_size or peer == self.rank:
            raise ValueError(f"rank {self.rank}: bad peer {peer} (world size {self.world_size})")
        if not 0 <= tag <= MAX_TAG:
            raise ValueError(f"tag {tag} out of range 0..{MAX_TAG}")
        if qp is None:
            return tag % self.qps_per_peer
        if not 0 <= qp < self.qps_per_peer:
            raise ValueError(f"qp {qp} out of range 0..{self.qps_per_peer - 1}")
        return qp

    def _check_recv_args(self, peer: int, nbytes: int, tag: int, qp: int | None) -> int:
        """_check_args for irecv, plus the length it expects."""
        qp = self._check_args(peer, tag, qp)
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        return qp


def as_bytes(data) -> memoryview:
    """A flat byte view of bytes/bytearray/memoryview/numpy array (no copy when contiguous)."""
    view = memoryview(data)
    if not view.c_contiguous:
        raise ValueError("send buffers must be contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def pending_summary(handles: Iterable[Handle], limit: int = 6) -> str:
    pending = [h for h in handles if not h.done]
    text = ", ".join(repr(h) for h in pending[:limit])
    if len(pending) > limit:
        text += f", ... ({len(pending)} pending)"
    return text


# ---------------------------------------------------------------- in-memory transport


class InMemoryHub:
    """Shared mailbox of an in-memory world; one InMemoryComm per rank, usually one thread each."""

    def __init__(self, world_size: int):
        self.world_size = world_size
        self.cond = threading.Condition()
        # (src, dst, tag) -> deque of payload bytes
        self.mailbox: dict[tuple[int, int, int], deque] = defaultdict(deque)
        self.failed: str | None = None

    def comm(self, rank: int, qps_per_peer: int = 1) -> "InMemoryComm":
        return InMemoryComm(self, rank, qps_per_peer)

    def fail(self, reason: str) -> None:
        """Make every rank's wait() raise (a test thread died: do not leave peers hanging)."""
        with self.cond:
            self.failed = reason
            self.cond.notify_all()


class InMemoryComm(Communicator):
    """Copies bytes between ranks through a shared hub. Sends complete at once (eager)."""

    def __init__(self, hub: InMemoryHub, rank: int, qps_per_peer: int = 1):
        super().__init__(rank, hub.world_size, qps_per_peer)
        self.hub = hub
        self._stats = {"rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0,
                       "retransmits": 0}

    def isend(self, peer, data, tag=0, *, qp=None):
        qp = self._check_args(peer, tag, qp)
        payload = bytes(as_bytes(data))
        handle = Handle("send", peer, tag, len(payload), qp)
        with self.hub.cond:
            self.hub.mailbox[(self.rank, peer, tag)].append(payload)
            self.hub.cond.notify_all()
        handle.done = True
        self._stats["tx_bytes"] += len(payload)
        self._stats["tx_packets"] += 1
        return handle

    def irecv(self, peer, nbytes, tag=0, *, qp=None):
        qp = self._check_recv_args(peer, nbytes, tag, qp)
        return Handle("recv", peer, tag, nbytes, qp)

    def _try_complete(self, handle: Handle) -> None:
        # caller holds hub.cond
        if handle.done or handle.kind != "recv":
            return
        box = self.hub.mailbox.get((handle.peer, self.rank, handle.tag))
        if not box:
            return
        payload = box.popleft()
        if not handle.complete(self.rank, payload):
            raise CommError(handle.error)
        self._stats["rx_bytes"] += len(payload)
        self._stats["rx_packets"] += 1

    def test(self, handle):
        with self.hub.cond:
            self._try_complete(handle)
        return handle.done

    def wait(self, handles, timeout_s=None):
        handles = list(handles)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self.hub.cond:
            while True:
                if self.hub.failed:
                    raise CommError(f"rank {self.rank}: world failed: {self.hub.failed}")
                for h in handles:
                    self._try_complete(h)
                if all(h.done for h in handles):
                    return
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise CommTimeout(f"rank {self.rank}: wait timed out after {timeout_s} s; "
                                      f"pending: {pending_summary(handles)}")
                self.hub.cond.wait(timeout=remaining if remaining is not None else 1.0)

    def stats(self):
        return dict(self._stats)


# ---------------------------------------------------------------- factory

# transport name -> module that provides `create(transport, rank, config) -> Communicator`
TRANSPORT_MODULES = {"tcp": "traffic.workload.tcp_comm", "mrc": "traffic.workload.mrc_comm", "roce": "traffic.workload.mrc_comm"}


def create_communicator(transport: str, rank: int, config: WorkerConfig) -> Communicator:
    """Build the communicator for `transport` from a worker config (traffic/workload/worker_config.py).

    Imports the transport module lazily: a TCP worker does not pay for the MRC endpoint's
    imports (Scapy, numpy), nor tests for transports they do not use.
    """
    try:
        module_name = TRANSPORT_MODULES[transport]
    except KeyError:
        raise ValueError(f"unknown transport {transport!r}; known: "
                         f"{', '.join(sorted(TRANSPORT_MODULES))}") from None
    module = importlib.import_module(module_name)
    if not hasattr(module, "create"):
        raise RuntimeError(f"{module_name} has no create(transport, rank, config) function")
    return module.create(transport, rank, config)
