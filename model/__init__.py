"""The model every package shares, and nothing else: the layering's bottom.

`topology` (a fabric spec -> names, ports, dpids, MACs, IPv6 addresses, SRv6 uSID containers, the
EV bit layout), `dscp` (the code points and ECN bits the fabric and the endpoints agree on),
`argtypes` (the validated number/port/file types of the one `mrclab` argument tree, which spans
every package), `events` (the names in the event and fault logs, shared by the code that writes
them and the code that reads them), `proc` (the one checked runner of external commands),
`switchport` (the switch port policy), `lateness` (the lateness histogram's bucket layout, a
log format), `transport_defaults` (the endpoint and QP defaults the analysis judges by),
`timescale` (the time scale: what a time and a rate are in the emulated and in the wall world)
and `clockalign` (a cluster run's server clocks against the controller's: measured by the
runner, applied and judged by the analysis). It imports no other project package, so traffic,
controller, analysis and emulation can all import it without forming a cycle
(tests/house/test_layering.py checks this).
"""
