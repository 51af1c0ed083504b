"""Collectives on numpy float32 buffers, written only against traffic.comm.Communicator.

Ring algorithms as in NCCL/Baidu ring all-reduce: reduce-scatter then all-gather, each
W-1 neighbour steps, so every link of the ring carries 2(W-1)/W of the buffer. Buffers whose
length is not divisible by the world size are split like numpy.array_split (first chunks one
element longer). Each chunk is further split into `qps` segments, segment i on QP i, so a
transport with several QPs per peer (MRC: several EVs/planes; TCP: several connections) keeps
them all busy. Every segment has its own tag: tag = tag_base + step * qps + segment.

Tags: callers pass tag_base so consecutive collectives never share tags; tag_for_iteration()
gives each iteration a disjoint range.
"""
from __future__ import annotations

import numpy as np

from traffic.comm import Communicator

DTYPE = np.float32
TAG_STEP_SPACE = 1 << 16          # tags per collective call (steps * qps must fit)
RELEASE = np.zeros(1, dtype=np.float32)   # the incast target's "iteration done" message

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall", "sendrecv", "incast")


def tag_for_iteration(iteration: int) -> int:
    """A tag range of its own for each iteration (wraps after 65536 iterations)."""
    return (iteration % (1 << 16)) * TAG_STEP_SPACE


