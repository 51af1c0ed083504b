"""Collectives on numpy float32 buffers, written only against traffic.workload.comm.Communicator.

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

import threading
from collections import OrderedDict

import numpy as np

from traffic.workload.comm import Communicator
from traffic.workload.worker_config import COLLECTIVES

DTYPE = np.float32
TAG_STEP_SPACE = 1 << 16          # tags per collective call (steps * qps must fit)
RELEASE = np.zeros(1, dtype=np.float32)   # the incast target's "iteration done" message



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


def bisection_peer(rank: int, world_size: int) -> tuple[str, int]:
    """("send", dst) or ("recv", src) of `rank` in a bisection: rank r of the first half sends
    to rank r + W/2. Ranks are hosts in group order, so on a fabric of two T0 groups every flow
    crosses the spines: W/2 flows that meet on the first group's uplinks and nowhere else."""
    if world_size < 2 or world_size % 2:
        raise ValueError(f"bisection needs an even number of ranks >= 2, got {world_size}")
    half = world_size // 2
    return ("send", rank + half) if rank < half else ("recv", rank - half)


def bisection(comm: Communicator, buf: np.ndarray, *, qps: int = 1, tag_base: int = 0,
              timeout_s: float | None = None) -> np.ndarray | None:
    """One-way flows across the middle: the first half of the ranks each send buf to their
    partner in the second half (bisection_peer). Returns the received array on a receiver,
    None on a sender. No other traffic, so each receiver's goodput is its flow's goodput."""
    _check(comm, buf, qps)
    role, peer = bisection_peer(comm.rank, comm.world_size)
    if role == "send":
        _, sends = _post_segments(comm, peer, buf, peer, 0, tag_base, qps)
        comm.wait(sends, timeout_s)
        return None
    out = np.empty_like(buf)
    recvs, _ = _post_segments(comm, None, None, peer, len(buf), tag_base, qps)
    comm.wait([h for _, _, h in recvs], timeout_s)
    _gather_segments(recvs, out, add=False)
    return out


def incast_senders(world_size: int, target: int, victim: tuple[int, int] | None = None,
                   victim_only: bool = False) -> list[int]:
    """Ranks that send to the incast target: all but the target, and with `victim_only` also
    but the victim flow's two ranks (they then carry the victim flow and nothing else, so the
    victim's goodput measures the fabric, not a host shared with an incast sender)."""
    skip = {target}
    if victim_only and victim is not None:
        skip |= set(victim)
    return [r for r in range(world_size) if r not in skip]


def victim_messages(world_size: int, target: int, victim: tuple[int, int] | None,
                    victim_only: bool) -> int:
    """Copies of buf the victim flow carries per iteration: one; with `victim_only`, as many
    as the incast target receives, so an unhindered victim keeps its link busy for the whole
    ideal iteration (the target's link takes senders x buf in that time) and its goodput is
    comparable with the link rate instead of idling until the release."""
    if victim is None:
        return 0
    return len(incast_senders(world_size, target, victim, True)) if victim_only else 1


