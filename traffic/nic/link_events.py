"""The kernel's announcements of link changes in the endpoint's network namespace (rtnetlink's
RTMGRP_LINK multicast group: an RTM_NEWLINK or RTM_DELLINK message whenever an interface's flags
or carrier change), so the endpoint reads its ports' state when one changes instead of polling
it on a short period: a poll is a wake-up of the endpoint's loop whether or not anything changed,
and the loop's CPU goes by its wake-ups (docs/performance.md).

The messages are not parsed: any of them (and a lost batch, which the socket reports as
ENOBUFS) means "read the ports again", which the endpoint does for all of its few ports at once.
A port's state is what the endpoint reads from the interface itself (packet_io.interface_up),
so the announcement and the poll can never disagree about it.
"""
from __future__ import annotations

import errno
import socket

RTMGRP_LINK = 0x1          # linux/rtnetlink.h
READ_BYTES = 65536


class LinkEvents:
    """A non-blocking rtnetlink socket subscribed to link changes; fileno() for the loop's wait."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK,
                                  socket.NETLINK_ROUTE)
        try:
            self.sock.bind((0, RTMGRP_LINK))
        except OSError:
            self.sock.close()
            raise

    @classmethod
    def open(cls) -> "LinkEvents | None":
        """The announcements, or None where rtnetlink cannot be subscribed to (the endpoint
        then polls its ports every port_poll_ms)."""
        try:
            return cls()
        except OSError:
            return None

    def fileno(self) -> int:
        return self.sock.fileno()

    def drain(self) -> bool:
        """Read every pending announcement; True when any arrived or some were lost: the
        ports must be read again."""
        changed = False
        while True:
            try:
                if not self.sock.recv(READ_BYTES):
                    return changed
            except BlockingIOError:
                return changed
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:       # the kernel dropped some: read the ports
                    raise
            changed = True

    def close(self) -> None:
        self.sock.close()
