"""ensure_ovs_tx_buffer against the real ovs-vswitchd: from a socket born small (restart path) and
from a fresh vswitchd with no socket (create path); a second call is a no-op; the sysctl is
restored and the probe bridge/veth are gone; the crash sweep removes a left-behind probe.
Holds the fabric lock throughout (it restarts ovs-vswitchd) and leaves the big buffer in place."""
import time

import pytest

from emulation.network import cleanup
from emulation.network import ovs_sndbuf as sb
from emulation.network.fabric import acquire_fabric_lock, release_fabric_lock

pytestmark = pytest.mark.integration

DEBIAN_WMEM_DEFAULT = 212992


@pytest.fixture
def fabric_lock_and_sysctl():
    fd = acquire_fabric_lock()
    original = sb.read_wmem_default()
    try:
        yield
    finally:
        try:
            sb.remove_probe()
            sb.write_wmem_default(original)
            sb.ensure_ovs_tx_buffer()        # leave vswitchd with the big buffer whatever happened
        finally:
            release_fabric_lock(fd)


def tx_sockets():
    return sb.ovs_tx_sockets(sb.read_sockets())


def probe_leftovers():
    return ([b for b in cleanup.ovs_bridges() if cleanup.is_our_sndbuf_probe(b)]
            + [i for i in cleanup.root_links() if cleanup.is_our_sndbuf_probe(i)])


def fresh_vswitchd_with_default_wmem():
    sb.write_wmem_default(DEBIAN_WMEM_DEFAULT)
    sb.restart_vswitchd()


def assert_big_and_clean():
    (tx,) = tx_sockets()
    assert tx.sndbuf >= sb.MIN_TX_SNDBUF, tx
    assert sb.read_wmem_default() == DEBIAN_WMEM_DEFAULT     # restored to the value before
    assert probe_leftovers() == []
    return tx


def test_socket_born_small_is_reborn_big_and_second_call_is_a_noop(fabric_lock_and_sysctl):
    fresh_vswitchd_with_default_wmem()
    try:
        sb.output_probe_frame()                              # what any first packet would do
        deadline = time.monotonic() + 5
        while not tx_sockets() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sb.remove_probe()
    assert [s.sndbuf for s in tx_sockets()] == [DEBIAN_WMEM_DEFAULT]   # the bug's state
    assert sb.current_verdict().action == "restart"

    assert sb.ensure_ovs_tx_buffer().action == "ok"
    tx = assert_big_and_clean()

    t0 = time.monotonic()
    assert sb.ensure_ovs_tx_buffer().action == "ok"
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"second call took {elapsed:.2f}s"
    assert tx_sockets() == [tx]                              # same pid and fd: nothing restarted


def test_fresh_vswitchd_gets_its_socket_born_big(fabric_lock_and_sysctl):
    fresh_vswitchd_with_default_wmem()
    assert tx_sockets() == [] and sb.current_verdict().action == "create"
    pid_before = int(open("/var/run/openvswitch/ovs-vswitchd.pid").read())
    assert sb.ensure_ovs_tx_buffer().action == "ok"
    tx = assert_big_and_clean()
    assert tx.pids == {pid_before}                           # born, not restarted


def test_crash_sweep_removes_a_left_probe(fabric_lock_and_sysctl):
    try:
        sb.output_probe_frame()
        assert set(probe_leftovers()) == {"mrclabsb-a", "mrclabsb-b", "mrclabsb0"}
        assert not cleanup.find_leftovers().empty()
        cleanup.clean()
        assert probe_leftovers() == []
        assert cleanup.find_leftovers().empty()
    finally:
        sb.remove_probe()