def incast(comm: Communicator, buf: np.ndarray, *, target: int = 0,
           victim: tuple[int, int] | None = None, victim_only: bool = False, qps: int = 1,
           tag_base: int = 0,
           timeout_s: float | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """N-to-1: every rank except `target` sends buf to `target`, which sums what it receives.
    Optional victim flow (src, dst): src also sends buf to dst (a neighbour of the target, to
    see whether the incast hurts traffic that only shares part of its path). `victim_only`:
    the victim's ranks do not take part in the incast (incast_senders) and the victim flow
    carries victim_messages copies of buf (the payload returned is their concatenation).
    Returns (sum at the target or None, victim payload at dst or None).

    Iterations are synchronised: when the target has everything it releases every other rank
    with a 4-byte message, and they wait for it. Without the release, senders that finish
    early start the next iteration while slower ones are still sending, the ranks drift apart,
    and an iteration's span (first start to last end) would measure the drift, not the
    incast."""
    _check(comm, buf, qps)
    w, r = comm.world_size, comm.rank
    if not 0 <= target < w:
        raise ValueError(f"incast target {target} out of range 0..{w - 1}")
    if victim is not None:
        vs, vd = victim
        if not (0 <= vs < w and 0 <= vd < w) or vs == vd or vd == target:
            raise ValueError(f"bad victim flow {victim}: ranks must differ, be < {w}, "
                             f"and the destination must not be the incast target {target}")
        if victim_only and vs == target:
            raise ValueError(f"victim_only: the victim source {vs} is the incast target")
    senders = incast_senders(w, target, victim, victim_only)
    copies = victim_messages(w, target, victim, victim_only)
    n = len(buf)
    release_tag = tag_base + qps
    victim_tags = [tag_base + (2 + k) * qps for k in range(copies)]
    handles, incoming = [], []
    if r != target:
        handles.append(comm.irecv(target, RELEASE.nbytes, release_tag, qp=0))
    if r == target:
        for peer in senders:
            recvs, _ = _post_segments(comm, None, None, peer, n, tag_base, qps)
            incoming.append(recvs)
            handles += [h for _, _, h in recvs]
    elif r in senders:
        _, sends = _post_segments(comm, target, buf, target, 0, tag_base, qps)
        handles += sends
    victim_recvs = []
    if victim is not None and r == victim[1]:
        victim_recvs = [_post_segments(comm, None, None, victim[0], n, tag, qps)[0]
                        for tag in victim_tags]
        handles += [h for recvs in victim_recvs for _, _, h in recvs]
    if victim is not None and r == victim[0]:
        for tag in victim_tags:
            _, sends = _post_segments(comm, victim[1], buf, victim[1], 0, tag, qps)
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
        got = np.empty(n * copies, dtype=DTYPE)
        for k, recvs in enumerate(victim_recvs):
            _gather_segments(recvs, got[k * n:(k + 1) * n], add=False)
    return total, got


# ---------------------------------------------------------------- inputs and exact results

# float32 holds every integer up to 2^24 exactly, so sums of non-negative integer inputs are
# exact as long as world_size * (largest input) <= 2^24, whatever the order of the additions.
EXACT_INT_BITS = 24
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)      # SplitMix64 finalizer constants (Steele, Lea and
_MIX_2 = np.uint64(0x94D049BB133111EB)      # Flood, OOPSLA 2014): a bijection of 64-bit words
_RANK_SHIFT = np.uint64(32)
MAX_ELEMENTS, MAX_RANKS, ITERATION_PERIOD = 1 << 32, 1 << 16, 1 << 16
# Odd, so multiplying by it permutes the residues mod 2^bits: iterations less than
# min(ITERATION_PERIOD, 2^bits) apart get different offsets (the 32-bit golden-ratio constant).
_ITERATION_STRIDE = 0x9E3779B1
# Hashed per-rank bases kept for the next iterations (the same (rank, n, bits) every
# iteration): up to this many bytes, least recently used dropped first.
BASE_CACHE_BYTES = 256 << 20
_base_cache: "OrderedDict[tuple[int, int, int], np.ndarray]" = OrderedDict()
_base_cache_lock = threading.Lock()


def value_bits(world_size: int) -> int:
    """Bits of each input value: the most for which a sum over world_size ranks stays exact."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    return EXACT_INT_BITS - (world_size - 1).bit_length()


def _hashed_base(rank: int, n: int, bits: int) -> np.ndarray:
    """Element i: the top `bits` bits of a bijective mix of the word (rank, i), as uint32
    (read-only, cached: it does not depend on the iteration)."""
    key = (rank, n, bits)
    with _base_cache_lock:
        base = _base_cache.get(key)
        if base is not None:
            _base_cache.move_to_end(key)
            return base
    z = np.arange(n, dtype=np.uint64) | (np.uint64(rank) << _RANK_SHIFT)
    z ^= z >> np.uint64(30)
    z *= _MIX_1
    z ^= z >> np.uint64(27)
    z *= _MIX_2
    z ^= z >> np.uint64(31)
    base = (z >> np.uint64(64 - bits)).astype(np.uint32)
    base.setflags(write=False)
    if base.nbytes <= BASE_CACHE_BYTES:
        with _base_cache_lock:
            _base_cache[key] = base
            while sum(b.nbytes for b in _base_cache.values()) > BASE_CACHE_BYTES:
                _base_cache.popitem(last=False)
    return base


def iteration_offset(iteration: int, bits: int) -> int:
    """What iteration `iteration` adds (mod 2^bits) to every hashed base."""
    return ((iteration % ITERATION_PERIOD) * _ITERATION_STRIDE) & ((1 << bits) - 1)


def _values(rank: int, n: int, iteration: int, bits: int) -> np.ndarray:
    """make_input's values as uint32, 1..2^bits."""
    v = _hashed_base(rank, n, bits) + np.uint32(iteration_offset(iteration, bits))
    v &= np.uint32((1 << bits) - 1)
    v += np.uint32(1)
    return v


