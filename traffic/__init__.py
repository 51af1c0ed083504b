"""The transport: what runs on every emulated host.

    core/      the sans-I/O protocol: codec, messages, MRC sender and receiver, EV set, NSCC,
               loss policy, RTT and timers, reverse paths, RoCE RC baseline, path prober,
               denylist (no sockets, no clock: time is passed in)
    nic/       the endpoint process: one event loop over the core's QPs, AF_PACKET port I/O,
               its control socket
    workload/  collectives and the worker process that runs them over MRC, RoCE or kernel TCP
    layers.py  Scapy layers of the wire format (tests, captures)
    compiled.py  which build of the per-packet modules runs (interpreted or Cython)
"""