def chunk_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """(start, stop) of `parts` near-equal chunks of n elements (numpy.array_split layout)."""
    base, extra = divmod(n, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def _check(comm: Communicator, buf: np.ndarray, qps: int) -> None:
    if buf.dtype != DTYPE or buf.ndim != 1 or not buf.flags.c_contiguous:
        raise ValueError(f"buffers must be 1-D contiguous float32, got {buf.dtype} ndim={buf.ndim}")
    if not 1 <= qps <= comm.qps_per_peer:
        raise ValueError(f"qps={qps} but the communicator has {comm.qps_per_peer} QPs per peer")


def _post_segments(comm, send_peer, send_arr, recv_peer, recv_count, tag, qps):
    """Post irecv segments (first, so data has somewhere to go) then isend segments."""
    recvs, sends = [], []
    for seg, (a, b) in enumerate(chunk_bounds(recv_count, qps)):
        if b > a:
            recvs.append((a, b, comm.irecv(recv_peer, (b - a) * 4, tag + seg, qp=seg)))
    if send_arr is not None:
        for seg, (a, b) in enumerate(chunk_bounds(len(send_arr), qps)):
            if b > a:
                sends.append(comm.isend(send_peer, send_arr[a:b], tag + seg, qp=seg))
    return recvs, sends


def _gather_segments(recvs, out: np.ndarray, add: bool) -> None:
    for a, b, handle in recvs:
        part = np.frombuffer(handle.data, dtype=DTYPE)
        if add:
            out[a:b] += part
        else:
            out[a:b] = part


def _ring_step(comm, send_arr, recv_out, tag, qps, timeout_s, add):
    right = (comm.rank + 1) % comm.world_size
    left = (comm.rank - 1) % comm.world_size
    recvs, sends = _post_segments(comm, right, send_arr, left, len(recv_out), tag, qps)
    comm.wait([h for _, _, h in recvs] + sends, timeout_s)
    _gather_segments(recvs, recv_out, add)


def reduce_scatter(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
                   timeout_s: float | None = None) -> np.ndarray:
    """Ring reduce-scatter, in place. Afterwards buf[chunk r] on rank r holds the sum over all
    ranks of that chunk; returns that view. Other chunks hold partial sums."""
    _check(comm, buf, qps)
    w, r = comm.world_size, comm.rank
    bounds = chunk_bounds(len(buf), w)
    for step in range(w - 1):
        sa, sb = bounds[(r - step - 1) % w]
        ra, rb = bounds[(r - step - 2) % w]
        _ring_step(comm, buf[sa:sb], buf[ra:rb], tag_base + step * qps, qps, timeout_s, add=True)
    a, b = bounds[r]
    return buf[a:b]


def allgather(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
              timeout_s: float | None = None) -> np.ndarray:
    """Ring all-gather, in place: rank r contributes buf[chunk r]; afterwards every rank holds
    every chunk. Returns buf."""
    _check(comm, buf, qps)
    w, r = comm.world_size, comm.rank
    bounds = chunk_bounds(len(buf), w)
    for step in range(w - 1):
        sa, sb = bounds[(r - step) % w]
        ra, rb = bounds[(r - step - 1) % w]
        _ring_step(comm, buf[sa:sb], buf[ra:rb], tag_base + step * qps, qps, timeout_s, add=False)
    return buf


def allreduce(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
              timeout_s: float | None = None) -> np.ndarray:
    """Ring all-reduce (sum), in place: reduce-scatter then all-gather. Returns buf."""
    reduce_scatter(comm, buf, qps=qps, tag_base=tag_base, timeout_s=timeout_s)
    allgather(comm, buf, qps=qps, tag_base=tag_base + comm.world_size * qps, timeout_s=timeout_s)
    return buf


def alltoall(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
             timeout_s: float | None = None) -> np.ndarray:
    """All-to-all: chunk j of rank i's buf goes to rank j. Returns a new array: the W blocks
    received by rank r (block i = chunk r of rank i), each len(chunk r) long."""
    _check(comm, buf, qps)
    w, r = comm.world_size, comm.rank
    bounds = chunk_bounds(len(buf), w)
    mine = bounds[r][1] - bounds[r][0]
    out = np.empty(mine * w, dtype=DTYPE)
    out[r * mine:(r + 1) * mine] = buf[bounds[r][0]:bounds[r][1]]
    posted = []
    for peer in range(w):
        if peer == r:
            continue
        sa, sb = bounds[peer]
        recvs, sends = _post_segments(comm, peer, buf[sa:sb], peer, mine, tag_base, qps)
        posted.append((peer, recvs, sends))
    comm.wait([h for _, recvs, sends in posted for h in [x[2] for x in recvs] + sends], timeout_s)
    for peer, recvs, _ in posted:
        _gather_segments(recvs, out[peer * mine:(peer + 1) * mine], add=False)
    return out


def sendrecv(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
             timeout_s: float | None = None) -> np.ndarray:
    """Shift: send buf to rank r+1 and receive rank r-1's buf, concurrently. Returns the
    received array."""
    _check(comm, buf, qps)
    out = np.empty_like(buf)
    _ring_step(comm, buf, out, tag_base, qps, timeout_s, add=False)
    return out


def incast(comm: Communicator, buf: np.ndarray, *, target: int = 0,
           victim: tuple[int, int] | None = None, qps: int = 1, tag_base: int = 0,
           timeout_s: float | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """N-to-1: every rank except `target` sends buf to `target`, which sums what it receives.
    Optional victim flow (src, dst): src also sends buf to dst (a neighbour of the target, to
    see whether the incast hurts traffic that only shares part of its path).
    Returns (sum at the target or None, victim payload at dst or None).

    Iterations are synchronised: when the target has everything it releases every other rank
    with a 4-byte message, and they wait for it. Without the release, senders that finish
    early start the next iteration while slower ones are still sending, the ranks drift apart,
    and an iteration's span (first start to last end) grew threefold over 20 iterations for
    every transport: it measured the drift, not the incast."""
    _check(comm, buf, qps)
    w, r = comm.world_size, comm.rank
    if not 0 <= target < w:
        raise ValueError(f"incast target {target} out of range 0..{w - 1}")
    if victim is not None:
        vs, vd = victim
        if not (0 <= vs < w and 0 <= vd < w) or vs == vd or vd == target:
            raise ValueError(f"bad victim flow {victim}: ranks must differ, be < {w}, "
                             f"and the destination must not be the incast target {target}")
    n = len(buf)
    victim_tag = tag_base + qps
    release_tag = tag_base + 2 * qps
    handles, incoming = [], []
    if r != target:
        handles.append(comm.irecv(target, RELEASE.nbytes, release_tag, qp=0))
    if r == target:
        for peer in range(w):
            if peer != r:
                recvs, _ = _post_segments(comm, None, None, peer, n, tag_base, qps)
                incoming.append(recvs)
                handles += [h for _, _, h in recvs]
    else:
        _, sends = _post_segments(comm, target, buf, target, 0, tag_base, qps)
        handles += sends
    victim_recvs = []
    if victim is not None and r == victim[1]:
        victim_recvs, _ = _post_segments(comm, None, None, victim[0], n, victim_tag, qps)
        handles += [h for _, _, h in victim_recvs]
    if victim is not None and r == victim[0]:
        _, sends = _post_segments(comm, victim[1], buf, victim[1], 0, victim_tag, qps)
        handles += sends
    comm.wait(handles, timeout_s)
    if r == target:
        comm.wait([comm.isend(peer, RELEASE, release_tag, qp=0) for peer in range(w)
                   if peer != r], timeout_s)
    total = None
    if r == target:
        total = np.zeros(n, dtype=DTYPE)
        for recvs in incoming:
            _gather_segments(recvs, total, add=True)
    got = None
    if victim_recvs:
        got = np.empty(n, dtype=DTYPE)
        _gather_segments(victim_recvs, got, add=False)
    return total, got


# ---------------------------------------------------------------- inputs and exact results


def make_input(rank: int, n: int, iteration: int = 0) -> np.ndarray:
    """Small integers (< 64), so every float32 sum over up to 2^18 ranks is exact."""
    idx = np.arange(n, dtype=np.int64)
    return ((idx * 7 + rank * 13 + iteration * 5) % 61 + 1).astype(DTYPE)


def expected_sum(world_size: int, n: int, iteration: int = 0,
                 ranks: list[int] | None = None) -> np.ndarray:
    ranks = range(world_size) if ranks is None else ranks
    total = np.zeros(n, dtype=np.int64)
    for r in ranks:
        total += make_input(r, n, iteration).astype(np.int64)
    return total.astype(DTYPE)


def run_and_verify(comm: Communicator, collective: str, n: int, iteration: int, *, qps: int = 1,
                   timeout_s: float | None = None, target: int = 0,
                   victim: tuple[int, int] | None = None) -> tuple[bool, str]:
    """Run one collective on this rank's deterministic input and compare with the exact
    expected result. Returns (ok, message naming the first mismatch). Used by the worker."""
    w, r = comm.world_size, comm.rank
    buf = make_input(r, n, iteration)
    tag = tag_for_iteration(iteration)
    kw = dict(qps=qps, tag_base=tag, timeout_s=timeout_s)
    bounds = chunk_bounds(n, w)
    if collective == "allreduce":
        checks = [("result", allreduce(comm, buf, **kw), expected_sum(w, n, iteration))]
    elif collective == "reduce_scatter":
        a, b = bounds[r]
        checks = [("chunk", reduce_scatter(comm, buf, **kw), expected_sum(w, n, iteration)[a:b])]
    elif collective == "allgather":
        expect = np.empty(n, dtype=DTYPE)
        for peer, (a, b) in enumerate(bounds):
            expect[a:b] = make_input(peer, n, iteration)[a:b]
        checks = [("result", allgather(comm, buf, **kw), expect)]
    elif collective == "alltoall":
        a, b = bounds[r]
        expect = np.concatenate([make_input(peer, n, iteration)[a:b] for peer in range(w)])
        checks = [("result", alltoall(comm, buf, **kw), expect)]
    elif collective == "sendrecv":
        checks = [("received", sendrecv(comm, buf, **kw), make_input((r - 1) % w, n, iteration))]
    elif collective == "incast":
        total, got = incast(comm, buf, target=target, victim=victim, **kw)
        checks = []
        if total is not None:
            others = [p for p in range(w) if p != target]
            checks.append(("incast sum", total, expected_sum(w, n, iteration, others)))
        if got is not None:
            checks.append(("victim payload", got, make_input(victim[0], n, iteration)))
    else:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    for what, got, expect in checks:
        if got.shape != expect.shape:
            return False, f"{what}: shape {got.shape} != expected {expect.shape}"
        bad = np.flatnonzero(got != expect)
        if len(bad):
            i = int(bad[0])
            return False, (f"{collective} {what} mismatch on rank {r}, iteration {iteration}: "
                           f"{len(bad)} of {len(expect)} elements wrong, first at index {i}: "
                           f"got {got[i]!r}, expected {expect[i]!r}")
    return True, "ok"


def bytes_moved(collective: str, n: int, world_size: int) -> int:
    """Payload bytes this rank sends in one call (for the iteration event's `bytes`)."""
    w, size = world_size, n * 4
    if collective == "allreduce":
        return 2 * (w - 1) * size // w
    if collective in ("reduce_scatter", "allgather", "alltoall"):
        return (w - 1) * size // w
    return size
