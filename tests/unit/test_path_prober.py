"""The per-host path prober (traffic/path_prober.py) with a fake clock: which paths, how often,
what counts as lost."""
from emulation.topology import FabricSpec, Topology, ev_plane, ev_spine
from traffic.path_prober import PathProber, parse_path_key, path_key

MS = 1_000_000
TOPO = Topology(FabricSpec())      # h0 h1 in group 0, h2 h3 in group 1, 2 planes, 2 spines


def test_every_distinct_path_to_every_peer_once_per_interval():
    p = PathProber(TOPO, 0, interval_ns=20 * MS, timeout_ns=100 * MS)
    p.set_peers([1, 2, 3], 0)
    sent = []
    for t in range(0, 20):                  # one interval, 1 ms steps
        sent += p.due(t * MS)
    # h1 same group: 2 planes x 1; h2, h3: 2 planes x 2 spines each -> 10 paths
    paths = sorted((peer, ev_plane(ev), ev_spine(ev)) for peer, _, ev, _ in sent)
    assert paths == sorted([(1, 0, 0), (1, 1, 0)] + [(h, pl, s) for h in (2, 3)
                                                     for pl in (0, 1) for s in (0, 1)])
    assert all(plane == ev_plane(ev) for _, plane, ev, _ in sent)
    more = []
    for t in range(20, 40):
        more += p.due(t * MS)
    assert len(more) == 10                  # the next interval: each path once more


def test_losses_count_only_after_a_path_answered_once():
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([2], 0)
    first = p.due(10 * MS)                  # 4 paths to h2
    assert len(first) == 4
    p.expire(50 * MS)                       # nothing answered yet: the peer may not be up
    assert p.stats() == {}
    answered_path = None
    rounds = p.due(60 * MS)
    for peer, plane, ev, seq in rounds:
        if (plane, ev_spine(ev)) == (0, 1):
            p.on_response(seq, 61 * MS)
            answered_path = path_key(0, peer, plane, ev_spine(ev))
    p.expire(100 * MS)
    assert p.stats() == {answered_path: {"sent": 1, "lost": 0}}
    for peer, plane, ev, seq in p.due(110 * MS):
        pass                                # all lost
    p.expire(150 * MS)
    assert p.stats() == {answered_path: {"sent": 2, "lost": 1}}
    assert parse_path_key(answered_path) == (0, 2, 0, 1)


def test_a_late_answer_does_not_undo_a_loss():
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([1], 0)
    seqs = [seq for *_, seq in p.due(10 * MS)]
    for seq in seqs:
        assert p.on_response(seq, 11 * MS)
    seqs = [seq for *_, seq in p.due(20 * MS)]
    p.expire(60 * MS)
    assert not p.on_response(seqs[0], 61 * MS)
    assert sum(c["lost"] for c in p.stats().values()) == 2
