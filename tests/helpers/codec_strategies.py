"""Hypothesis strategies for the codec tests: random routes on a 2-plane, 3-group, 3-spine fabric
and random messages of every kind (data, SACK, NACK, probe) with every field drawn over its full
wire width."""
from hypothesis import strategies as st

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import MODES, Codec
from traffic.core.messages import IMM_OPCODES, WRITE_OPCODES, DataPacket, Nack, Probe, Sack

u8, u16, u24, u32, u64 = (st.integers(0, (1 << b) - 1) for b in (8, 16, 24, 32, 64))

TOPO = Topology(FabricSpec(planes=2, groups=3, spines=3, hosts_per_group=2))


CODEC = Codec(TOPO)


@st.composite
def routes(draw):
    """(src host, dst host, plane, mode, a wire EV on that plane)."""
    n = len(TOPO.hosts)
    src = draw(st.integers(0, n - 1))
    dst = draw(st.integers(0, n - 1).filter(lambda d: d != src))
    plane = draw(st.integers(0, TOPO.spec.planes - 1))
    mode = draw(st.sampled_from(MODES))
    ev = make_ev(plane, draw(st.integers(0, TOPO.spec.spines - 1)), draw(st.integers(1, 0xFFFF)))
    return src, dst, plane, mode, ev


def evs():
    return st.builds(make_ev, st.integers(0, 15), st.integers(0, 63), st.integers(1, 0xFFFF))


@st.composite
def data_packets(draw, ev):
    opcode = draw(st.sampled_from(sorted(WRITE_OPCODES)))
    return DataPacket(
        dest_qp=draw(u24), psn=draw(u24), opcode=opcode, msn=draw(u24), va=draw(u64),
        rkey=draw(u32), dma_len=draw(u32), payload=draw(st.binary(max_size=1100)),
        imm=draw(u32) if opcode in IMM_OPCODES else None,
        timestamp=draw(st.none() | u64), ack_req=draw(st.booleans()),
        retransmit=draw(st.booleans()), ev=ev)


@st.composite
def sacks(draw, ev):
    return Sack(dest_qp=draw(u24), cum_psn=draw(u24), bitmap=draw(u64), sack_base=draw(u32),
                ev=draw(evs()), skip=draw(u8), mpr=draw(u8), port_status=draw(u8),
                echo_timestamp=draw(u64), ooo_count=draw(u32), window_penalty=draw(u32),
                rx_bytes=draw(u64), path_ev=ev)


@st.composite
def nacks(draw, ev):
    return Nack(dest_qp=draw(u24), psn=draw(u24), reason=draw(u8), ev=draw(evs()),
                port_status=draw(u8), echo_timestamp=draw(u64), path_ev=ev)


@st.composite
def probes(draw, ev):
    return Probe(ev=draw(evs()), seq=draw(u24), timestamp=draw(u64), response=draw(st.booleans()),
                 src_qp=draw(u32), port_status=draw(u8), path_ev=ev)


@st.composite
def messages(draw):
    """(route, message, ecn codepoint)."""
    route = draw(routes())
    kind = draw(st.sampled_from((data_packets, sacks, nacks, probes)))
    return route, draw(kind(route[4])), draw(st.integers(0, 3))
