"""Data put in the wrong place must fail verification, for every collective.

The earlier input formula, old(rank, i, it) = (7 i + 13 rank + 5 it) mod 61 + 1, has period 61
in each argument: 7*61, 13*61 and 5*61 are all multiples of 61, so
    old(rank, i + 61, it) = old(rank, i, it)      (element i+61 stands in for element i)
    old(rank + 61, i, it) = old(rank, i, it)      (rank r+61's data stands in for rank r's)
    old(rank, i, it + 61) = old(rank, i, it)      (iteration it+61's data for iteration it's)
A rank that sent bytes misplaced by 61 elements, ranks or iterations sent the very same bytes, so
no verification could catch it. Each case below makes one rank (rank 1) of a real in-memory world
contribute misplaced data and requires some rank's verification to fail.
"""

import numpy as np
import pytest

from traffic.workload import collectives as C
from tests.helpers.rank_threads import run_hub_world

WORLD = 4
N = 61 * WORLD * 2          # a multiple of 61 in every chunk: the old pattern wraps cleanly
ITERATION = 3
BAD_RANK = 1
TARGET, VICTIM = 0, (3, 2)  # incast: rank 1 is a plain sender


def old_input(rank, n, iteration):
    idx = np.arange(n, dtype=np.int64)
    return ((idx * 7 + rank * 13 + iteration * 5) % 61 + 1).astype(np.float32)


def shift_elements(rank, n, it):
    return np.roll(C.make_input(rank, n, it, WORLD), 61)


def shift_ranks(by):
    return lambda rank, n, it: C.make_input(rank + by, n, it, WORLD)


def shift_iterations(by):
    return lambda rank, n, it: C.make_input(rank, n, it + by, WORLD)


MISPLACEMENTS = {
    "61 elements": shift_elements,
    "61 ranks": shift_ranks(61),
    "61 iterations": shift_iterations(61),
    "one rank": shift_ranks(1),
    "one iteration": shift_iterations(1),
}


def verdicts(collective, bad_input):
    """Every rank's (ok, message) when BAD_RANK contributes bad_input(...) instead of its input."""
    victim = VICTIM if collective == "incast" else None

    def body(comm):
        rank = comm.rank
        make = bad_input if rank == BAD_RANK else (lambda r, n, it: C.make_input(r, n, it, WORLD))
        expected = C.expected_results(collective, rank, WORLD, N, ITERATION, target=TARGET,
                                      victim=victim)
        results = C.run_collective(comm, collective, make(rank, N, ITERATION), ITERATION,
                                   timeout_s=5, target=TARGET, victim=victim)
        return C.verify(collective, rank, ITERATION, results, expected)

    return run_hub_world(WORLD, body)


def test_the_old_pattern_could_not_see_these_misplacements():
    """The arithmetic of the module docstring, checked: the misplaced bytes were identical."""
    good = old_input(BAD_RANK, N, ITERATION)
    assert np.array_equal(np.roll(good, 61), good)
    assert np.array_equal(old_input(BAD_RANK + 61, N, ITERATION), good)
    assert np.array_equal(old_input(BAD_RANK, N, ITERATION + 61), good)


@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_correct_data_verifies(collective):
    assert all(ok for ok, _ in verdicts(collective, lambda r, n, it: C.make_input(r, n, it, WORLD)))


@pytest.mark.parametrize("how", MISPLACEMENTS)
@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_misplaced_data_fails_verification(collective, how):
    results = verdicts(collective, MISPLACEMENTS[how])
    failed = [msg for ok, msg in results if not ok]
    assert failed, f"{collective}: data misplaced by {how} verified on every rank"
    assert all("mismatch" in msg for msg in failed)


@pytest.mark.parametrize("world, bits", [(1, 24), (2, 23), (4, 22), (5, 21), (256, 16), (257, 15)])
def test_input_values_keep_float32_sums_exact(world, bits):
    """float32 holds every integer up to 2^24: world x largest value must not pass it.
    By hand: 4 ranks x 2^22 = 2^24; 5 ranks need 2^21 (5 x 2^22 > 2^24); 257 ranks need 2^15."""
    assert C.value_bits(world) == bits
    values = C.make_input(world - 1, 1 << 16, 7, world)
    assert values.min() >= 1 and values.max() <= 1 << bits
    assert values.max() > 1 << (bits - 1)      # the range is used, not a small corner of it


@pytest.mark.parametrize("k", [1, 2, 61, 1000, (1 << 16) - 1])
def test_data_of_another_iteration_differs_at_every_element(k):
    """c(iteration) steps by an odd constant mod 2^bits, so two iterations less than 2^16 apart
    differ by the same non-zero amount everywhere: never a chance match, unlike a hash."""
    a = C.make_input(2, 4096, 10, WORLD)
    b = C.make_input(2, 4096, 10 + k, WORLD)
    assert (a != b).all()


def test_input_values_by_hand():
    """Rank 0, element 0 is the word 0, which SplitMix64's finalizer maps to 0, so its value is
    c(iteration) + 1: iteration 1 on 4 ranks (22 bits) gives 0x9E3779B1 mod 2^22 + 1 =
    0x3779B1 + 1 = 3635634; iteration 2 gives (2 x 0x9E3779B1) mod 2^22 + 1 = 0x2EF362 + 1."""
    assert C.make_input(0, 1, 1, 4)[0] == 3635634
    assert C.make_input(0, 1, 2, 4)[0] == 0x2EF362 + 1
    assert C.make_input(0, 1, 0, 4)[0] == 1


def test_cached_bases_are_not_changed_by_the_callers_buffers(monkeypatch):
    first = C.make_input(1, 1000, 5, WORLD)
    first[:] = 0                                     # collectives reduce into their buffers
    again = C.make_input(1, 1000, 5, WORLD)
    assert again.min() >= 1
    monkeypatch.setattr(C, "_base_cache", type(C._base_cache)())   # recomputed from scratch
    assert np.array_equal(C.make_input(1, 1000, 5, WORLD), again)


def test_base_cache_stays_within_its_byte_budget(monkeypatch):
    monkeypatch.setattr(C, "_base_cache", type(C._base_cache)())
    monkeypatch.setattr(C, "BASE_CACHE_BYTES", 3 * 4000)     # three bases of 1000 uint32
    for rank in range(6):
        C.make_input(rank, 1000, 0, 8)
    assert sum(b.nbytes for b in C._base_cache.values()) <= 3 * 4000
    assert [key[0] for key in C._base_cache] == [3, 4, 5]     # the least recently used went
    C.make_input(3, 1000, 1, 8)                      # a hit makes rank 3 the most recent
    C.make_input(6, 1000, 0, 8)
    assert [key[0] for key in C._base_cache] == [5, 3, 6]
