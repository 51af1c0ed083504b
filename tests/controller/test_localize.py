"""Lossy-link localisation (controller/localize.py) on small fabrics; every expected link and
path worked out by hand from the fabric's shape (see the comments)."""
from controller.localize import classify, locate
from model.topology import FabricSpec, Topology
from traffic.core.path_prober import path_key, probed_paths


def links_of(topo):
    """Every probed path of the fabric -> the names of the links it crosses (fabric facts)."""
    out = {}
    for h in topo.hosts:
        peers = [p.index for p in topo.hosts if p.index != h.index]
        for peer, plane, spine in probed_paths(topo, h.index, peers):
            out[path_key(h.index, peer, plane, spine)] = frozenset(
                link.name for link in topo.path_links(h.index, peer, plane, spine))
    return out


def stats_where(paths, lossy, sent=100, lost=5):
    return {k: {"sent": sent, "lost": lost if k in lossy else 0} for k in paths}


def test_abstract_paths_name_the_one_link_all_lossy_paths_share():
    # A:{x,L} B:{y,L} lossy; C:{x,y} clean => x, y exonerated, L names itself
    paths = {"A": {"x", "L"}, "B": {"y", "L"}, "C": {"x", "y"}}
    got = locate(stats_where(paths, {"A", "B"}), paths)
    assert got.links == ["L"] and got.explained == {"L": ["A", "B"]}
    assert got.lossy_paths == ["A", "B"] and got.clean_paths == ["C"]


def test_two_links_that_no_probe_tells_apart_are_ambiguous_and_nothing_is_named():
    paths = {"A": {"x", "L1", "L2"}, "C": {"x"}}
    got = locate(stats_where(paths, {"A"}), paths)
    assert got.links == [] and got.ambiguous == ["L1", "L2"] and got.unexplained == ["A"]


def test_two_faults_are_both_named():
    # L1 on A, B; L2 on D, E; F clean exonerates a, b
    paths = {"A": {"a", "L1"}, "B": {"b", "L1"}, "D": {"a", "L2"}, "E": {"b", "L2"},
             "F": {"a", "b"}}
    got = locate(stats_where(paths, {"A", "B", "D", "E"}), paths)
    assert sorted(got.links) == ["L1", "L2"] and got.unexplained == []


def test_thresholds_decide_lossy_and_clean():
    stats = {"few": {"sent": 100, "lost": 2},        # < min_lost 3: not lossy
             "rate": {"sent": 1000, "lost": 4},      # 0.4% < 0.5%: not lossy
             "lossy": {"sent": 100, "lost": 3},
             "young": {"sent": 49, "lost": 0},       # too few probes to clear anything
             "clean": {"sent": 50, "lost": 0}}
    assert classify(stats) == (["lossy"], ["clean"])


def test_a_lossy_nic_t0_link_on_the_default_fabric():
    # h1's plane-0 port lossy: every path with h1 at either end on plane 0 loses (h1<->h0 inside
    # the group, h1<->h2/h3 over both spines); h0->h2 etc. clear t0p0g0's other links.
    topo = Topology(FabricSpec())
    paths = links_of(topo)
    lossy = {k for k in paths if ("h1>" in k or ">h1/" in k) and "/p0/" in k}
    assert len(lossy) == 10                       # 5 paths from h1, 5 to it
    got = locate(stats_where(paths, lossy), paths)
    assert got.links == ["h1~t0p0g0"] and got.explained["h1~t0p0g0"] == sorted(lossy)


def test_with_two_groups_a_t0_t1_link_cannot_be_told_from_its_twin_via_the_same_t1():
    # every path over t1p0s0 crosses both t0p0g0~t1p0s0 and t0p0g1~t1p0s0: ambiguous
    topo = Topology(FabricSpec())
    paths = links_of(topo)
    lossy = {k for k in paths if k.endswith("/p0/s0") and topo.host(int(k[1])).group
             != topo.host(int(k.split(">h")[1][0])).group}
    assert len(lossy) == 8                        # 4 cross-group pairs x 2 directions
    got = locate(stats_where(paths, lossy), paths)
    assert got.links == [] and got.ambiguous == ["t0p0g0~t1p0s0", "t0p0g1~t1p0s0"]


def test_a_good_t0_probe_and_a_bad_t1_probe_localise_a_t0_t1_link_with_three_groups():
    # one host per group: h0 (g0), h1 (g1), h2 (g2). t0p0g0~t1p0s0 lossy: h0<->h1 and h0<->h2 on
    # p0 s0 lose; h1<->h2 on p0 s0 is clean and clears t1p0s0's links to g1 and g2.
    topo = Topology(FabricSpec(groups=3, hosts_per_group=1))
    paths = links_of(topo)
    lossy = {"h0>h1/p0/s0", "h1>h0/p0/s0", "h0>h2/p0/s0", "h2>h0/p0/s0"}
    got = locate(stats_where(paths, lossy), paths)
    assert got.links == ["t0p0g0~t1p0s0"]


def test_a_lossy_path_that_is_only_noise_names_nothing():
    # one path with a few late answers, every link of it also on some clean path
    topo = Topology(FabricSpec())
    paths = links_of(topo)
    got = locate(stats_where(paths, {"h0>h2/p0/s0"}), paths)
    assert got.links == [] and got.unexplained == ["h0>h2/p0/s0"]
