"""Every `mrclab bench`: each measures the compared implementations side by side in one run,
prints a table (or, with --json, one JSON object through the CLI) and returns its figures. Speed
and memory targets live here, never in timed unit tests.

codec (struct codec vs Scapy), pcap (the pcap loader vs Scapy's rdpcap), goodput / failover /
memory / cpu (endpoints on a real fabric), trim (the trimming program's cost), fidelity (the
demo idle and loaded: does the machine's load change the result, and does the monitor say so).
"""
