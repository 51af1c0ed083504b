"""Traffic-class values the fabric writes and the endpoints read (outermost IPv6 header).

The trimming program (emulation/bpf/trim.c, modelled by emulation/vqueue.py) marks trimmed
packets with these DSCPs; receivers (traffic/codec.py) map them to NACK TRIMMED /
TRIMMED_LASTHOP. Both come from RFC 2474 pool 3 (xxxx11: experimental / local use), so they cannot
collide with a standard marking; MRC senders use DSCP 0 for data.
"""
DSCP_TRIMMED = 0x3B
DSCP_TRIMMED_LASTHOP = 0x3F
TRIMMED_DSCPS = frozenset((DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP))

# RFC 3168 ECN field values.
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3
