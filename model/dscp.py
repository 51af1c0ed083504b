"""Traffic-class values the fabric writes and the endpoints read (outermost IPv6 header).

The trimming program (emulation/bpf/trim.c, modelled by emulation/vqueue.py) marks trimmed
packets with these DSCPs; receivers (traffic/codec.py) map them to NACK TRIMMED /
TRIMMED_LASTHOP. Both come from RFC 2474 pool 3 (xxxx11: experimental / local use), so they cannot
collide with a standard marking; MRC senders use DSCP 0 for data, DSCP_CONTROL for the rest.
"""
DSCP_TRIMMED = 0x3B
DSCP_TRIMMED_LASTHOP = 0x3F
TRIMMED_DSCPS = frozenset((DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP))

# SACKs, NACKs and EV probes (requests and responses) leave the endpoints with this DSCP, and
# every port serves it ahead of data (the trimmed headers' HTB priority class): an ACK that
# waits behind a queue of data inflates the round trip every timer of the sender is built on,
# which is why deployments carry acknowledgements in a class of their own. Pool 3 as above.
DSCP_CONTROL = 0x37
# The DSCPs a port's priority class serves ahead of data.
PRIORITY_DSCPS = (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, DSCP_CONTROL)

# RFC 3168 ECN field values.
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3
