"""Which of the endpoint's file descriptors are readable, waiting at most until its next deadline.

The wait's timeout is every timer's precision. poll(2) and epoll_wait(2) take their timeout in
whole milliseconds (Python rounds a fraction up), so a deadline 0.3 ms away is served about
1 ms later: up to 1 ms of wall time on every timer, which at time scale k is 1/k ms of emulated
time, and at any k an error the protocol's RTO, pacing and delayed ACKs carry. select(2) takes
a struct timeval (microseconds); the kernel then wakes the task within its timer slack (50 us
by default). So the wait is select() while every fd fits its fixed-size set (FD_SETSIZE), and
poll() beyond that, where a wider set is needed more than precision.
"""
from __future__ import annotations

import math
import select

FD_SETSIZE = 1024      # glibc's fd_set: select() refuses a larger descriptor


class Readiness:
    """The fds watched for input, and a wait for them with a timeout in seconds."""

    def __init__(self):
        self._fds: list[int] = []
        self._poller = select.poll()

    def register(self, fd: int) -> None:
        if fd not in self._fds:
            self._fds.append(fd)
            self._poller.register(fd, select.POLLIN)

    def unregister(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            self._poller.unregister(fd)

    @property
    def precise(self) -> bool:
        """True when the wait's timeout has microsecond precision (select)."""
        return all(fd < FD_SETSIZE for fd in self._fds)

    def wait(self, timeout_s: float) -> list[int]:
        """The registered fds that are readable (or closed: a read then says so) within
        timeout_s seconds (0: do not wait)."""
        timeout_s = max(0.0, timeout_s)
        if self.precise:
            return select.select(self._fds, [], [], timeout_s)[0]
        return [fd for fd, _ in self._poller.poll(math.ceil(timeout_s * 1000))]