def make_input(rank: int, n: int, iteration: int, world_size: int) -> np.ndarray:
    """Rank `rank`'s input of one iteration: element i is (h(rank, i) + c(iteration)) mod
    2^bits, plus 1, with bits = value_bits(world_size), so float32 sums over the ranks are exact.

    h is the top bits of a bijective mix (SplitMix64's finalizer) of the word (rank, i), packed
    without overlap: no two (rank, i) share a word, and the values show no period in i or rank
    (a formula such as (7 i + 13 rank + 5 iteration) mod 61 repeats every 61 of each). So data
    put at the wrong element or from the wrong rank is caught unless every misplaced element
    collides by chance (probability 2^-bits each: 2^-22 on 4 ranks). c(iteration) is a
    multiple of an odd constant: data from another iteration (less than min(2^16, 2^bits)
    iterations away) differs by the same non-zero amount mod 2^bits at EVERY element, so it is
    always caught. Iterations 2^16 apart reuse values, as they reuse tags (tag_for_iteration).

    h does not depend on the iteration, so it is hashed once per (rank, n) and cached: an
    iteration's input then costs an add and a mask. The expected all-reduce result hashes
    every rank's input, so hashing per iteration would cost the world size times a buffer's
    numpy per host per iteration, on the cores that run the endpoints and the switches too."""
    if not 0 <= rank < MAX_RANKS or not 0 <= n <= MAX_ELEMENTS:
        raise ValueError(f"make_input covers ranks < {MAX_RANKS} and up to {MAX_ELEMENTS} "
                         f"elements, got rank {rank}, n {n}")
    return _values(rank, n, iteration, value_bits(world_size)).astype(DTYPE)


def expected_sum(world_size: int, n: int, iteration: int,
                 ranks: list[int] | None = None) -> np.ndarray:
    """Exact sum of the ranks' inputs (all ranks by default): each value is at most
    2^bits and world_size x 2^bits <= 2^24, so the uint32 sum cannot wrap."""
    ranks = range(world_size) if ranks is None else ranks
    bits = value_bits(world_size)
    total = np.zeros(n, dtype=np.uint32)
    for r in ranks:
        if not 0 <= r < MAX_RANKS:
            raise ValueError(f"expected_sum covers ranks < {MAX_RANKS}, got {r}")
        total += _values(r, n, iteration, bits)
    return total.astype(DTYPE)


def expected_results(collective: str, rank: int, world_size: int, n: int, iteration: int, *,
                     target: int = 0, victim: tuple[int, int] | None = None,
                     victim_only: bool = False) -> dict:
    """What `rank` must hold after one call of `collective` on make_input buffers, by name
    (the names run_collective returns)."""
    w, r = world_size, rank
    bounds = chunk_bounds(n, w)
    a, b = bounds[r]

    def inp(peer):
        return make_input(peer, n, iteration, w)

    if collective == "allreduce":
        return {"result": expected_sum(w, n, iteration)}
    if collective == "reduce_scatter":
        return {"chunk": expected_sum(w, n, iteration)[a:b]}
    if collective == "allgather":
        expect = np.empty(n, dtype=DTYPE)
        for peer, (pa, pb) in enumerate(bounds):
            expect[pa:pb] = inp(peer)[pa:pb]
        return {"result": expect}
    if collective == "alltoall":
        return {"result": np.concatenate([inp(peer)[a:b] for peer in range(w)])}
    if collective == "sendrecv":
        return {"received": inp((r - 1) % w)}
    if collective == "bisection":
        role, peer = bisection_peer(r, w)
        return {"received": inp(peer)} if role == "recv" else {}
    if collective == "incast":
        out = {}
        if r == target:
            out["incast sum"] = expected_sum(w, n, iteration,
                                             incast_senders(w, target, victim, victim_only))
        if victim is not None and r == victim[1]:
            out["victim payload"] = np.tile(inp(victim[0]),
                                            victim_messages(w, target, victim, victim_only))
        return out
    raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")


def run_collective(comm: Communicator, collective: str, buf: np.ndarray, iteration: int, *,
                   qps: int = 1, timeout_s: float | None = None, target: int = 0,
                   victim: tuple[int, int] | None = None, victim_only: bool = False) -> dict:
    """One call of `collective` on buf (modified in place by the reductions), with the
    iteration's tags. Returns what this rank holds afterwards, named as in expected_results."""
    kw = dict(qps=qps, tag_base=tag_for_iteration(iteration), timeout_s=timeout_s)
    if collective == "allreduce":
        return {"result": allreduce(comm, buf, **kw)}
    if collective == "reduce_scatter":
        return {"chunk": reduce_scatter(comm, buf, **kw)}
    if collective == "allgather":
        return {"result": allgather(comm, buf, **kw)}
    if collective == "alltoall":
        return {"result": alltoall(comm, buf, **kw)}
    if collective == "sendrecv":
        return {"received": sendrecv(comm, buf, **kw)}
    if collective == "bisection":
        got = bisection(comm, buf, **kw)
        return {} if got is None else {"received": got}
    if collective == "incast":
        total, got = incast(comm, buf, target=target, victim=victim, victim_only=victim_only,
                            **kw)
        out = {}
        if total is not None:
            out["incast sum"] = total
        if got is not None:
            out["victim payload"] = got
        return out
    raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")


