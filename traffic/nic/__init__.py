"""The endpoint process of one host: the I/O around the transport core.

    endpoint           one event loop for every QP of the host (may run compiled)
    endpoint_support   configuration, event log, pacer, counters (no sockets)
    packet_io          AF_PACKET ports with a kernel BPF filter
    control            the endpoint's unix-socket control interface
    endpoint_cli       the process's entry point (python -m traffic.nic.endpoint_cli)
"""
from traffic import compiled as _compiled

__path__ = _compiled.search_path(__path__, __name__)
