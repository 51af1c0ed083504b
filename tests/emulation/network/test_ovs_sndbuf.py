"""Parsing `ss -0 -m -n -p` and deciding what to do about ovs-vswitchd's transmit socket buffer.
The samples were recorded on the lab VM (Debian 12, iproute2 ss) from a running fabric, from
ovs-vswitchd right after it sent its first frame with the default wmem, and from a fresh one."""
import pytest

from emulation.network import ovs_sndbuf as sb

# Running 1-plane fabric, vswitchd restarted with wmem_default=4194304 (tx socket fd 103).
FABRIC_BIG = """\
Netid Recv-Q Send-Q Local Address:Port      Peer Address:PortProcess                                                                                     
p_raw 0      0                [0]:*                     *     users:(("ovs-vswitchd",pid=14759,fd=103)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o0,bl0,d0) 
p_raw 0      0                  *:t0p0g0-e1             *     users:(("ovs-vswitchd",pid=14759,fd=37)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
p_raw 0      0                  *:t0p0g0-e2             *     users:(("ovs-vswitchd",pid=14759,fd=40)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
p_raw 0      0                  *:t0p0g1-e2             *     users:(("ovs-vswitchd",pid=14759,fd=44)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
p_raw 0      0                  *:t0p0g1-e1             *     users:(("ovs-vswitchd",pid=14759,fd=45)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
p_raw 0      0                  *:t1p0s0-e1             *     users:(("ovs-vswitchd",pid=14759,fd=49)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
p_raw 0      0                  *:t1p0s0-e2             *     users:(("ovs-vswitchd",pid=14759,fd=50)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
"""

# Same, with `ss -a` (State column).
FABRIC_BIG_WITH_STATE = """\
Netid State  Recv-Q Send-Q Local Address:Port      Peer Address:PortProcess                                                                                     
p_raw UNCONN 0      0                [0]:*                     *     users:(("ovs-vswitchd",pid=14759,fd=103)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o0,bl0,d0) 
p_raw UNCONN 0      0                  *:t0p0g0-e1             *     users:(("ovs-vswitchd",pid=14759,fd=37)) skmem:(r0,rb212992,t0,tb4194304,f0,w0,o176,bl0,d0)
"""

# vswitchd restarted with the default wmem (212992), then one frame out of a probe bridge.
BORN_SMALL = """\
Netid Recv-Q Send-Q Local Address:Port       Peer Address:PortProcess                                                                                    
p_raw 0      0                  *:mrclabsb-a             *     users:(("ovs-vswitchd",pid=22992,fd=36)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o176,bl0,d0)
p_raw 0      0                [0]:*                      *     users:(("ovs-vswitchd",pid=22992,fd=43)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)  
"""

# vswitchd that has not output anything yet: no packet sockets at all.
NOT_BORN = "Netid Recv-Q Send-Q Local Address:Port Peer Address:PortProcess\n"


def test_parse_fabric_sample():
    socks = sb.parse_ss_packet_sockets(FABRIC_BIG)
    assert len(socks) == 7
    tx = socks[0]
    assert (tx.netid, tx.local, tx.users, tx.sndbuf, tx.wmem_alloc) == \
        ("p_raw", "[0]:*", (("ovs-vswitchd", 14759, 103),), 4194304, 0)
    assert [s.local for s in socks[1:3]] == ["*:t0p0g0-e1", "*:t0p0g0-e2"]
    assert sb.parse_ss_packet_sockets(FABRIC_BIG_WITH_STATE)[:2] == socks[:2]


def test_tx_socket_is_the_unbound_protocol_0_one():
    tx = sb.ovs_tx_sockets(sb.parse_ss_packet_sockets(BORN_SMALL))
    assert [(s.local, s.users[0][2], s.sndbuf) for s in tx] == [("[0]:*", 43, 212992)]
    assert sb.ovs_tx_sockets(sb.parse_ss_packet_sockets(NOT_BORN)) == []


def test_decide_ok_create_restart():
    assert sb.decide(sb.parse_ss_packet_sockets(FABRIC_BIG)).action == "ok"
    assert sb.decide(sb.parse_ss_packet_sockets(NOT_BORN)).action == "create"
    small = sb.decide(sb.parse_ss_packet_sockets(BORN_SMALL))
    assert small.action == "restart"
    assert "212992" in small.reason and "22992" in small.reason
    # The threshold is the caller's: 200 KB is enough for a socket of 212992.
    assert sb.decide(sb.parse_ss_packet_sockets(BORN_SMALL), 200_000).action == "ok"
    assert sb.decide(sb.parse_ss_packet_sockets(FABRIC_BIG), 4194305).action == "restart"


def test_rx_sockets_alone_do_not_count():
    rx_only = "\n".join(l for l in FABRIC_BIG.splitlines() if "[0]:*" not in l)
    assert sb.decide(sb.parse_ss_packet_sockets(rx_only)).action == "create"


