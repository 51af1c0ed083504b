"""Adapter for the in-fabric trimming / virtual-queue ECN program (emulation/network/bpf/trim.c).

attach() loads one program instance per switch egress port with tc (clsact egress, direct
action); every instance gets its own two maps (config, state) because the object pins nothing,
so ports never share state and ifindex clashes between namespaces cannot mix them up.
Python finds a port's maps from the program id tc reports and reads/writes them with raw bpf()
syscalls (controller/bpf_maps.py, shared with the controller, which serves the counters).

The decisions themselves are modelled in emulation/network/vqueue.py (pure); this module only moves
bytes between Python and the kernel and builds tc command lines.
"""
from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from controller.bpf_maps import (  # noqa: F401  (re-exported: callers use trimming.*)
    CONFIG_MAP,
    FILTER_PREF,
    STATE_FIELDS,
    STATE_MAP,
    STATE_STRUCT,
    TrimmingError,
    map_lookup,
    map_update,
    parse_state,
    port_maps,
    prog_id_from_filters,
)
from emulation.network.vqueue import (  # noqa: F401  (re-exported for callers of this adapter)
    DSCP_TRIMMED,
    DSCP_TRIMMED_LASTHOP,
    TRIMMED_DSCPS,
    ConfigError,
    PortConfig,
    default_port_config,
)
from emulation.network.hostnet import CONTROL_SHARE, priority_filter_argvs
from model.dscp import PRIORITY_DSCPS
from model.propagation import port_bdp_bytes
from model.proc import run_checked as run_command

BPF_DIR = Path(__file__).resolve().parent / "bpf"
BPF_OBJECT = BPF_DIR / "build" / "trim.o"
BPF_SECTION = "tc"
FILTER_HANDLE = 1

# Map value layouts: struct port_config / struct port_state in trim.c.
CONFIG_STRUCT = struct.Struct("<QIIIIII")
CFG_CONFIGURED, CFG_MARK, CFG_TRIM, CFG_LAST_HOP = 1, 2, 4, 8


# ---------------------------------------------------------------- tc command builders (pure)

LEAF_CLASSES = ("1:10", "1:20")   # port_qdisc_commands' HTB leaves: trimmed headers, the rest


def attach_commands(intf: str, obj: str | Path = BPF_OBJECT) -> list[list[str]]:
    """argv lists that put the program on intf's egress (clsact must exist: see attach())."""
    return [["tc", "filter", "replace", "dev", intf, "egress", "pref", str(FILTER_PREF),
             "handle", str(FILTER_HANDLE), "bpf", "da", "obj", str(obj), "sec", BPF_SECTION]]


def _kbit(mbit: float) -> str:
    return f"{max(1, int(round(mbit * 1000)))}kbit"


def port_qdisc_commands(intf: str, rate_mbit: float, header_share: float = CONTROL_SHARE,
                        limit_packets: int | None = None,
                        control_class: bool = True) -> list[list[str]]:
    """HTB at rate_mbit where trimmed headers (DSCP TRIMMED / TRIMMED_LASTHOP on the outermost
    IPv6 header) and, with control_class, SACKs, NACKs and probes (DSCP_CONTROL,
    model/dscp.py) overtake full packets.

    This kernel has HTB but no prio qdisc, so priority is HTB's: class 1:10 (prio 0) holds the
    trimmed headers, 1:20 (prio 1, the default) everything else; both may use the whole link
    (ceil), and whenever both have packets, 1:10 is served first: it stays under its assured
    rate (header_share of the link, hostnet.CONTROL_SHARE: why it is nearly the whole link).
    u32 'ip6 priority' matches the 8-bit traffic class; mask 0xfc ignores the ECN bits.
    """
    if isinstance(rate_mbit, bool) or not isinstance(rate_mbit, (int, float)) or rate_mbit <= 0:
        raise ValueError(f"rate_mbit must be a positive number, got {rate_mbit!r}")
    if not 0 < header_share < 1:
        raise ValueError(f"header_share must be between 0 and 1, got {header_share!r}")
    rate = _kbit(rate_mbit)
    cmds = [
        ["tc", "qdisc", "replace", "dev", intf, "root", "handle", "1:", "htb", "default", "20"],
        ["tc", "class", "replace", "dev", intf, "parent", "1:", "classid", "1:1", "htb",
         "rate", rate, "ceil", rate],
        ["tc", "class", "replace", "dev", intf, "parent", "1:1", "classid", "1:10", "htb",
         "rate", _kbit(rate_mbit * header_share), "ceil", rate, "prio", "0"],
        ["tc", "class", "replace", "dev", intf, "parent", "1:1", "classid", "1:20", "htb",
         "rate", _kbit(rate_mbit * (1 - header_share)), "ceil", rate, "prio", "1"],
    ]
    if limit_packets is not None:
        if isinstance(limit_packets, bool) or not isinstance(limit_packets, int) or limit_packets < 1:
            raise ValueError(f"limit_packets must be a positive integer, got {limit_packets!r}")
        for cls in ("10", "20"):
            cmds.append(["tc", "qdisc", "replace", "dev", intf, "parent", f"1:{cls}",
                         "handle", f"{cls}:", "pfifo", "limit", str(limit_packets)])
    dscps = PRIORITY_DSCPS if control_class else (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP)
    return cmds + priority_filter_argvs(intf, "1:", "1:10", dscps)



