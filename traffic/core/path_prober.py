"""Per-host path prober in the spirit of Clustermapper (pure: no sockets, time passed in).

Every host probes every path to every peer at a low rate: one probe per (peer, plane, spine)
each `interval_ns`, source-routed like data (the probe's EV names plane and spine; the peer's
endpoint answers on the same path back), so a round trip crosses every link of the path in both
directions: host->T0->host inside a group, host->T0->T1->T0->host across groups. Inside a group
the spine does not change the path, so such pairs are probed once per plane (spine 0).

With `hop_probes` (SRv6 routing) the host also probes its own hops, as the MRC paper's
Clustermapper agents do: on every plane one self-probe turns at its T0 (host -> T0 -> host:
the NIC-T0 link alone) and one per spine turns at that T1 (host -> T0 -> T1 -> T0 -> host: the
NIC-T0 link and that T0-T1 link). A self-probe is its own answer (no peer is involved), so its
path is named with the host twice: "h0>h0/p0/t0" and "h0>h0/p0/s1". Host-to-host paths across
groups cross two T0-T1 links that every such probe crosses together; the T1 turn is what tells
them apart.

The counts per path (sent, answered, lost) are what a localiser (controller/localize.py) needs:
a lossy link shows as loss on exactly the paths that cross it.

What counts as lost (a stalled CPU must not look like a lossy link):
* a path counts losses only after its first answer: before the peer's endpoint is up (or while
  its QPs are being created) a silent path says nothing about the links;
* a probe unanswered after `timeout_ns` is only suspect; it is judged lost once a probe sent
  later on the SAME path was answered: a path delivers in order (one queue per port, probe and
  answer on the same switches), so the earlier probe was dropped, not held. Answers over
  different paths overtake each other by as much as a CPU-starved userspace switch holds a
  path's packets, so judging by any later answer of the peer would make healthy paths look
  lossier than the lossy link they are meant to find;
* a path that answers nothing at all (a black hole) is judged by the peer's other paths, but
  only against answers to probes sent `other_path_margin_ns` later, longer than such a hold;
* a peer that stalls answers its backlog late, in order, and a late answer clears the suspect
  probe; a peer that is gone answers nothing and none is lost.
"""
from __future__ import annotations

from dataclasses import dataclass

from model.topology import Topology, make_ev
from traffic.core.messages import PROBE_ID_MASK

# Entropy of prober EVs: apart from the EV sets' random entropies (0xC000..0xFFFF) and the
# endpoint's RTT/READY probes (0x100.., 0x200..), so a capture tells them apart.
PROBER_ENTROPY = 0x300
HOP_T0_ENTROPY = 0x301         # a self-probe turning at the host's T0
HOP_T1_ENTROPY = 0x302         # a self-probe turning at the T1 of the EV's spine
HOP_T0 = -1                    # the "spine" of the T0 turn in a hop path's (peer, plane, spine)
# A probe unanswered on a path that answers nothing else is judged by the peer's answers over
# other paths to probes sent at least this much later (the default of `other_path_margin_ns`;
# the endpoint passes its path_probe_margin_ms, a time the time scale stretches): longer than a
# starved switch holds a path's packets, with room for the pauses of a loaded machine.
OTHER_PATH_MARGIN_NS = 2_000_000_000
# Suspect probes of a peer that never answers again are forgotten this many timeouts after
# the other-path margin (when the peer's other paths could first have judged them).
FORGET_TIMEOUTS = 20


@dataclass
class PathCount:
    sent: int = 0
    answered: int = 0
    lost: int = 0
    live: bool = False         # answered at least once: losses count from then on


def path_key(src: int, dst: int, plane: int, spine: int) -> str:
    """Stable name of a probed path, as the prober reports it ("h0>h2/p0/s1"; a hop probe's
    "h0>h0/p0/t0" turns at the T0, "h0>h0/p0/s1" at T1 1)."""
    return f"h{src}>h{dst}/p{plane}/" + ("t0" if spine == HOP_T0 else f"s{spine}")


def parse_path_key(key: str) -> tuple[int, int, int, int]:
    hosts, plane, spine = key.split("/")
    src, dst = hosts.split(">")
    return (int(src[1:]), int(dst[1:]), int(plane[1:]),
            HOP_T0 if spine == "t0" else int(spine[1:]))


def path_links(topo: Topology, key: str) -> list[str]:
    """Names of the links the probed path `key` crosses (a hop probe's: Topology.hop_links)."""
    src, dst, plane, spine = parse_path_key(key)
    if src == dst:
        links = topo.hop_links(src, plane, None if spine == HOP_T0 else spine)
    else:
        links = topo.path_links(src, dst, plane, spine)
    return [link.name for link in links]


def hop_paths(topo: Topology, host: int) -> list[tuple[int, int, int]]:
    """(host, plane, HOP_T0 or spine) of every hop probe of `host`."""
    return [(host, plane, spine) for plane in range(topo.spec.planes)
            for spine in (HOP_T0, *range(topo.spec.spines))]


def hop_tier(ev: int) -> int:
    """Where a hop probe on `ev` turns: 0 at the T0, 1 at the T1 of the EV's spine."""
    return 0 if ev & 0xFFFF == HOP_T0_ENTROPY else 1


