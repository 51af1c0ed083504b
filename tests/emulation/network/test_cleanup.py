"""Cleanup name matching: ours only, never a foreign bridge, interface, table or process."""
import pytest

from emulation.network import cleanup

OURS_SWITCH = ["t0p0g0", "t1p0s1", "t0p7g63", "t1p3s12"]
FOREIGN_SWITCH = ["s1", "br0", "ovs-system", "t0p0g", "t0p0s0", "t1p0g0", "xt0p0g0", "t0p0g0x",
                  "t0p0g0-e1", "ctl_t0p0g0", "T0P0G0", "t2p0g0"]


@pytest.mark.parametrize("name", OURS_SWITCH)
def test_our_switch_names(name):
    assert cleanup.is_our_switch(name)


@pytest.mark.parametrize("name", FOREIGN_SWITCH)
def test_foreign_switch_names(name):
    assert not cleanup.is_our_switch(name)


def test_switch_interfaces():
    assert cleanup.is_our_switch_intf("t0p0g0-e1")
    assert cleanup.is_our_switch_intf("t1p1s0-e2@if7")
    for foreign in ("s1-eth1", "t0p0g0", "h0-p0", "veth1234", "t0p0g0-eth1", "ctrl-t0p0g0-e1",
                    "t0p0g0-e1x", "eth0", "nvq0-e1"):
        assert not cleanup.is_our_switch_intf(foreign), foreign


def test_host_interfaces():
    assert cleanup.is_our_host_intf("h3-p1")
    for foreign in ("h1-eth0", "h3-p", "hx-p1", "eth0", "h3-p1x"):
        assert not cleanup.is_our_host_intf(foreign), foreign


def test_nft_tables_only_prefix():
    assert cleanup.is_our_nft_table("mrclab_loss_t0p0g0_e3")
    for foreign in ("mrclab_", "mrclab", "filter", "nat", "xmrclab_x", "MRCLAB_x", "docker"):
        assert not cleanup.is_our_nft_table(foreign), foreign


def test_parse_nft_tables():
    text = "table inet filter\ntable netdev mrclab_loss_t0p0g0_e3\ngarbage\n"
    assert cleanup.parse_nft_tables(text) == [("inet", "filter"),
                                              ("netdev", "mrclab_loss_t0p0g0_e3")]


def test_host_shell_cmdline():
    shell = ["bash", "--norc", "--noediting", "-is", "mininet:h3"]
    assert cleanup.host_shell_name(shell) == "h3"
    assert cleanup.host_shell_name(["/bin/bash", "--norc", "-is", "mininet:h12"]) == "h12"
    for foreign in (["bash", "--norc", "--noediting", "-is", "mininet:s1"],
                    ["bash", "--norc", "--noediting", "-is", "mininet:t0p0g0"],
                    ["bash", "-c", "echo mininet:h3"],
                    ["python", "-is", "mininet:h3"],
                    ["bash", "--norc", "--noediting", "-is", "mininet:h3x"], []):
        assert cleanup.host_shell_name(foreign) is None, foreign


def test_controller_cmdline():
    assert cleanup.is_controller_cmdline(["/work/main/.venv/bin/python", "-m", "controller.app",
                                          "--spec-json", "x"])
    assert not cleanup.is_controller_cmdline(["vim", "controller.app"])
    assert not cleanup.is_controller_cmdline(["python", "-m", "http.server"])


def test_leftovers_describe():
    left = cleanup.Leftovers(bridges=["t0p0g0"], nft_tables=[("netdev", "mrclab_x")])
    assert not left.empty()
    assert "t0p0g0" in left.describe() and "mrclab_x" in left.describe()
    assert cleanup.Leftovers().empty()