def config_value(cfg: PortConfig) -> bytes:
    """struct port_config bytes for one PortConfig."""
    flags = CFG_CONFIGURED | (CFG_MARK if cfg.mark else 0) | (CFG_TRIM if cfg.trim else 0) \
        | (CFG_LAST_HOP if cfg.last_hop else 0)
    return CONFIG_STRUCT.pack(cfg.rate_bytes_per_s, cfg.ecn_min_bytes, cfg.ecn_max_bytes,
                              cfg.trim_bytes, cfg.drop_threshold, flags, 0)


# ---------------------------------------------------------------- running commands


def run(argv: list[str], netns_pid: int | None = None) -> str:
    """Run a command (in a network namespace if netns_pid); raise TrimmingError on failure."""
    return run_command(argv, timeout=30, netns_pid=netns_pid, error=TrimmingError)


def ensure_built() -> Path:
    """Build the BPF object if it is missing (setup.sh normally did); clear error if impossible."""
    if not BPF_OBJECT.exists():
        try:
            run(["make", "-s", "-C", str(BPF_DIR)])
        except TrimmingError as exc:
            raise TrimmingError(f"cannot build {BPF_OBJECT} (needs clang and libbpf-dev; "
                                f"run `make setup`): {exc}") from exc
    return BPF_OBJECT


# ---------------------------------------------------------------- per-port API


def prog_id(intf: str, netns_pid: int | None = None) -> int:
    """Id of our program on intf's egress; TrimmingError if it is not attached."""
    out = run(["tc", "filter", "show", "dev", intf, "egress"], netns_pid)
    return prog_id_from_filters(out, intf)

@contextmanager
def _port_maps(intf: str, netns_pid: int | None):
    with port_maps(prog_id(intf, netns_pid), intf) as fds:
        yield fds


def attach(intf: str, netns_pid: int | None = None) -> int:
    """Load the program on intf's egress (replacing an earlier one); returns the program id.

    Until configure() is called the program only counts offered packets and passes everything.
    """
    obj = ensure_built()
    qdiscs = run(["tc", "qdisc", "show", "dev", intf], netns_pid)
    if "qdisc clsact" not in qdiscs:
        run(["tc", "qdisc", "add", "dev", intf, "clsact"], netns_pid)
    for argv in attach_commands(intf, obj):
        run(argv, netns_pid)
    return prog_id(intf, netns_pid)


def configure(intf: str, cfg: PortConfig, netns_pid: int | None = None) -> None:
    if not isinstance(cfg, PortConfig):
        raise ConfigError(f"configure() needs a PortConfig, got {type(cfg).__name__}")
    with _port_maps(intf, netns_pid) as (cfg_fd, _state_fd, _prog):
        map_update(cfg_fd, config_value(cfg))