def probed_paths(topo: Topology, src: int, peers) -> list[tuple[int, int, int]]:
    """(peer, plane, spine) of every distinct path from src to each peer."""
    out = []
    for peer in peers:
        same_group = topo.host(src).group == topo.host(peer).group
        for plane in range(topo.spec.planes):
            for spine in (0,) if same_group else range(topo.spec.spines):
                out.append((peer, plane, spine))
    return out


class PathProber:
    """Schedule and bookkeeping of one host's path probes."""

    def __init__(self, topo: Topology, host: int, interval_ns: int, timeout_ns: int, *,
                 other_path_margin_ns: int = OTHER_PATH_MARGIN_NS, hop_probes: bool = False):
        if interval_ns <= 0 or timeout_ns <= 0 or other_path_margin_ns <= 0:
            raise ValueError(f"prober interval, timeout and other-path margin must be > 0, got "
                             f"{interval_ns}, {timeout_ns}, {other_path_margin_ns}")
        self.other_path_margin_ns = int(other_path_margin_ns)
        self.topo = topo
        self.host = host
        self.interval_ns = int(interval_ns)
        self.timeout_ns = int(timeout_ns)
        self.hop_probes = bool(hop_probes)
        self.counts: dict[tuple[int, int, int], PathCount] = {}
        self._next: dict[tuple[int, int, int], int] = {}
        self._pending: dict[int, tuple[tuple[int, int, int], int]] = {}   # seq -> (path, sent)
        self._suspect: dict[int, tuple[tuple[int, int, int], int]] = {}   # timed out, not judged
        self._seq = 0

    def set_peers(self, peers, now_ns: int) -> None:
        """Probe these peers from now on (paths of new peers start, spread over one interval)."""
        paths = probed_paths(self.topo, self.host, sorted(set(peers) - {self.host}))
        if self.hop_probes:
            paths += hop_paths(self.topo, self.host)
        new = [p for p in paths if p not in self.counts]
        for i, path in enumerate(new):
            self.counts[path] = PathCount()
            self._next[path] = now_ns + self.interval_ns * i // max(1, len(new))

    def ev_of(self, path: tuple[int, int, int]) -> int:
        peer, plane, spine = path
        if peer == self.host:
            return make_ev(plane, max(spine, 0),
                           HOP_T0_ENTROPY if spine == HOP_T0 else HOP_T1_ENTROPY)
        return make_ev(plane, spine, PROBER_ENTROPY)

    def due(self, now_ns: int) -> list[tuple[int, int, int, int]]:
        """(peer, plane, ev, seq) of the probes to send now."""
        out = []
        for path, when in self._next.items():
            if when > now_ns:
                continue
            self._seq = (self._seq + 1) & PROBE_ID_MASK   # travels in the PSN
            self._pending[self._seq] = (path, now_ns)
            self._next[path] = max(when + self.interval_ns, now_ns)
            self.counts[path].sent += 1
            out.append((path[0], path[1], self.ev_of(path), self._seq))
        return out

    def on_response(self, seq: int, now_ns: int) -> bool:
        entry = self._pending.pop(seq, None)
        if entry is None:
            entry = self._suspect.pop(seq, None)
            if entry is None:
                return False            # unknown, or already judged lost
        path, sent = entry
        count = self.counts[path]
        count.answered += 1
        count.live = True
        self._judge(path, sent)
        return True

    def _judge(self, answered_path: tuple[int, int, int], answered_sent_ns: int) -> None:
        """A probe sent at answered_sent_ns on answered_path was answered: suspect probes sent
        before it on the same path were lost, and so were those of the same peer on other paths
        sent at least other_path_margin_ns before it."""
        peer = answered_path[0]
        for seq, (path, sent) in list(self._suspect.items()):
            if path == answered_path:
                lost = sent < answered_sent_ns
            else:
                lost = path[0] == peer and sent <= answered_sent_ns - self.other_path_margin_ns
            if lost:
                del self._suspect[seq]
                self.counts[path].lost += 1

    def expire(self, now_ns: int) -> None:
        for seq, (path, sent) in list(self._pending.items()):
            if now_ns - sent >= self.timeout_ns:
                del self._pending[seq]
                if self.counts[path].live:
                    self._suspect[seq] = (path, sent)
                else:
                    self.counts[path].sent -= 1     # before the first answer: no evidence
        forget = self.other_path_margin_ns + self.timeout_ns * FORGET_TIMEOUTS
        for seq, (path, sent) in list(self._suspect.items()):
            if now_ns - sent >= forget:
                del self._suspect[seq]

    def next_deadline(self) -> int | None:
        times = list(self._next.values())
        times += [sent + self.timeout_ns for _, sent in self._pending.values()]
        return min(times) if times else None

    def stats(self) -> dict[str, dict]:
        """{path_key: {"sent", "lost"}} of paths that answered at least once, probes settled
        (answered or timed out) only."""
        out = {}
        for path, c in self.counts.items():
            if not c.live:
                continue
            peer, plane, spine = path
            out[path_key(self.host, peer, plane, spine)] = {"sent": c.answered + c.lost,
                                                            "lost": c.lost}
        return out


__all__ = ["PathProber", "PathCount", "path_key", "parse_path_key", "path_links", "probed_paths",
           "hop_paths", "hop_tier", "PROBER_ENTROPY", "HOP_T0", "HOP_T0_ENTROPY",
           "HOP_T1_ENTROPY"]
