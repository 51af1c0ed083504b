"""Localisation (controller/localize.py) with each host's per-hop self-probes and with the data's
EV events (ASSUMED_BAD per path) added to the probes; every expected link worked out by hand
from the default fabric: h0 h1 in group 0, h2 h3 in group 1, 2 planes, 2 spines."""
from controller.localize import classify, locate
from model.topology import FabricSpec, Topology
from traffic.core.path_prober import hop_paths, path_key, path_links, probed_paths

TOPO = Topology(FabricSpec())
LOSSY_LINK = "t0p0g0~t1p0s0"


def all_paths(hops=True):
    keys = []
    for h in TOPO.hosts:
        peers = [p.index for p in TOPO.hosts if p.index != h.index]
        triples = probed_paths(TOPO, h.index, peers) + (hop_paths(TOPO, h.index) if hops else [])
        keys += [path_key(h.index, *t) for t in triples]
    return {k: frozenset(path_links(TOPO, k)) for k in keys}


def crosses(links, link=LOSSY_LINK):
    return link in links


def test_hop_path_links_by_hand():
    assert path_links(TOPO, "h0>h0/p0/t0") == ["h0~t0p0g0"]
    assert path_links(TOPO, "h2>h2/p1/s1") == ["h2~t0p1g1", "t0p1g1~t1p1s1"]
    assert path_links(TOPO, "h0>h2/p0/s0") == ["h0~t0p0g0", "t0p0g0~t1p0s0", "t0p0g1~t1p0s0",
                                               "h2~t0p0g1"]


def test_hop_probes_tell_a_t0_t1_link_from_its_twin_via_the_same_t1():
    """Lossy: the 8 cross-group paths over t1p0s0 and the T1 turns of h0 and h1 at t1p0s0;
    the turns of h2 and h3 there are clean and clear t0p0g1~t1p0s0 (without them the two links
    are ambiguous: tests/controller/test_localize.py)."""
    paths = all_paths()
    lossy = {k for k, links in paths.items() if crosses(links)}
    assert sorted(k for k in lossy if k.split(">")[0] == k.split(">")[1].split("/")[0]) == \
        ["h0>h0/p0/s0", "h1>h1/p0/s0"]
    assert len(lossy) == 8 + 2
    stats = {k: {"sent": 100, "lost": 5 if k in lossy else 0} for k in paths}
    got = locate(stats, paths)
    assert got.links == [LOSSY_LINK] and got.explained[LOSSY_LINK] == sorted(lossy)


def test_a_nic_t0_link_is_told_from_the_t0_t1_links_by_the_t0_turn():
    """h0's plane-0 port lossy: every probe of h0 on plane 0 loses, its T0 turn too."""
    paths = all_paths()
    lossy = {k for k, links in paths.items() if crosses(links, "h0~t0p0g0")}
    assert "h0>h0/p0/t0" in lossy
    stats = {k: {"sent": 100, "lost": 5 if k in lossy else 0} for k in paths}
    assert locate(stats, paths).links == ["h0~t0p0g0"]


def test_ev_events_count_as_losses_on_their_path():
    """min_lost 3: 2 probe losses + 1 ASSUMED_BAD event is lossy; 2 events alone are not; an
    event spoils a path that would be clean."""
    stats = {"A": {"sent": 100, "lost": 2}, "B": {"sent": 100, "lost": 0},
             "C": {"sent": 100, "lost": 0}}
    assert classify(stats, ev_losses={"A": 1, "B": 2}) == (["A"], ["C"])
    assert classify({}, ev_losses={"D": 3}) == (["D"], [])


def test_a_localisation_that_needs_both_the_probes_and_the_ev_events():
    """The lossy link as above, but early: each lossy probe path lost 1 probe (below min_lost 3)
    and the data's EV events put each cross-group path over it ASSUMED_BAD twice (h0/h1 <->
    h2/h3 on plane 0 spine 0, both directions: 8 data paths). Probes alone: nothing lossy.
    Events alone: no clean path, so nothing is cleared. Together: the 8 data paths reach 3, and
    the T1 turns of h0/h1 (1 loss, no event) stay below it while the turns of h2/h3 are clean,
    which clears t0p0g1~t1p0s0, so the lossy link is named by its 8 data paths."""
    paths = all_paths()
    lossy = {k for k, links in paths.items() if crosses(links)}
    stats = {k: {"sent": 60, "lost": 1 if k in lossy else 0} for k in paths}
    data_paths = {k for k in lossy if k.split(">")[0] != k.split(">")[1].split("/")[0]}
    assert len(data_paths) == 8
    events = {k: 2 for k in data_paths}
    assert locate(stats, paths).links == []
    assert locate({k: {"sent": 0, "lost": 0} for k in paths}, paths, ev_losses=events).links == []
    got = locate(stats, paths, ev_losses=events)
    assert got.links == [LOSSY_LINK] and got.explained[LOSSY_LINK] == sorted(data_paths)


def test_an_ev_event_path_of_no_known_links_is_refused():
    import pytest
    with pytest.raises(KeyError, match="no links known for path"):
        locate({}, {}, ev_losses={"h0>h9/p0/s0": 1})


def test_no_link_is_judged_before_its_probe_paths_could_clear_it():
    """A busy host's first events, 0.2 s after a T0-T1 link went lossy: h0>h1 over s0 (crosses
    t0p0g0~t1p0s0 up and down), h3>h0 over s0 (crosses it down) and h3>h0 over s1 (does not: a
    timeout of a late ACK). The one link all three cross is h0's own NIC-T0 link h0~t0p0g0, so
    greedy covering names it first. At 31 settled probes a path (40 needed to be clean) cannot
    clear it yet: nothing is named. At 40 probes h0's T0 turn (h0>h0/p0/t0, h0~t0p0g0 alone)
    and T1 turn (h0>h0/p0/s0, over t0p0g0~t1p0s0) are clean and clear both: still nothing."""
    paths = all_paths()
    events = {"h0>h1/p0/s0": 13, "h3>h0/p0/s0": 4, "h3>h0/p0/s1": 5}
    early = {k: {"sent": 31, "lost": 0} for k in paths}
    assert locate(early, paths, ev_losses=events, clean_min_sent=40,
                  min_paths=2).links[:1] == ["h0~t0p0g0"]
    assert locate(early, paths, ev_losses=events, clean_min_sent=40, min_paths=2,
                  judged_min_sent=40).links == []
    later = {k: {"sent": 40, "lost": 0} for k in paths}
    assert locate(later, paths, ev_losses=events, clean_min_sent=40, min_paths=2,
                  judged_min_sent=40).links == []


def test_a_lossy_link_is_named_once_its_probe_paths_are_judged():
    """The lossy link of the test above, with every path over it losing 3 of 40 probes: named
    as soon as every probe path has settled 40, not at 39."""
    paths = all_paths()
    lossy = {k for k, links in paths.items() if crosses(links)}
    for sent, named in ((39, []), (40, [LOSSY_LINK])):
        stats = {k: {"sent": sent, "lost": 3 if k in lossy else 0} for k in paths}
        assert locate(stats, paths, clean_min_sent=40, min_paths=2,
                      judged_min_sent=40).links == named, sent