def counters(intf: str, netns_pid: int | None = None) -> dict:
    """Per-port counters: offered_packets/bytes, marked, trimmed, trimmed_bytes_cut, dropped,
    dropped_bytes, mrc_data_packets, errors, and the virtual queue (vq_bytes, vq_peak_bytes)."""
    with _port_maps(intf, netns_pid) as (_cfg, state_fd, _prog):
        return parse_state(map_lookup(state_fd, STATE_STRUCT.size))


def detach(intf: str, netns_pid: int | None = None) -> bool:
    """Remove our program from intf (and clsact if nothing else uses it); False if absent."""
    try:
        prog_id(intf, netns_pid)
    except TrimmingError:
        return False
    run(["tc", "filter", "del", "dev", intf, "egress", "pref", str(FILTER_PREF)], netns_pid)
    left = (run(["tc", "filter", "show", "dev", intf, "egress"], netns_pid)
            + run(["tc", "filter", "show", "dev", intf, "ingress"], netns_pid))
    if not left.strip():
        run(["tc", "qdisc", "del", "dev", intf, "clsact"], netns_pid)
    return True


# ---------------------------------------------------------------- fabric options (pure)


@dataclass(frozen=True)
class TrimmingOptions:
    """What a fabric run does at its switch egress ports: ECN marking from the virtual queue
    (`mark`) and trimming of MRC data above the trim threshold (`trim`). Either on means the
    program is attached everywhere (counters are always there) and the ports get the HTB setup
    where trimmed headers overtake full packets."""

    mark: bool = True
    trim: bool = True

    @property
    def active(self) -> bool:
        return self.mark or self.trim


def trimming_options(value) -> TrimmingOptions | None:
    """Normalise Fabric(trimming=...): None/False -> None (off, today's fabric); True -> mark and
    trim; {"mark": bool, "trim": bool} or a TrimmingOptions as given. Anything else: ValueError
    naming what was wrong."""
    if value is None or value is False:
        return None
    if value is True:
        return TrimmingOptions()
    if isinstance(value, TrimmingOptions):
        opts = value
    elif isinstance(value, dict):
        unknown = set(value) - {"mark", "trim"}
        if unknown:
            raise ValueError(f"trimming: unknown key(s) {sorted(unknown)}; known: mark, trim")
        for key, item in value.items():
            if not isinstance(item, bool):
                raise ValueError(f"trimming: {key} must be true or false, got {item!r}")
        opts = TrimmingOptions(**value)
    else:
        raise ValueError(f"trimming must be None, a bool, {{'mark': bool, 'trim': bool}} or "
                         f"TrimmingOptions, got {value!r}")
    return opts if opts.active else None


TOTAL_FIELDS = ("offered_packets", "marked", "trimmed", "dropped", "mrc_data_packets", "errors")


def counter_totals(per_port: dict, last_hops: set[str] | frozenset = frozenset()) -> dict:
    """Sum of the per-port counters ({intf: counters}), plus the same split into last-hop ports
    (T0 ports facing hosts) and fabric ports, and the port with the most trims."""
    def total(ports):
        return {f: sum(int(per_port[p].get(f, 0)) for p in ports) for f in TOTAL_FIELDS}
    out = total(per_port)
    out["ports"] = len(per_port)
    out["last_hop"] = total([p for p in per_port if p in last_hops])
    out["fabric"] = total([p for p in per_port if p not in last_hops])
    out["vq_peak_bytes"] = max((int(c.get("vq_peak_bytes", 0)) for c in per_port.values()),
                               default=0)
    busiest = max(per_port, key=lambda p: int(per_port[p].get("trimmed", 0)), default=None)
    out["most_trimmed_port"] = busiest if busiest and per_port[busiest].get("trimmed") else None
    return out


def last_hop_ports(topo) -> set[str]:
    return {intf for intf, _mbit, last in fabric_ports(topo) if last}


# ---------------------------------------------------------------- whole fabric


def fabric_ports(topo) -> list[tuple[str, float, bool]]:
    """(switch egress interface, link Mbit/s, is last hop) for every switch port of a Topology.

    A last hop is a T0 port facing a host (MRC: never ECN-mark there)."""
    hosts = {h.name for h in topo.hosts}
    ports = []
    for link in topo.links:
        for node, intf, peer in ((link.a, link.a_intf, link.b), (link.b, link.b_intf, link.a)):
            if node in topo.switches:
                ports.append((intf, link.mbit, peer in hosts))
    return ports