def test_foreign_process_with_protocol_0_socket_is_ignored():
    foreign = FABRIC_BIG.splitlines()[0] + "\n" + \
        'p_raw 0      0   [0]:*   *   users:(("tcpdump",pid=5,fd=3)) ' \
        'skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)\n'
    assert sb.decide(sb.parse_ss_packet_sockets(foreign)).action == "create"
    # A datagram packet socket of vswitchd is not the raw transmit socket either.
    dgram = foreign.replace("p_raw", "p_dgr").replace("tcpdump", "ovs-vswitchd")
    assert sb.decide(sb.parse_ss_packet_sockets(dgram)).action == "create"


def test_skmem_on_a_continuation_line():
    wrapped = ('p_raw 0 0 [0]:* * users:(("ovs-vswitchd",pid=7,fd=9))\n'
               '\t skmem:(r0,rb212992,t0,tb8388608,f0,w0,o0,bl0,d0)\n')
    (tx,) = sb.ovs_tx_sockets(sb.parse_ss_packet_sockets(wrapped))
    assert tx.sndbuf == 8388608


def test_missing_skmem_is_an_error_not_a_pass():
    line = 'p_raw 0 0 [0]:* * users:(("ovs-vswitchd",pid=7,fd=9))\n'
    with pytest.raises(ValueError, match="skmem"):
        sb.decide(sb.parse_ss_packet_sockets(line))


@pytest.mark.parametrize("bad", [0, -1, 1.5, "4M", True])
def test_bad_threshold(bad):
    with pytest.raises(ValueError, match="min_bytes"):
        sb.decide([], bad)


def test_garbage_line_raises_clearly():
    with pytest.raises(ValueError, match="unexpected ss"):
        sb.parse_ss_packet_sockets("p_raw 0\n")


def test_min_buffer_holds_the_fabric_backlog():
    # 32 switch ports x 50 queued full frames x ~2.3 KB truesize must fit (module docstring).
    assert sb.MIN_TX_SNDBUF >= 32 * 50 * 2304
    assert sb.MIN_TX_SNDBUF == 4 * 1024 * 1024


@pytest.mark.parametrize("bad", ["p_raw\n", "p_raw UNCONN 0\n"])
def test_truncated_lines_raise_clearly(bad):
    with pytest.raises(ValueError, match="unexpected ss"):
        sb.parse_ss_packet_sockets(bad)


def test_cleanup_knows_the_probe_names_and_nothing_else():
    from emulation.network import cleanup
    for ours in ("mrclabsb0", "mrclabsb-a", "mrclabsb-b", "mrclabsb-a@if12"):
        assert cleanup.is_our_sndbuf_probe(ours), ours
    for foreign in ("mrclabsb", "mrclabsb1", "mrclabsb-c", "xmrclabsb0", "br0", "t0p0g0",
                    "mrclab_x", "mrclabsb-ab"):
        assert not cleanup.is_our_sndbuf_probe(foreign), foreign
    assert cleanup.SNDBUF_PROBE_BRIDGE == "mrclabsb0"


def test_tx_sndbuf_scales_with_the_frame_truesize_of_the_mtu():
    # 1500 + 14 + 384 = 1898 -> 2048-byte buffer + 256 = 2304; 9000 + 14 + 384 = 9398 -> 16384
    # + 256 = 16640. 4 MiB / 2304 = 1820 frames; at 9000 they need 1820 x 16640 = 30284800.
    assert sb.frame_truesize(1500) == 2304 and sb.frame_truesize(9000) == 16640
    assert sb.tx_sndbuf_for_mtu(1500) == 4 * 1024 * 1024
    assert sb.tx_sndbuf_for_mtu(9000) == 1820 * 16640
    with pytest.raises(ValueError, match="mtu"):
        sb.tx_sndbuf_for_mtu(0)


def test_port_receive_buffer_holds_256_full_frames_of_the_mtu():
    # MTU 9000: 9000 + 14 header + 384 headroom/shared info = 9398 -> 16384-byte buffer + 256 of
    # struct sk_buff = 16640 per frame, x 256 = 4,259,840. MTU 1500: 1898 -> 2048 + 256 = 2304,
    # x 256 = 589,824: both above Debian's 212,992 rmem_default (~12 jumbo frames).
    assert sb.rx_rcvbuf_for_mtu(9000) == 4_259_840
    assert sb.rx_rcvbuf_for_mtu(1500) == 589_824


def test_port_receive_socket_buffer_and_drops_are_read():
    line = ('p_raw 0      0                  *:t0p0g0-e1             *     '
            'users:(("ovs-vswitchd",pid=14759,fd=37)) '
            'skmem:(r0,rb4259840,t0,tb4194304,f0,w0,o176,bl0,d47)\n'
            'p_raw 0      0                  *:h0-p0             *     '
            'users:(("python3",pid=1,fd=3)) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)\n')
    (rx,) = sb.ovs_port_rx_sockets(sb.parse_ss_packet_sockets(line), "t0p0g0-e1")
    assert (rx.rcvbuf, rx.drops) == (4_259_840, 47)
    assert sb.ovs_port_rx_sockets(sb.parse_ss_packet_sockets(line), "h0-p0") == []
