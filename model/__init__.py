"""The model every package shares, and nothing else: the layering's bottom.

`topology` (a fabric spec -> names, ports, dpids, MACs, IPv6 addresses, SRv6 uSID containers, the
EV bit layout), `dscp` (the code points and ECN bits the fabric and the endpoints agree on), and
`argtypes` (the validated number/port/file types of the one `mrclab` argument tree, which spans
every package). It imports no other project package, so traffic, controller, analysis and
emulation can all import it without forming a cycle (tests/unit/test_layering.py checks this).
"""
