"""Which pids POST /hosts may register. The controller (root) later runs tc and nft inside
their network namespaces, so a pid is taken only if its namespace holds every NIC port of the
host it is registered as (h<n>-p<plane>, which the fabric creates) and is not the
controller's own namespace."""
from __future__ import annotations

import os

from model.topology import Topology, host_intf


def checked_host_pids(topo: Topology, pids) -> dict[str, int]:
    """{host name: pid} after checking every entry; ValueError names the first bad one."""
    if not isinstance(pids, dict) or not pids:
        raise ValueError('POST /hosts needs a JSON object {"h0": pid, ...}')
    clean = {}
    for name, pid in pids.items():
        try:
            host = topo.host(name)
        except KeyError as err:
            raise ValueError(err.args[0]) from None
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise ValueError(f"pid of {name} must be a positive integer, got {pid!r}")
        check_host_namespace(topo, name, host.index, pid)
        clean[name] = pid
    return clean


def check_host_namespace(topo: Topology, name: str, index: int, pid: int) -> None:
    try:
        theirs = os.stat(f"/proc/{pid}/ns/net")
        with open(f"/proc/{pid}/net/dev") as f:
            interfaces = {line.split(":", 1)[0].strip() for line in f.readlines()[2:]}
    except FileNotFoundError:
        raise ValueError(f"pid {pid} of {name} is not a running process") from None
    except OSError as err:
        raise ValueError(f"pid {pid} of {name}: cannot inspect its network namespace "
                         f"({err.strerror})") from None
    own = os.stat("/proc/self/ns/net")
    if (theirs.st_dev, theirs.st_ino) == (own.st_dev, own.st_ino):
        raise ValueError(f"pid {pid} of {name} shares the controller's network namespace; "
                         f"register the process that holds {name}'s namespace (its Mininet "
                         f"host shell)")
    ports = [host_intf(index, plane) for plane in range(topo.spec.planes)]
    missing = [p for p in ports if p not in interfaces]
    if missing:
        raise ValueError(f"pid {pid} is not in {name}'s network namespace: it has no "
                         f"interface {', '.join(missing)} (it has "
                         f"{', '.join(sorted(interfaces)[:8]) or 'none'})")
