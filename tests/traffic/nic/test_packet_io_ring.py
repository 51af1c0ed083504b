"""The fast path's pure pieces: PACKET_MMAP ring parsing and geometry, the fabric MTU and the
payload that follows it. Ring slots are built by hand from the kernel's struct tpacket2_hdr
(linux/if_packet.h): u32 tp_status @0, u32 tp_len @4, u32 tp_snaplen @8, u16 tp_mac @12,
u16 tp_net @14, u32 tp_sec @16, u32 tp_nsec @20, u16 vlan_tci @24, u16 vlan_tpid @26, pad to 32."""
import struct

import pytest

from emulation.network import hostnet
from model.topology import FabricSpec, SpecError, Topology
from traffic.nic.endpoint_support import ConfigError, EndpointConfig, payload_for_mtu
from traffic.nic.packet_io import drain_ring, ring_geometry

pytestmark = pytest.mark.core

SLOT = 256          # slot size of the hand-built rings
MAC = 80            # where the frame starts in a slot (the kernel's tp_mac)


def put_slot(ring: bytearray, index: int, frame: bytes, status: int = 1) -> None:
    off = index * SLOT
    struct.pack_into("<I", ring, off + 0, status)
    struct.pack_into("<I", ring, off + 4, len(frame))
    struct.pack_into("<I", ring, off + 8, len(frame))
    struct.pack_into("<H", ring, off + 12, MAC)
    ring[off + MAC:off + MAC + len(frame)] = frame


def test_drain_hands_ready_frames_in_order_and_returns_slots_to_the_kernel():
    ring = bytearray(SLOT * 4)
    put_slot(ring, 0, b"first")
    put_slot(ring, 1, b"second frame")
    got = []
    index, done, truncated = drain_ring(memoryview(ring), SLOT, 4, 0,
                                        lambda f: got.append(bytes(f)), 16)
    assert got == [b"first", b"second frame"]
    assert (index, done, truncated) == (2, 2, 0)
    assert struct.unpack_from("<I", ring, 0)[0] == 0 and struct.unpack_from("<I", ring, SLOT)[0] == 0


def test_drain_wraps_around_and_stops_at_limit():
    ring = bytearray(SLOT * 3)
    for i, payload in ((2, b"c"), (0, b"a"), (1, b"b")):
        put_slot(ring, i, payload)
    got = []
    index, done, _ = drain_ring(memoryview(ring), SLOT, 3, 2, lambda f: got.append(bytes(f)), 2)
    assert got == [b"c", b"a"] and (index, done) == (1, 2)
    assert struct.unpack_from("<I", ring, SLOT)[0] == 1      # slot 1 still the reader's


def test_drain_skips_truncated_slots_but_frees_them():
    ring = bytearray(SLOT * 2)
    put_slot(ring, 0, b"cut", status=1 | 2)                   # TP_STATUS_USER | TP_STATUS_COPY
    put_slot(ring, 1, b"whole")
    got = []
    _, done, truncated = drain_ring(memoryview(ring), SLOT, 2, 0, lambda f: got.append(bytes(f)), 8)
    assert got == [b"whole"] and done == 2 and truncated == 1
    assert struct.unpack_from("<I", ring, 0)[0] == 0


def test_drain_frees_the_slot_even_when_the_handler_raises():
    ring = bytearray(SLOT * 2)
    put_slot(ring, 0, b"x")

    def boom(frame):
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError):
        drain_ring(memoryview(ring), SLOT, 2, 0, boom, 8)
    assert struct.unpack_from("<I", ring, 0)[0] == 0


@pytest.mark.parametrize("mtu,frame", [(1500, 2048), (4200, 8192), (9000, 16384)])
def test_ring_slots_hold_a_whole_frame_of_the_mtu(mtu, frame):
    block, block_nr, frame_size, frame_nr = ring_geometry(mtu, ring_bytes=4 << 20)
    assert frame_size == frame                       # >= 14 + mtu + header room, power of two
    assert block % 4096 == 0 and block % frame_size == 0
    assert frame_nr == block_nr * block // frame_size
    assert block * block_nr == 4 << 20


