"""A fake monotonic clock for driving the pure transport in tests and simulations.

The transport objects never read a clock: the caller passes now_ns. Real endpoints pass
time.monotonic_ns(); tests and tests/helpers/simnet.py pass FakeClock.now_ns.
"""
from __future__ import annotations


class FakeClock:
    def __init__(self, start_ns: int = 0):
        self.now_ns = int(start_ns)

    def advance(self, delta_ns: int) -> int:
        if delta_ns < 0:
            raise ValueError(f"a clock cannot go backwards (delta {delta_ns} ns)")
        self.now_ns += int(delta_ns)
        return self.now_ns

    def advance_to(self, t_ns: int) -> int:
        if t_ns < self.now_ns:
            raise ValueError(f"a clock cannot go backwards ({t_ns} < {self.now_ns})")
        self.now_ns = int(t_ns)
        return self.now_ns

    def __call__(self) -> int:
        return self.now_ns
