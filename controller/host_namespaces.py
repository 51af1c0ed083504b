"""Which namespaces POST /hosts may register, and how the controller keeps them.

The controller (root) later runs tc and nft inside them, so a pid is taken only if it runs as
the controller's own user (the fabric's host shells do; another user's process does not), its
namespace holds every NIC port of the host it is registered as (h<n>-p<plane>, which the
fabric creates) and it is not the controller's own namespace. The namespace itself, not the
pid, is what is kept: it is opened at registration and the open handle is what every later
command enters (`nsenter --net=/proc/<controller>/fd/<n>`), so a pid that exits and is reused
by another process can never redirect a fault. (Only the fabric's owner reaches POST /hosts at
all: controller.api_auth.)"""
from __future__ import annotations

import os

from model.topology import Topology, host_intf


class HostNamespace:
    """An open handle on a host's network namespace; `path` names it for nsenter --net."""

    def __init__(self, fd: int, pid: int):
        self.fd, self.pid = fd, pid
        self.path = f"/proc/{os.getpid()}/fd/{fd}"

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def checked_host_namespaces(topo: Topology, pids) -> dict[str, HostNamespace]:
    """{host name: its opened namespace} after checking every entry; ValueError names the first
    bad one (and nothing stays open)."""
    if not isinstance(pids, dict) or not pids:
        raise ValueError('POST /hosts needs a JSON object {"h0": pid, ...}')
    clean: dict[str, HostNamespace] = {}
    try:
        for name, pid in pids.items():
            try:
                host = topo.host(name)
            except (KeyError, TypeError) as err:
                raise ValueError(str(err.args[0] if err.args else err)[:120]) from None
            if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                raise ValueError(f"pid of {name} must be a positive integer, got "
                                 f"{repr(pid)[:80]}")
            clean[name] = open_host_namespace(topo, name, host.index, pid)
    except BaseException:
        for ns in clean.values():
            ns.close()
        raise
    return clean


def open_host_namespace(topo: Topology, name: str, index: int, pid: int) -> HostNamespace:
    """Open pid's network namespace, then check it (module docstring); the check reads the
    namespace through the pid, so the pid's namespace is compared with the opened one after."""
    try:
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ValueError(f"pid {pid} of {name} is not a running process") from None
    except OSError as err:
        raise ValueError(f"pid {pid} of {name}: cannot open its network namespace "
                         f"({err.strerror})") from None
    try:
        check_host_namespace(topo, name, index, pid)
        held, now = os.fstat(fd), os.stat(f"/proc/{pid}/ns/net")
        if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
            raise ValueError(f"pid {pid} of {name} changed namespace while being checked")
    except FileNotFoundError:
        os.close(fd)
        raise ValueError(f"pid {pid} of {name} is not a running process") from None
    except BaseException:
        os.close(fd)
        raise
    return HostNamespace(fd, pid)


def check_host_namespace(topo: Topology, name: str, index: int, pid: int) -> None:
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
        theirs = os.stat(f"/proc/{pid}/ns/net")
        with open(f"/proc/{pid}/net/dev") as f:
            interfaces = {line.split(":", 1)[0].strip() for line in f.readlines()[2:]}
    except FileNotFoundError:
        raise ValueError(f"pid {pid} of {name} is not a running process") from None
    except OSError as err:
        raise ValueError(f"pid {pid} of {name}: cannot inspect its network namespace "
                         f"({err.strerror})") from None
    if owner != os.getuid():
        raise ValueError(f"pid {pid} of {name} runs as uid {owner}, not as the fabric's owner "
                         f"(uid {os.getuid()}): only the fabric's own host namespaces are taken")
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
