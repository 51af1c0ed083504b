"""ACKs in a control class: SACKs, NACKs and EV probes leave the endpoints with DSCP_CONTROL
(model/dscp.py) and every port's HTB serves that DSCP ahead of data. Expected bytes and tc
commands written by hand from the rule."""
from model.dscp import DSCP_CONTROL, PRIORITY_DSCPS
from model.topology import FabricSpec, Topology
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Nack, NackReason, Opcode, Probe, Sack
from emulation.network import hostnet

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
EV = 0x00400101          # plane 0, spine 1


def traffic_class(frame: bytes, srv6: bool) -> list[int]:
    """The 8-bit traffic class of the frame's IPv6 header(s): byte 14 high nibble onwards."""
    offsets = (14, 54) if srv6 else (14,)
    return [(frame[o] & 0x0F) << 4 | frame[o + 1] >> 4 for o in offsets]


def test_control_messages_carry_the_control_dscp_and_data_dscp_zero():
    for mode in ("ecmp", "srv6"):
        enc = Codec(TOPO).encoder(0, 3, 0, mode)
        srv6 = mode == "srv6"
        data = DataPacket(dest_qp=1, psn=2, opcode=Opcode.WRITE_ONLY, msn=0, va=0, rkey=1,
                          dma_len=4, payload=b"abcd", ev=EV)
        assert traffic_class(enc.encode(data), srv6) == [0x02] * (1 + srv6)   # ECT(0) only
        for msg in (Sack(dest_qp=1, cum_psn=5, path_ev=EV),
                    Nack(dest_qp=1, psn=5, reason=NackReason.TRIMMED, path_ev=EV),
                    Probe(ev=EV, seq=9, path_ev=EV),
                    Probe(ev=EV, seq=9, response=True, path_ev=EV)):
            # 0x37 << 2 | ECT(0) = 0xDE on every IPv6 header (the switches read the outer one)
            assert traffic_class(enc.encode(msg), srv6) == [0xDE] * (1 + srv6), msg


def test_a_control_frame_decodes_as_itself_not_as_a_trimmed_packet():
    codec = Codec(TOPO)
    frame = codec.encoder(0, 3, 0, "srv6").encode(Sack(dest_qp=7, cum_psn=5, path_ev=EV))
    msg, meta = codec.decode(frame)
    assert isinstance(msg, Sack) and msg.cum_psn == 5 and not meta.trimmed


def test_every_port_without_trimming_gets_a_control_class_ahead_of_data():
    # 100 Mbit/s, MTU 9000: burst 10 frames = 90000 bytes; control assured 99 Mbit/s prio 0 (so
    # it stays under its rate: HTB serves such a leaf before one that borrows), the rest 1 Mbit/s
    # prio 1, both up to 100; DSCP 0x37 -> traffic class 0xdc under mask 0xfc
    shape = ["burst", "90000", "cburst", "90000"]
    assert hostnet.htb_argvs("h0-p0", 100, 9000, control_class=True) == [
        ["tc", "qdisc", "replace", "dev", "h0-p0", "root", "handle", "5:", "htb", "default", "20"],
        ["tc", "class", "replace", "dev", "h0-p0", "parent", "5:", "classid", "5:1", "htb",
         "rate", "100mbit", "ceil", "100mbit", *shape],
        ["tc", "class", "replace", "dev", "h0-p0", "parent", "5:1", "classid", "5:10", "htb",
         "rate", "99mbit", "ceil", "100mbit", "prio", "0", *shape],
        ["tc", "class", "replace", "dev", "h0-p0", "parent", "5:1", "classid", "5:20", "htb",
         "rate", "1mbit", "ceil", "100mbit", "prio", "1", *shape],
        ["tc", "filter", "replace", "dev", "h0-p0", "parent", "5:", "protocol", "ipv6", "pref",
         "1", "u32", "match", "ip6", "priority", "0xdc", "0xfc", "flowid", "5:10"],
    ]
    assert DSCP_CONTROL << 2 == 0xDC and DSCP_CONTROL in PRIORITY_DSCPS


def test_without_the_control_class_one_fifo_as_before():
    argvs = hostnet.htb_argvs("h0-p0", 100, 9000)
    assert len(argvs) == 2 and argvs[0][-1] == "1"
    assert not any(a[1] == "filter" for a in argvs)


def test_the_fabric_shapes_host_ends_with_the_control_class(monkeypatch):
    from emulation.network.fabric import Fabric
    for control in (True, False):
        fab = Fabric(FabricSpec(), control_class=control)
        host_cmds, switch_cmds = [], []
        monkeypatch.setattr(fab, "cmd_in_host", lambda n, argv: host_cmds.append(argv))
        # the switch ends' commands run on their server: this machine's, one at a time
        monkeypatch.setattr("emulation.cluster.fabric_servers.run_checked",
                            lambda argv, **kw: switch_cmds.append(argv))
        fab._shape_links()
        filters = [a for a in host_cmds + switch_cmds if a[1] == "filter"]
        # every host end and every switch end of every link: 8 host links, 8 fabric links
        ends = 8 * 2 + 8 * 2
        assert len(filters) == (ends if control else 0)


def test_ack_round_trips_are_sack_arrival_minus_the_echoed_send_stamp():
    import pandas as pd
    from analysis.delay import ack_round_trips_ns, delay_percentile_ms
    rows = pd.DataFrame({
        "time_ns": [1_000, 5_000, 9_000, 12_000, 20_000],
        "direction": ["rx", "rx", "tx", "rx", "rx"],
        "opname": ["SACK", "SACK", "SACK", "NACK", "SACK"],
        "sack_echo_ts": pd.array([400, 0, 100, None, 2_000], dtype="UInt64"),
    })
    # rx SACKs echoing a stamp: 1000 - 400 = 600, 20000 - 2000 = 18000 (the tx SACK, the one
    # without a stamp and the NACK do not count)
    assert list(ack_round_trips_ns(rows)) == [600, 18_000]
    assert delay_percentile_ms(ack_round_trips_ns(rows), 50) == 0.0006
