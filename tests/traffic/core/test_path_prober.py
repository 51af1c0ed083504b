"""The per-host path prober (traffic/core/path_prober.py) with a fake clock: which paths, how often,
what counts as lost."""
from model.topology import FabricSpec, Topology, ev_plane, ev_spine
from traffic.core.path_prober import OTHER_PATH_MARGIN_NS, PathProber, parse_path_key, path_key

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


def test_losses_count_only_after_a_path_answered_once_and_once_the_peer_answers_later_probes():
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([2], 0)
    assert len(p.due(10 * MS)) == 4         # 4 paths to h2
    p.expire(50 * MS)                       # nothing answered yet: the peer may not be up
    assert p.stats() == {}
    s01 = path_key(0, 2, 0, 1)
    for peer, plane, ev, seq in p.due(60 * MS):
        if (plane, ev_spine(ev)) == (0, 1):
            p.on_response(seq, 61 * MS)
    p.expire(100 * MS)
    assert p.stats() == {s01: {"sent": 1, "lost": 0}}
    p.due(110 * MS)                         # none answered
    p.expire(150 * MS)                      # timed out, but is h2 alive? not judged yet
    assert p.stats() == {s01: {"sent": 1, "lost": 0}}
    for peer, plane, ev, seq in p.due(160 * MS):
        if (plane, ev_spine(ev)) == (1, 1):
            p.on_response(seq, 162 * MS)    # h2 answers a probe sent 50 ms later, another path
    assert p.stats()[s01] == {"sent": 1, "lost": 0}     # which may just have overtaken it
    for peer, plane, ev, seq in p.due(170 * MS):
        if (plane, ev_spine(ev)) == (0, 1):
            p.on_response(seq, 171 * MS)    # a later probe on the same path got through
    assert p.stats() == {s01: {"sent": 3, "lost": 1}, path_key(0, 2, 1, 1): {"sent": 1, "lost": 0}}
    assert parse_path_key(s01) == (0, 2, 0, 1)


def test_a_stalled_peer_answering_late_loses_nothing_and_a_gone_peer_neither():
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([1], 0)                     # same group: 2 paths (one per plane)
    for *_, seq in p.due(10 * MS):
        assert p.on_response(seq, 11 * MS)
    stalled = [seq for *_, seq in p.due(20 * MS)]
    p.expire(60 * MS)
    for seq in stalled:                     # the backlog's answers come first, late
        assert p.on_response(seq, 61 * MS)
    for *_, seq in p.due(70 * MS):
        p.on_response(seq, 71 * MS)
    assert sum(c["lost"] for c in p.stats().values()) == 0
    p.due(80 * MS)                          # then h1 is gone: nothing answers again
    for t in range(90, 2000, 10):
        p.due(t * MS)
        p.expire(t * MS)
    assert sum(c["lost"] for c in p.stats().values()) == 0


def test_probes_dropped_on_one_plane_are_lost_when_the_other_plane_answers():
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([1], 0)
    for *_, seq in p.due(10 * MS):
        p.on_response(seq, 11 * MS)
    margin_ms = OTHER_PATH_MARGIN_NS // MS
    for t in range(20, 200 + margin_ms, 10):
        for _, plane, _, seq in p.due(t * MS):
            if plane == 1:
                p.on_response(seq, t * MS + 1)
        p.expire(t * MS)
    stats = p.stats()
    # a plane-0 probe sent at t is suspect from the end of turn t+30 (expire runs after the
    # answers of a turn) and judged by the first plane-1 answer to a probe sent margin_ms
    # later, turn t + margin_ms; the last turn is 190 + margin_ms, so those sent at 20..190 ms
    # are lost (18), the later ones not judged yet
    assert stats[path_key(0, 1, 0, 0)]["lost"] == 18 and stats[path_key(0, 1, 1, 0)]["lost"] == 0


def test_a_held_path_loses_nothing_and_a_drop_is_judged_by_the_next_answer_on_its_path():
    """A starved switch holds plane 0 for 300 ms while plane 1 answers at once: the held probes
    are answered late, in order, and none counts as lost. Then one plane-0 probe is dropped and
    the next one gets through: that one loss is counted as soon as the next answer arrives."""
    p = PathProber(TOPO, 0, interval_ns=10 * MS, timeout_ns=30 * MS)
    p.set_peers([1], 0)                     # same group: paths (1, 0, 0) and (1, 1, 0)
    for *_, seq in p.due(10 * MS):
        p.on_response(seq, 11 * MS)
    held = []
    for t in range(20, 320, 10):            # plane 0 held for 300 ms, plane 1 answers
        for _, plane, _, seq in p.due(t * MS):
            if plane == 0:
                held.append(seq)
            else:
                p.on_response(seq, t * MS + 1)
        p.expire(t * MS)
    for seq in held:                        # the backlog comes through, in order
        assert p.on_response(seq, 321 * MS)
    assert {k: c["lost"] for k, c in p.stats().items()} == {path_key(0, 1, 0, 0): 0,
                                                           path_key(0, 1, 1, 0): 0}
    dropped = [seq for _, plane, _, seq in p.due(330 * MS) if plane == 0]
    p.expire(370 * MS)                      # 40 ms: timed out, suspect
    for _, plane, _, seq in p.due(370 * MS):
        p.on_response(seq, 371 * MS)        # the next plane-0 probe got through
    assert len(dropped) == 1 and p.stats()[path_key(0, 1, 0, 0)]["lost"] == 1


def test_hop_probes_once_per_interval_on_every_plane_each_its_own_answer():
    """With hop probes h0 also probes, per plane, a T0 turn and a T1 turn per spine:
    2 x (1 + 2) = 6 paths besides the 2 to its group peer h1."""
    from traffic.core.path_prober import HOP_T0, HOP_T0_ENTROPY, HOP_T1_ENTROPY, hop_tier
    p = PathProber(TOPO, 0, interval_ns=20 * MS, timeout_ns=100 * MS, hop_probes=True)
    p.set_peers([1], 0)
    sent = []
    for t in range(0, 20):
        sent += p.due(t * MS)
    hops = [(plane, ev) for peer, plane, ev, _ in sent if peer == 0]
    assert len(sent) == 8 and len(hops) == 6
    assert sorted((plane, ev & 0xFFFF, ev_spine(ev)) for plane, ev in hops) == sorted(
        [(pl, HOP_T0_ENTROPY, 0) for pl in (0, 1)]
        + [(pl, HOP_T1_ENTROPY, s) for pl in (0, 1) for s in (0, 1)])
    assert sorted(hop_tier(ev) for _, ev in hops) == [0, 0, 1, 1, 1, 1]
    for peer, _, _, seq in sent:
        if peer == 0:
            assert p.on_response(seq, 30 * MS)
    p.expire(200 * MS)
    assert set(p.stats()) == {"h0>h0/p0/t0", "h0>h0/p1/t0", "h0>h0/p0/s0", "h0>h0/p0/s1",
                              "h0>h0/p1/s0", "h0>h0/p1/s1"}
    assert parse_path_key("h0>h0/p1/t0") == (0, 0, 1, HOP_T0)
    assert path_key(0, 0, 1, HOP_T0) == "h0>h0/p1/t0"