def verify(collective: str, rank: int, iteration: int, results: dict,
           expected: dict) -> tuple[bool, str]:
    """Exact comparison. Returns (ok, message naming the first mismatch)."""
    missing = sorted(set(expected) - set(results))
    extra = sorted(set(results) - set(expected))
    if missing or extra:
        return False, (f"{collective} on rank {rank}, iteration {iteration}: results "
                       f"{sorted(results)} but expected {sorted(expected)}")
    for what, expect in expected.items():
        got = results[what]
        if got.shape != expect.shape:
            return False, f"{what}: shape {got.shape} != expected {expect.shape}"
        bad = np.flatnonzero(got != expect)
        if len(bad):
            i = int(bad[0])
            return False, (f"{collective} {what} mismatch on rank {rank}, iteration {iteration}: "
                           f"{len(bad)} of {len(expect)} elements wrong, first at index {i}: "
                           f"got {got[i]!r}, expected {expect[i]!r}")
    return True, "ok"


def wrong_elements(results: dict, expected: dict) -> int:
    """Elements of the expected results that the results do not hold exactly (nccl-tests'
    #wrong): a missing result or one of the wrong shape counts every expected element."""
    wrong = 0
    for what, expect in expected.items():
        got = results.get(what)
        if got is None or got.shape != expect.shape:
            wrong += int(expect.size)
        else:
            wrong += int(np.count_nonzero(got != expect))
    return wrong


def run_and_verify(comm: Communicator, collective: str, n: int, iteration: int, *, qps: int = 1,
                   timeout_s: float | None = None, target: int = 0,
                   victim: tuple[int, int] | None = None,
                   victim_only: bool = False) -> tuple[bool, str]:
    """Run one collective on this rank's input and compare with the exact expected result.
    Returns (ok, message naming the first mismatch)."""
    w, r = comm.world_size, comm.rank
    expected = expected_results(collective, r, w, n, iteration, target=target, victim=victim,
                                victim_only=victim_only)
    results = run_collective(comm, collective, make_input(r, n, iteration, w), iteration, qps=qps,
                             timeout_s=timeout_s, target=target, victim=victim,
                             victim_only=victim_only)
    return verify(collective, r, iteration, results, expected)


# ---------------------------------------------------------------- sizes


def nccl_size_bytes(collective: str, n: int) -> int:
    """NCCL's S of one call (nccl-tests doc/PERFORMANCE.md: algbw = S / t) for a per-rank
    buffer of n float32: the buffer itself for every collective here. All-reduce: the
    buffer; reduce-scatter: the total input (recvcount x n ranks, which is our buffer, each
    rank keeping one chunk); all-gather: the total output (sendcount x n, our buffer, each rank
    contributing one chunk); all-to-all: the total size; send/recv and bisection: the message
    (each flow's); incast: the message each sender sends to the target."""
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    return n * DTYPE().itemsize


def bytes_moved(collective: str, n: int, world_size: int, rank: int = 0, target: int = 0,
               victim: tuple[int, int] | None = None, victim_only: bool = False) -> int:
    """Payload bytes `rank` sends in one call (the iteration event's `bytes`), not counting
    the incast target's 4-byte release messages."""
    w, size = world_size, n * DTYPE().itemsize
    if collective == "allreduce":
        return 2 * (w - 1) * size // w
    if collective in ("reduce_scatter", "allgather", "alltoall"):
        return (w - 1) * size // w
    if collective == "bisection":
        return size if bisection_peer(rank, w)[0] == "send" else 0
    if collective == "incast":
        sent = size if rank in incast_senders(w, target, victim, victim_only) else 0
        copies = victim_messages(w, target, victim, victim_only)
        return sent + (copies * size if victim is not None and rank == victim[0] else 0)
    return size


def bytes_received(collective: str, n: int, world_size: int, rank: int = 0, target: int = 0,
                   victim: tuple[int, int] | None = None, victim_only: bool = False) -> int:
    """Payload bytes `rank` receives in one call: in the ring collectives, all-to-all and
    send/recv every rank receives what it sends; a bisection's second half receives the
    message; the incast target receives one message from each sender, the victim flow's
    destination its copies (the target's 4-byte release messages not counted)."""
    w, size = world_size, n * DTYPE().itemsize
    if collective == "bisection":
        return size if bisection_peer(rank, w)[0] == "recv" else 0
    if collective == "incast":
        got = size * len(incast_senders(w, target, victim, victim_only)) if rank == target else 0
        copies = victim_messages(w, target, victim, victim_only)
        return got + (copies * size if victim is not None and rank == victim[1] else 0)
    return bytes_moved(collective, n, w, rank)
