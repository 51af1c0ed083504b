"""The path prober (traffic/core/path_prober.py) with more than one peer, fed to the localiser
(controller/localize.py): a peer that stops answering (gone or stalled) says nothing about its
paths, however many answers another peer sends, so its healthy links are never named; a peer
that answers on one plane and not the other still shows that plane's loss.

Fake clock; the default fabric: h0 h1 in group 0, h2 h3 in group 1, 2 planes, 2 spines. From
h0: h1 over one path per plane (same group, spine 0 only), h2 over 2 planes x 2 spines."""
from controller.localize import locate
from model.topology import FabricSpec, Topology
from traffic.core.path_prober import OTHER_PATH_MARGIN_NS, PathProber, path_key, probed_paths

MS = 1_000_000
TOPO = Topology(FabricSpec())
INTERVAL, TIMEOUT = 10 * MS, 30 * MS
H1_PATHS = [path_key(0, 1, plane, 0) for plane in (0, 1)]


def links_from_h0():
    return {path_key(0, peer, plane, spine): frozenset(
                link.name for link in TOPO.path_links(0, peer, plane, spine))
            for peer, plane, spine in probed_paths(TOPO, 0, [1, 2])}


def run(answers, end_ms):
    """Probe h1 and h2 every 10 ms until end_ms; answers(peer, plane, t_ms) -> the time (ms)
    its answer comes back, or None if it never does. Returns the prober."""
    p = PathProber(TOPO, 0, interval_ns=INTERVAL, timeout_ns=TIMEOUT)
    p.set_peers([1, 2], 0)
    late: list[tuple[int, int]] = []
    for t in range(0, end_ms, 1):
        now = t * MS
        for back, seq in [x for x in late if x[0] <= t]:
            p.on_response(seq, now)
        late = [x for x in late if x[0] > t]
        for peer, plane, _, seq in p.due(now):
            back = answers(peer, plane, t)
            if back == t:
                p.on_response(seq, now)
            elif back is not None:
                late.append((back, seq))
        p.expire(now)
    return p


def test_a_gone_peer_loses_nothing_while_another_peer_keeps_answering():
    # h1 answers until 500 ms, then is gone; h2 answers every probe at once for 4 s, long past
    # the 2 s margin after which h2's answers could judge other paths of h2
    p = run(lambda peer, plane, t: t if peer == 2 or t < 500 else None, 4000)
    stats = p.stats()
    assert set(stats) >= set(H1_PATHS)
    assert all(stats[k]["lost"] == 0 for k in H1_PATHS), stats
    assert all(c["lost"] == 0 for c in stats.values())
    got = locate(stats, links_from_h0())
    assert got.links == [] and got.lossy_paths == []


def test_a_stalled_peer_answering_its_backlog_late_loses_nothing():
    # h1 stalls from 500 to 2900 ms and then answers its whole backlog, in order; h2 answers
    # at once throughout
    def answers(peer, plane, t):
        if peer == 2 or not 500 <= t < 2900:
            return t
        return 2900
    stats = run(answers, 4000).stats()
    assert all(c["lost"] == 0 for c in stats.values()), stats


def test_a_dead_plane_of_one_peer_is_lost_there_only_and_its_link_is_named():
    # h1 never answers on plane 0 after its first answer (its plane-0 NIC link died at
    # 100 ms); its plane 1 and all of h2 answer at once. h1's plane-0 probes are judged by its
    # own plane-1 answers 2 s later: those sent 100..(4000 - 2000) ms are lost, ~190 of them.
    # Every h2 path through t0p0g0 is clean, so the link named is h1's own.
    p = run(lambda peer, plane, t: None if peer == 1 and plane == 0 and t >= 100 else t, 4000)
    stats = p.stats()
    margin_ms = OTHER_PATH_MARGIN_NS // MS
    lost = stats[path_key(0, 1, 0, 0)]["lost"]
    assert (4000 - margin_ms - 100) // 10 - 2 <= lost <= (4000 - margin_ms - 100) // 10 + 1
    assert all(c["lost"] == 0 for k, c in stats.items() if k != path_key(0, 1, 0, 0))
    # h0 -> h1 on plane 0 crosses h0~t0p0g0 and t0p0g0~h1; the h0 -> h2 plane-0 paths clear
    # h0's link, so h1's is the one named
    got = locate(stats, links_from_h0())
    assert got.lossy_paths == [path_key(0, 1, 0, 0)]
    assert got.links == ["h1~t0p0g0"], got
