"""Loss by path order: the packets of one path stay in order on it (pure).

With source routing (SRv6) an EV names its path, its (plane, spine), and every queue on a path is
FIFO, so a transmission is lost once a packet sent later on the SAME path has been delivered. The
SACK-gap reorder window (traffic/core/rtt.py) must instead cover how far one path's queueing can
lag another's, under load a good part of a round trip; within one path there is nothing to
cover but the host's own jitter. A loss is then found about one round trip after its send, where
the window alone finds it a round trip plus the spread of the queues later, or leaves it to the
RTO: every repair on a collective's critical path waits that much less.

Not for hash-routed fabrics (ECMP): there an EV's path is its hash bucket's, which its spine bits
do not name, and a reroute moves a bucket (the endpoint turns it off; MRCConfig.path_order_loss).
"""
from __future__ import annotations

from collections import deque

from model.topology import ev_plane, ev_spine


def path_of(ev: int) -> tuple[int, int]:
    """The path an EV takes under source routing: (plane, spine)."""
    return ev_plane(ev), ev_spine(ev)


class PathOrder:
    """Per path, the transmissions in send order and the newest send time known delivered."""

    __slots__ = ("_sent", "_delivered", "_advanced")

    def __init__(self) -> None:
        self._sent: dict[tuple[int, int], deque[tuple[int, int, int]]] = {}
        self._delivered: dict[tuple[int, int], int] = {}
        self._advanced: set[tuple[int, int]] = set()

    def sent(self, ev: int, sent_ns: int, seq: int, tx_count: int) -> None:
        """A transmission of `seq` (its tx_count-th) left on `ev` at sent_ns."""
        key = path_of(ev)
        log = self._sent.get(key)
        if log is None:
            log = self._sent[key] = deque()
        log.append((sent_ns, seq, tx_count))

    def delivered(self, ev: int, sent_ns: int) -> None:
        """The transmission sent at sent_ns on `ev` reached the receiver."""
        key = path_of(ev)
        if sent_ns > self._delivered.get(key, -1):
            self._delivered[key] = sent_ns
            self._advanced.add(key)

    def overtaken(self, margin_ns: int) -> list[tuple[int, int]]:
        """(seq, tx_count) of every transmission sent at least margin_ns before a packet
        delivered later on its path, since the last call; each is reported once (delivered or
        not: the caller checks which are still outstanding)."""
        out: list[tuple[int, int]] = []
        for key in self._advanced:
            log = self._sent.get(key)
            threshold = self._delivered[key] - margin_ns
            while log and log[0][0] <= threshold:
                _, seq, tx_count = log.popleft()
                out.append((seq, tx_count))
        self._advanced.clear()
        return out
