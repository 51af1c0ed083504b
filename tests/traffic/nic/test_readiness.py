"""The endpoint's wait for readable fds (traffic/nic/readiness.py), on real pipes."""
import os
import resource
import time

import pytest

from traffic.nic.readiness import FD_SETSIZE, Readiness


@pytest.fixture
def pipes():
    made = [os.pipe() for _ in range(2)]
    yield made
    for r, w in made:
        for fd in (r, w):
            try:
                os.close(fd)
            except OSError:
                pass


def test_only_the_readable_fds_come_back_and_an_unregistered_one_never(pipes):
    (r1, w1), (r2, w2) = pipes
    ready = Readiness()
    ready.register(r1)
    ready.register(r2)
    ready.register(r2)                    # twice is once
    assert ready.precise and ready.wait(0) == []
    os.write(w2, b"x")
    assert ready.wait(0) == [r2]
    os.write(w1, b"x")
    assert sorted(ready.wait(0.5)) == sorted([r1, r2])
    ready.unregister(r2)
    ready.unregister(r2)                  # not watched: nothing to do
    assert ready.wait(0) == [r1]
    assert ready.wait(-1.0) == [r1]       # a deadline already past: no wait


def test_a_closed_writer_wakes_the_wait_so_the_read_can_say_so(pipes):
    (r1, w1), _ = pipes
    ready = Readiness()
    ready.register(r1)
    os.close(w1)
    assert ready.wait(1.0) == [r1] and os.read(r1, 1) == b""


def test_an_fd_beyond_select_s_set_is_still_watched(pipes):
    (r1, w1), _ = pipes
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= FD_SETSIZE + 8:
        pytest.skip(f"RLIMIT_NOFILE's hard limit {hard} allows no fd beyond {FD_SETSIZE}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, FD_SETSIZE + 16), hard))
    try:
        high = os.dup2(r1, FD_SETSIZE + 8)
        try:
            ready = Readiness()
            ready.register(high)
            assert not ready.precise      # select() would refuse it: poll() watches it
            assert ready.wait(0) == []
            os.write(w1, b"x")
            assert ready.wait(0.5) == [high]
        finally:
            os.close(high)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_wait_shorter_than_a_millisecond_is_not_rounded_up_to_one(pipes):
    """poll() would sleep at least 1 ms for a 0.2 ms timeout (its whole-millisecond timeout,
    rounded up): never less. The shortest of 20 waits shows the precision whatever the load,
    since load only lengthens a wait."""
    (r1, _), _ = pipes
    ready = Readiness()
    ready.register(r1)
    waits = []
    for _ in range(20):
        start = time.monotonic_ns()
        assert ready.wait(0.0002) == []
        waits.append(time.monotonic_ns() - start)
    assert 200_000 <= min(waits) < 900_000, waits