def fabric_port_configs(topo, enable_mark: bool, enable_trim: bool,
                        config_for=None, time_scale: float = 1.0) -> dict:
    """{switch egress interface: PortConfig} for every switch port of a Topology (pure).

    config_for(intf, mbit, last_hop, mark, trim) -> PortConfig overrides default_port_config,
    whose frame floors follow the fabric's MTU (topo.spec.mtu) and whose drain times are the
    emulated world's under a time scale (model/switchport.py)."""
    mtu = topo.spec.mtu
    make = config_for or (lambda intf, mbit, last_hop, mark, trim:
                          default_port_config(mbit, last_hop, mark, trim, mtu=mtu,
                                              time_scale=time_scale,
                                              bdp_bytes=port_bdp_bytes(topo.spec, mbit)))
    return {intf: make(intf, mbit, last_hop, bool(enable_mark), bool(enable_trim))
            for intf, mbit, last_hop in fabric_ports(topo)}


def attach_fabric(topo, enable_mark: bool, enable_trim: bool, config_for=None,
                  time_scale: float = 1.0) -> dict:
    """Attach and configure every switch egress port (root namespace) with
    fabric_port_configs; returns {intf: PortConfig}."""
    applied = fabric_port_configs(topo, enable_mark, enable_trim, config_for, time_scale)
    for intf, cfg in applied.items():
        attach(intf)
        configure(intf, cfg)
    return applied


def detach_fabric(topo) -> None:
    for intf, _mbit, _last in fabric_ports(topo):
        detach(intf)


def fabric_counters(topo) -> dict:
    """{switch egress interface: counters} for every port that has the program."""
    out = {}
    for intf, _mbit, _last in fabric_ports(topo):
        try:
            out[intf] = counters(intf)
        except TrimmingError:
            continue
    return out


# ---------------------------------------------------------------- scratch ports (tests, bench)


_libc = ctypes.CDLL(None, use_errno=True)


def _set_netns(name: str) -> None:
    """Move the calling thread into network namespace `name` (only that thread)."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, 0x40000000) != 0:   # CLONE_NEWNET
            err = ctypes.get_errno()
            raise TrimmingError(f"setns({name}) failed: {os.strerror(err)}")
    finally:
        os.close(fd)


def packet_socket_in_netns(netns: str, intf: str, rcvbuf: int = 16 << 20):
    """AF_PACKET socket bound to intf inside netns (a socket keeps the namespace it was made in,
    so a short-lived thread enters the namespace and the caller stays where it is)."""
    import socket
    result: dict = {}

    def make():
        try:
            _set_netns(netns)
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            sock.setsockopt(socket.SOL_SOCKET, 33, rcvbuf)   # SO_RCVBUFFORCE
            sock.bind((intf, 0))
            result["sock"] = sock
        except Exception as exc:  # handed to the caller below
            result["error"] = exc

    thread = threading.Thread(target=make)
    thread.start()
    thread.join()
    if "error" in result:
        raise TrimmingError(f"packet socket on {intf} in {netns}: {result['error']}")
    return result["sock"]


@contextmanager
def scratch_veth(prefix: str = "mtr"):
    """A veth pair for tests and the bench: <prefix><n>a in the root namespace (IPv6 off, so the
    kernel sends nothing of its own through it) and <prefix><n>b in netns <prefix>-<n>.
    Yields (root_intf, peer_intf, netns); removes both on exit."""
    n = f"{os.getpid() % 10000}{threading.get_ident() % 97}"[:8]
    netns, a, b = f"{prefix}-{n}", f"{prefix}{n}a", f"{prefix}{n}b"
    run(["ip", "netns", "add", netns])
    try:
        run(["ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", netns])
        Path(f"/proc/sys/net/ipv6/conf/{a}/disable_ipv6").write_text("1")
        run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w",
             f"net.ipv6.conf.{b}.disable_ipv6=1"])
        run(["ip", "link", "set", a, "up"])
        run(["ip", "-n", netns, "link", "set", b, "up"])
        yield a, b, netns
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