@pytest.mark.parametrize("mtu,payload", [(1500, 1344), (4200, 4032), (9000, 8832)])
def test_payload_follows_mtu(mtu, payload):
    # Largest data packet's headers (SRv6): 2 x IPv6 40 + UDP 8 + BTH 12 + METH 4 + TSETH 8
    # + RETH 16 + ImmDt 4 + ICRC 4 = 136 bytes inside the IP MTU; rounded down to 64 bytes.
    assert payload_for_mtu(mtu) == payload
    assert payload + 136 <= mtu
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": FabricSpec(mtu=mtu).to_dict()})
    assert cfg.max_payload == payload
    assert EndpointConfig.from_dict({"host": 0, "fabric": FabricSpec(mtu=mtu).to_dict(),
                                     "max_payload": 1000}).max_payload == 1000


def test_fast_path_flag_must_be_boolean():
    assert EndpointConfig(host=0).fast_path is True
    with pytest.raises(ConfigError, match="fast_path"):
        EndpointConfig.from_dict({"host": 0, "fast_path": "yes"})


@pytest.mark.parametrize("bad", [1279, 9001, "9000", True, 1500.0])
def test_fabric_mtu_validated(bad):
    with pytest.raises(SpecError, match="mtu"):
        FabricSpec(mtu=bad)


def test_fabric_mtu_round_trips_and_reaches_every_port():
    spec = FabricSpec(mtu=4200)
    assert FabricSpec.from_dict(spec.to_dict()).mtu == 4200
    host_cmds = hostnet.host_argvs(Topology(spec), 0)
    for plane in range(spec.planes):
        assert ["ip", "link", "set", "dev", f"h0-p{plane}", "mtu", "4200"] in host_cmds
    sw = hostnet.switch_intf_argvs("t0p0g0-e1", 4200)
    assert ["ip", "link", "set", "dev", "t0p0g0-e1", "mtu", "4200"] in sw
    assert any(a[0] == "ovs-vsctl" and "mtu_request=4200" in a and "t0p0g0-e1" in a for a in sw)


def test_unshaped_fabric_refuses_options_that_need_a_switch_queue():
    from emulation.network.fabric import Fabric
    Fabric(FabricSpec(), shaped=False)                 # nothing starts before __enter__
    with pytest.raises(ValueError, match="unshaped"):
        Fabric(FabricSpec(), shaped=False, trimming=True)
    with pytest.raises(ValueError, match="unshaped"):
        Fabric(FabricSpec(), shaped=False, switch_buffer_bytes=64_000)


@pytest.mark.parametrize("mtu", [1500, 4200, 9000])
def test_htb_burst_holds_ten_packets_of_the_mtu(mtu):
    _, cls = hostnet.htb_argvs("t0p0g0-e1", 30, mtu)
    # 30 Mbit/s drains 3750 B per ms: the burst floor of ten full packets decides here
    assert int(cls[cls.index("burst") + 1]) >= 10 * mtu


def test_ring_port_times_how_long_the_oldest_frame_waited():
    """RingPort.drain records now (CLOCK_REALTIME) minus the kernel's stamp of the oldest ready
    frame: the endpoint's receive lateness (analysis/fidelity.py)."""
    import time
    from model.lateness import lateness_bucket
    from traffic.nic.endpoint_support import LatenessHistogram
    from traffic.nic.packet_io import RingPort
    ring = bytearray(SLOT * 4)
    put_slot(ring, 0, b"old frame")
    put_slot(ring, 1, b"newer frame")
    stamp = time.time_ns() - 5_000_000_000          # stamped 5 s ago
    struct.pack_into("<II", ring, 16, stamp // 1_000_000_000, stamp % 1_000_000_000)
    port = RingPort.__new__(RingPort)                # the ring without a socket
    port._ring, port.frame_size, port.frame_nr, port._next = memoryview(ring), SLOT, 4, 0
    port.truncated, port.rx_lateness = 0, LatenessHistogram()
    assert port.drain(lambda f: None, 16) == 2
    # one sample per drain, 5 s and a little: 5e9 ns has bit length 33 and next bits 00, so
    # bucket (33 - 2) * 4 = 124, whose upper edge 5 << 30 = 5.37e9 leaves the test 0.37 s
    assert port.rx_lateness.sparse() == [[lateness_bucket(5_000_000_000), 1]]
    assert lateness_bucket(5_000_000_000) == 124
    assert port.drain(lambda f: None, 16) == 0 and port.rx_lateness.samples == 1
