"""hostnet builds the exact commands the fabric runs (no root needed to check them)."""
import pytest

from emulation.network import hostnet
from model.topology import FabricSpec, Topology


@pytest.fixture
def topo():
    return Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))


def test_host_argvs_configure_every_plane_interface(topo):
    argvs = hostnet.host_argvs(topo, 1)
    for plane in range(2):
        intf = f"h1-p{plane}"
        assert ["ip", "-6", "addr", "add", f"{topo.nic_addr(1, plane)}/64", "dev", intf,
                "nodad"] in argvs
        assert ["ip", "link", "set", "dev", intf, "address", topo.nic_mac(1, plane)] in argvs
        assert ["ip", "-6", "route", "replace", f"fd00:{plane}::/32", "dev", intf] in argvs
        assert ["ethtool", "-K", intf, "tx", "off", "rx", "off"] in argvs
        assert ["sysctl", "-q", "-w", f"net.ipv6.conf.{intf}.addr_gen_mode=1"] in argvs


def test_permanent_neighbours_for_every_other_host_only(topo):
    argvs = hostnet.host_argvs(topo, 0)
    neigh = [a for a in argvs if a[:3] == ["ip", "-6", "neigh"]]
    assert len(neigh) == (topo.spec.num_hosts - 1) * topo.spec.planes
    targets = {(a[4], a[6], a[8]) for a in neigh}
    for other in (1, 2, 3):
        for plane in (0, 1):
            assert (topo.nic_addr(other, plane), topo.nic_mac(other, plane),
                    f"h0-p{plane}") in targets
    assert all(a[-2:] == ["nud", "permanent"] for a in neigh)
    assert not any(topo.nic_addr(0, 0) == a[4] for a in neigh)


def test_address_added_after_link_up(topo):
    argvs = hostnet.host_argvs(topo, 2)
    up = argvs.index(["ip", "link", "set", "dev", "h2-p0", "up"])
    addr = next(i for i, a in enumerate(argvs) if a[:4] == ["ip", "-6", "addr", "add"])
    flush = argvs.index(["ip", "addr", "flush", "dev", "h2-p0"])
    assert flush < up < addr


def test_no_autoconf_namespace_wide():
    argvs = hostnet.namespace_sysctl_argvs()
    for scope in ("all", "default"):
        assert ["sysctl", "-q", "-w", f"net.ipv6.conf.{scope}.accept_ra=0"] in argvs
        assert ["sysctl", "-q", "-w", f"net.ipv6.conf.{scope}.autoconf=0"] in argvs


def test_htb_argvs_both_rate_and_ceil():
    q, c = hostnet.htb_argvs("t0p0g0-e3", 100)
    assert q == ["tc", "qdisc", "replace", "dev", "t0p0g0-e3", "root", "handle", "5:", "htb",
                 "default", "1"]
    assert c[c.index("rate") + 1] == "100mbit" and c[c.index("ceil") + 1] == "100mbit"
    assert int(c[c.index("burst") + 1]) >= 15000
    _, c = hostnet.htb_argvs("x", 2.5)
    assert c[c.index("rate") + 1] == "2.5mbit"
    with pytest.raises(ValueError, match="positive"):
        hostnet.htb_argvs("x", 0)


def test_switch_intf_disables_root_ipv6():
    argvs = hostnet.switch_intf_argvs("t1p0s1-e2")
    assert ["sysctl", "-q", "-w", "net.ipv6.conf.t1p0s1-e2.disable_ipv6=1"] in argvs


@pytest.mark.parametrize("opt", ["delay", "loss", "jitter", "enable_ecn", "enable_red"])
def test_netem_options_rejected_with_pointer_to_fault_api(opt):
    with pytest.raises(hostnet.LinkOptionError) as e:
        hostnet.validate_link_options({opt: 1})
    assert "netem" in str(e.value) and "gray_loss" in str(e.value)


def test_unknown_link_option_rejected_and_none_accepted():
    hostnet.validate_link_options(None)
    hostnet.validate_link_options({})
    with pytest.raises(hostnet.LinkOptionError, match="unknown link option 'bogus'"):
        hostnet.validate_link_options({"bogus": 1})


def test_set_controller_one_transaction_for_all_bridges():
    argv = hostnet.set_controller_argv(["t0p0g0", "t1p0s0"], "tcp:127.0.0.1:6653")
    assert argv[0] == "ovs-vsctl"
    assert argv.count("set-controller") == 2
    i = argv.index("set-controller")
    assert argv[i + 1:i + 3] == ["t0p0g0", "tcp:127.0.0.1:6653"]


def test_usid_block_blackholed_on_hosts(topo):
    assert hostnet.usid_block() == "fcbb:bb00::/32"
    assert ["ip", "-6", "route", "replace", "blackhole", "fcbb:bb00::/32"] in \
        hostnet.host_argvs(topo, 0)
