"""The Scapy layers (traffic/layers.py) declare the same fields as the wire table
(model/wire.py): same names, in the same order, at the same bit positions and widths, and each
layer builds as many bytes as the table's header holds."""
from __future__ import annotations

import pytest
from scapy.compat import raw

from model import wire
from traffic import layers


def scapy_layout(layer) -> list[tuple[str, int, int]]:
    """(name, first bit from the header start, width in bits) of every field that takes bytes
    where it is declared (the ICRC placeholder is appended after the payload instead)."""
    out, bit = [], 0
    for fld in layer.fields_desc:
        if isinstance(fld, layers._ICRCPlaceholder):
            continue
        width = fld.size if getattr(fld, "size", None) is not None else int(fld.sz * 8)
        out.append((fld.name, bit, width))
        bit += width
    return out


def table_layout(header: wire.Header) -> list[tuple[str, int, int]]:
    return [(f.name, f.first_bit, f.width) for f in header.fields]


PAIRS = [(layers.BTH, wire.BTH), (layers.METH, wire.METH), (layers.TSETH, wire.TSETH),
         (layers.RETH, wire.RETH), (layers.ImmDt, wire.IMMDT), (layers.SACK, wire.SACK),
         (layers.NACK, wire.NACK), (layers.EPH, wire.EPH)]


@pytest.mark.parametrize("layer,header", PAIRS, ids=[h.name for _, h in PAIRS])
def test_scapy_fields_are_the_table_fields(layer, header):
    assert scapy_layout(layer) == table_layout(header)


@pytest.mark.parametrize("layer,header", PAIRS, ids=[h.name for _, h in PAIRS])
def test_scapy_builds_the_table_length(layer, header):
    trailer = wire.ICRC_LEN if layer is layers.BTH else 0
    assert len(raw(layer())) == header.size + trailer


def test_the_layers_bind_the_table_port_and_flag():
    from scapy.layers.inet import UDP
    assert any(cls is layers.BTH and fields.get("dport") == wire.ROCE_UDP_PORT
               for fields, cls in UDP.payload_guess)
    assert raw(layers.METH(flags="tseth"))[wire.METH["flags"].byte_span()[0]] == \
        wire.METH_FLAG_TSETH


def test_the_comparison_sees_a_moved_field():
    moved = wire.Header("SACK", tuple(
        wire.Field(f.name, f.offset, f.size, f.shift, f.bits) if f.name != "mpr"
        else wire.Field("mpr", 22, 1) for f in wire.SACK.fields))
    assert scapy_layout(layers.SACK) != table_layout(moved)
